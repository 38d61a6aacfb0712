#!/usr/bin/env bash
# Unlock's DQN at two commits, serial (one process: deterministic for a seed), the same flags: do they train the
# same? Each commit is checked out in a temporary worktree and run with this checkout's Python environment.
#   bash results/unlock-shift/compare.sh [STEPS] [SEED] [COMMIT_A] [COMMIT_B]
# (defaults: 100000 env steps, seed 0, 4475f25 and 6ec5992, the commits of Table 1's two Unlock DQN columns).
# Prints each commit's evals.csv and whether they are identical byte for byte; the run directories stay in
# the printed temporary directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${1:-100000} SEED=${2:-0} A=${3:-4475f25} B=${4:-6ec5992}
WORK=$(mktemp -d)
echo "compare.sh: $WORK"
for c in "$A" "$B"; do
  git worktree add -q --detach "$WORK/src-$c" "$c"
  (cd "$WORK/src-$c" && PYTHONPATH="$WORK/src-$c" python -m learner.main --env Unlock --algo dqn --runtime serial \
     --seed "$SEED" --total-steps "$STEPS" --eval-every $((STEPS / 5)) --wandb disabled --out "$WORK/run-$c" \
     > "$WORK/log-$c" 2>&1) || { echo "compare.sh: the run at $c failed:"; tail -3 "$WORK/log-$c"; exit 1; }
  git worktree remove --force "$WORK/src-$c"
  echo "== $c"; cat "$WORK/run-$c/evals.csv"
done
if cmp -s "$WORK/run-$A/evals.csv" "$WORK/run-$B/evals.csv"; then
  echo "compare.sh: identical: $A and $B train Unlock's DQN seed $SEED the same over $STEPS serial env steps"
else
  echo "compare.sh: they differ: a commit between $A and $B changed the training"
fi
