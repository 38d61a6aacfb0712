#!/usr/bin/env bash
# Unlock's DQN at two commits, serial (one process: deterministic for a seed), the same flags (Table 1's, but
# --runtime serial): do they train the same? Each commit is checked out in a temporary worktree and run with
# this checkout's Python environment.
#   bash results/unlock-shift/compare.sh [STEPS] [SEED] [COMMIT_A] [COMMIT_B]
# (defaults: 100000 env steps, seed 0, 4475f25 and 6ec5992, the commits of Table 1's two Unlock DQN columns).
# Compares each run's evaluations (evals.csv) and its logged training losses (metrics.jsonl's "loss", every
# logging interval) byte for byte. Identical losses mean the serial training path computes the same at those
# commits for this seed; they say nothing of the Ray runtime's timing (Table 1's runs were Ray runs, whose
# actors and learner interleave differently from run to run). A difference names no cause by itself: it may
# be the training or what a run logs; bisect the commits between to find which.
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${1:-100000} SEED=${2:-0} A=${3:-4475f25} B=${4:-6ec5992}
WORK=$(mktemp -d)
cleanup() { for c in "$A" "$B"; do [ -d "$WORK/src-$c" ] && git worktree remove --force "$WORK/src-$c"; done; true; }
trap cleanup EXIT
echo "compare.sh: $WORK"
losses() {  # the "loss" of every metrics.jsonl line that has one, one per line
  python -c 'import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if "loss" in row: print(row["env_steps"], repr(row["loss"]))' "$1"
}
for c in "$A" "$B"; do
  git worktree add -q --detach "$WORK/src-$c" "$c"
  (cd "$WORK/src-$c" && PYTHONPATH="$WORK/src-$c" python -m learner.main --env Unlock --algo dqn --runtime serial \
     --seed "$SEED" --total-steps "$STEPS" --eval-every $((STEPS / 5)) --device cpu --wandb disabled \
     --out "$WORK/run-$c" > "$WORK/log-$c" 2>&1) || { echo "compare.sh: the run at $c failed:"; tail -3 "$WORK/log-$c"; exit 1; }
  losses "$WORK/run-$c/metrics.jsonl" > "$WORK/losses-$c"
  echo "== $c: evals.csv, and $(wc -l < "$WORK/losses-$c") logged losses (the last: $(tail -1 "$WORK/losses-$c"))"
  cat "$WORK/run-$c/evals.csv"
done
same=yes
cmp -s "$WORK/run-$A/evals.csv" "$WORK/run-$B/evals.csv" || { same=no; echo "compare.sh: the evaluations differ"; }
cmp -s "$WORK/losses-$A" "$WORK/losses-$B" || { same=no; echo "compare.sh: the logged losses differ"; }
if [ "$same" = yes ]; then
  echo "compare.sh: identical: $A and $B train Unlock's DQN seed $SEED the same over $STEPS serial env steps"
else
  echo "compare.sh: they differ between $A and $B (the training, or what a run logs: bisect the commits between)"
fi
