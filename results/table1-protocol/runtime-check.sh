#!/usr/bin/env bash
# The runtime check beside Table 1 under the protocol (results/beta-epsilon/PLAN.md, notes of 2026-12-05; not
# deciding): DQN on Ray against DQN serial, seeds 0-4, on SimpleCrossing-Easy and MinAtar/Breakout, from the
# committed records. Run it from the repository's root or anywhere:
#   bash results/table1-protocol/runtime-check.sh
# It stops (exit 1) while any of the 20 records is missing, and then writes results/table1-protocol-runtime/,
# whose "Each environment against DQN" table gives the Ray column's Welch p against the serial one (the plan's
# test: p below 0.05 in either environment calls a runtime effect).
# Its cost row compares the runs' own wall clocks, serial runs made two at a time against Ray runs made alone: it
# is not a measurement of cost (bench/cost.py is).
set -euo pipefail
cd "$(dirname "$0")/../.."
shopt -s nullglob
records=()
for task in simplecrossing-easy breakout; do
  for seed in 0 1 2 3 4; do
    for dir in "results/table1-protocol/$task-dqn-s$seed" "results/table1-protocol-ray/$task-dqn-s$seed"; do
      if [ ! -f "$dir/runs.csv" ]; then
        echo "runtime-check.sh: $dir is not recorded yet; the check waits for all 20 runs" >&2
        exit 1
      fi
      records+=("$dir")
    done
  done
done
# two columns, DQN [runtime=ray] and DQN [runtime=serial]: the report tests one against the other (Welch's p is the
# same whichever it takes as its baseline)
python -m learner.report "${records[@]}" --column-by runtime --seeds 0-4 --out results/table1-protocol-runtime
