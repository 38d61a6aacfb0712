#!/usr/bin/env bash
# The β-epsilon study's runs (PLAN.md), one grid per run, one after the other; then the protocol's DQN runs (not
# part of the decision); then the runtime check beside them; then CliffWalk's DQN under the protocol. The study's
# runs come from a clean clone at the study's commit (7adcac3), Table 1's DQN grids from one at f7c4e83 (PLAN.md,
# deviation of 2026-12-05), each in its own virtual environment:
#   bash results/beta-epsilon/run.sh              # (STAGE=2: with seeds 3-4) the study, then everything after it
#   PART=dqn bash results/beta-epsilon/run.sh     # Table 1's two DQN grids only (new or resumed), then records
#   PART=record bash results/beta-epsilon/run.sh  # records the DQN grids' finished runs, nothing else
#   PART=check bash results/beta-epsilon/run.sh   # the runtime check only (DQN on Ray, one run at a time)
# then copy each record it makes into the main checkout. RECORDS (default: this checkout's results/) is where each
# finished run is recorded by learner.report (a relative path: report.md repeats it, so an absolute one would put
# a machine path in the record)
# (<RECORDS>/beta-epsilon/<task>-<eps|none>-s<seed>/, <RECORDS>/table1-protocol/<task>-dqn-s<seed>/); a run that
# has its record there is skipped, so the script continues wherever an earlier sitting, or another machine, left
# off. A run whose grid directory exists under runs/ is continued with --resume (from its last checkpoint); a DQN
# grid whose directory is gone (a lost machine) starts again whole, even where some of its runs are recorded (the
# records win; the repeats are not used). Ctrl-C (or SIGTERM) stops the run in hand; run the script again to
# continue. STAGE=2 adds seeds 3-4 (only if the rule asks for them on seeds 0-2).
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${PART:-all}" in all|dqn|record|check) ;; *)
  echo "run.sh: PART=${PART} is not a part; give all (the default), dqn, record or check" >&2; exit 2 ;; esac
case "${STAGE:-1}" in 1|2) ;; *)
  echo "run.sh: STAGE=${STAGE} is not a stage; give 1 (the default) or 2" >&2; exit 2 ;; esac
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

# PART=dqn, record and check skip the study (its runs belong to the clone at the study's commit)
if [ "${PART:-all}" = all ]; then
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
fi

# after the study, not deciding: Table 1's DQN under the protocol (ε over 20% of the run), seeds 0-4, as two grids
# of serial runs that the grid places one a core (PLAN.md, deviation of 2026-12-05; the study's runs stay one Ray
# run at a time, above). `PART=record` records the runs those grids have finished so far, and does nothing else.
record_dqn() {  # record each finished run of the DQN grids that has no record yet
  local summary run name task seed
  for summary in runs/t1p-dqn-minigrid/*/summary.json runs/t1p-dqn-minatar/*/summary.json; do
    [ -f "$summary" ] || continue
    run=$(dirname "$summary")
    name=$(basename "$run")  # e.g. DoorKey_dqn_s3, MinAtar-Breakout_dqn_s0
    task=$(lower "${name%_dqn_s*}"); task=${task#minatar-}; seed=${name##*_s}
    [ -f "$RECORDS/table1-protocol/$task-dqn-s$seed/runs.csv" ] && continue
    python -m learner.report "$run" --out "$RECORDS/table1-protocol/$task-dqn-s$seed"
    echo "run.sh: recorded $RECORDS/table1-protocol/$task-dqn-s$seed"
  done
}
dqn_grid() {  # dqn_grid NAME TOTAL_STEPS ENV...: the DQN grid of these environments, seeds 0-4 (new or resumed)
  local name=$1 steps=$2 envs task seed missing=0
  shift 2
  for task in "$@"; do for seed in 0 1 2 3 4; do
    [ -f "$RECORDS/table1-protocol/$(lower "${task#MinAtar/}")-dqn-s$seed/runs.csv" ] || missing=1
  done; done
  if [ "$missing" = 0 ]; then return 0; fi
  envs=$(IFS=,; echo "$*")
  local status=0
  if [ -f "runs/$name/grid.json" ]; then
    nice -n 19 python -m learner.main --resume "runs/$name" --progress false || status=$?
  else
    nice -n 19 python -m learner.main --env "$envs" --algo dqn --seeds 0-4 --total-steps "$steps" --runtime serial \
      --actors 4 --arm-exchange episode --progress false --wandb disabled --out "runs/$name" || status=$?
  fi
  record_dqn  # the runs that finished, also when the grid did not (its line above says why)
  return "$status"
}
if [ "${PART:-all}" = record ]; then record_dqn; exit 0; fi
if [ "${PART:-all}" != check ]; then
  dqn_grid t1p-dqn-minigrid 500000 "${MINIGRID[@]}"
  dqn_grid t1p-dqn-minatar 1000000 "${MINATAR[@]/#/MinAtar/}"
fi
[ "${PART:-all}" = dqn ] && exit 0
# the runtime check beside Table 1 (not deciding; PLAN.md, notes of 2026-12-05): DQN on Ray, one run at a time with
# the study's flags, on one environment of each domain whose serial DQN is not at its ceiling, seeds 0-4
for seed in 0 1 2 3 4; do for task in SimpleCrossing-Easy MinAtar/Breakout; do
  steps=500000; [ "${task#MinAtar/}" != "$task" ] && steps=1000000
  short=$(lower "${task#MinAtar/}")
  one "t1p-ray-dqn-$short-s$seed" "$RECORDS/table1-protocol-ray/$short-dqn-s$seed" --env "$task" --algo dqn \
    --seeds "$seed" --total-steps "$steps"
done; done
[ "${PART:-all}" = check ] && exit 0
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
