#!/usr/bin/env bash
# Unlock's DQN as Table 1 ran it, on Ray, at one commit: do the same commit and seeds score as the record did?
#   bash results/unlock-shift/ray-runs.sh COMMIT [SEEDS] [OUT]
# (defaults: seeds 0-2; OUT results/unlock-shift/ray-COMMIT). The commit is checked out in a temporary worktree
# and run with this checkout's Python environment, with the command Table 1's MiniGrid grid gave each run at
# 4475f25 (`results/table1-minigrid/study.json`: 500k env steps, 4 actors at 0.25 CPUs each, ε over 1M env
# steps as every run of that time). A grid at that commit, one run at a time. Each run's config.json,
# evals.csv and summary.json are copied to OUT/<run>/, the CPU model and the grid's table to OUT/RUN.md.
# Ray runs do not repeat for a seed (the actors and the learner interleave by timing), so what this shows is
# the spread of one commit's runs on one host, to set beside the record's.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=${1:?usage: ray-runs.sh COMMIT [SEEDS] [OUT]} SEEDS=${2:-0-2}
OUT=${3:-results/unlock-shift/ray-$C}
[ -e "$OUT" ] && { echo "ray-runs.sh: $OUT exists; give another OUT"; exit 2; }
WORK=$(mktemp -d)
cleanup() { [ -d "$WORK/src" ] && git worktree remove --force "$WORK/src"; true; }
trap cleanup EXIT
git worktree add -q --detach "$WORK/src" "$C"
(cd "$WORK/src" && PYTHONPATH="$WORK/src" python -m learner.main --env Unlock --algo dqn --seeds "$SEEDS" \
   --total-steps 500000 --actor-cpus 0.25 --progress false --out "$WORK/grid") > "$WORK/log" 2>&1 \
   || { echo "ray-runs.sh: the grid at $C failed:"; tail -5 "$WORK/log"; exit 1; }
mkdir -p "$OUT"
for run in "$WORK"/grid/*/; do
  name=$(basename "$run")
  mkdir "$OUT/$name"
  cp "$run/config.json" "$run/evals.csv" "$run/summary.json" "$OUT/$name/"
done
{
  echo "# Unlock's DQN on Ray at $C, seeds $SEEDS"
  echo
  echo "\`bash results/unlock-shift/ray-runs.sh $C $SEEDS\`, $(date -u +%Y-%m-%d), on $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "($(nproc) cores). The grid's table:"
  echo
  echo '```'
  grep -v '^outputs:\|^report:\|WARNING' "$WORK/log" | tail -8
  echo '```'
} > "$OUT/RUN.md"
# the run directory's absolute paths name this machine's temporary directory: keep the records free of them
sed -i "s#$WORK/grid#runs/unlock-$C#g" "$OUT"/*/config.json "$OUT"/*/summary.json "$OUT/RUN.md"
echo "ray-runs.sh: wrote $OUT"
cat "$OUT/RUN.md"
