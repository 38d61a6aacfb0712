#!/usr/bin/env bash
# The β-epsilon study's runs (PLAN.md), one grid per run, one after the other; then the protocol's DQN runs (not
# part of the decision). Run it from a clean clone at the study's commit, in its virtual environment:
#   bash results/beta-epsilon/run.sh
# then copy each record it makes into the main checkout. RECORDS (default: this checkout's results/) is where each
# finished run is recorded by learner.report (a relative path: report.md repeats it, so an absolute one would put
# a machine path in the record)
# (<RECORDS>/beta-epsilon/<task>-<eps|none>-s<seed>/, <RECORDS>/table1-protocol/<task>-dqn-s<seed>/); a run that
# has its record there is skipped, so the script continues wherever an earlier sitting, or another machine, left
# off. A run whose grid directory exists under runs/ is continued with --resume (from its last checkpoint).
# Ctrl-C (or SIGTERM) stops the run in hand; run the script again to continue. STAGE=2 adds seeds 3-4 (only if
# the rule asks for them on seeds 0-2).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "run.sh: the checkout has uncommitted changes; the study runs from a clean clone at its commit" >&2
  exit 2
fi
RECORDS=${RECORDS:-results}
FLAGS=(--runtime ray --actors 4 --learner-cpus 1 --actor-cpus 0.25 --arm-exchange episode --progress false
       --wandb disabled)
lower() { echo "$1" | tr 'A-Z' 'a-z'; }

one() {  # one GRID_NAME RECORD_DIR ARGS...: run (or continue) a one-run grid, then record its run
  local name=$1 record=$2
  shift 2
  if [ -f "$record/runs.csv" ]; then return 0; fi
  if [ -f "runs/$name/grid.json" ]; then
    nice -n 19 python -m learner.main --resume "runs/$name" --progress false
  else
    nice -n 19 python -m learner.main "$@" "${FLAGS[@]}" --out "runs/$name"
  fi
  local run
  run=$(find "runs/$name" -mindepth 2 -maxdepth 2 -name summary.json -printf '%h\n' | head -1)
  python -m learner.report "$run" --out "$record"
  echo "run.sh: recorded $record"
}

MINIGRID=(DoorKey Unlock SimpleCrossing-Easy SimpleCrossing-Hard LavaCrossing-Easy LavaCrossing-Hard)
MINATAR=(Asterix Breakout Freeway Seaquest SpaceInvaders)
study() {  # study ARM SEED...: β-DQN with (eps) or without (none) ε on every environment
  local arm=$1 seed task game
  shift
  local on=false; [ "$arm" = eps ] && on=true
  for seed in "$@"; do for task in "${MINIGRID[@]}"; do
    one "be-$(lower "$task")-$arm-s$seed" "$RECORDS/beta-epsilon/$(lower "$task")-$arm-s$seed" --env "$task" \
      --algo beta_dqn --beta-epsilon $on --bandit-returns raw --seeds "$seed" --total-steps 500000
  done; done
  for seed in "$@"; do for game in "${MINATAR[@]}"; do
    one "be-$(lower "$game")-$arm-s$seed" "$RECORDS/beta-epsilon/$(lower "$game")-$arm-s$seed" \
      --env "MinAtar/$game" --algo beta_dqn --beta-epsilon $on --bandit-returns raw --seeds "$seed" \
      --total-steps 1000000
  done; done
}

# stage 1: the ε arm, seeds 0-2 (the none arm is reused: PLAN.md)
study eps 0 1 2
if [ "${STAGE:-1}" = 2 ]; then
  study eps 3 4
  # the none arm's seeds 3-4 that the bandit-returns study did not run
  for task in SimpleCrossing-Easy LavaCrossing-Hard; do for seed in 3 4; do
    one "be-$(lower "$task")-none-s$seed" "$RECORDS/beta-epsilon/$(lower "$task")-none-s$seed" --env "$task" \
      --algo beta_dqn --beta-epsilon false --bandit-returns raw --seeds "$seed" --total-steps 500000
  done; done
fi

# after the study, not deciding: Table 1's DQN under the protocol (ε over 20% of the run), seeds 0-4
for seed in 0 1 2 3 4; do
  for task in "${MINIGRID[@]}"; do
    one "t1p-dqn-$(lower "$task")-s$seed" "$RECORDS/table1-protocol/$(lower "$task")-dqn-s$seed" --env "$task" \
      --algo dqn --seeds "$seed" --total-steps 500000
  done
  for game in "${MINATAR[@]}"; do
    one "t1p-dqn-$(lower "$game")-s$seed" "$RECORDS/table1-protocol/$(lower "$game")-dqn-s$seed" \
      --env "MinAtar/$game" --algo dqn --seeds "$seed" --total-steps 1000000
  done
done
# CliffWalk's DQN under the protocol, beside the CliffWalk study's β-DQN (its flags: serial, 1 actor x 1 env)
if [ ! -f "$RECORDS/cliffwalk-protocol/runs.csv" ]; then
  if [ -f runs/cliffwalk-protocol/grid.json ]; then
    nice -n 19 python -m learner.main --resume runs/cliffwalk-protocol --progress false
  else
    nice -n 19 python -m learner.main --env CliffWalk --algo dqn --seeds 0-9 --runtime serial --actors 1 \
      --envs-per-actor 1 --total-steps 100000 --eval-every 10000 --progress false --wandb disabled \
      --out runs/cliffwalk-protocol
  fi
  python -m learner.report runs/cliffwalk-protocol --out "$RECORDS/cliffwalk-protocol"
fi
