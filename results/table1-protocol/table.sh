#!/usr/bin/env bash
# Table 1 under the protocol, from the committed records: DQN with ε over 20% of the run, and β-DQN as the
# β-epsilon study's verdict decides (with or without --beta-epsilon), 11 environments, seeds 0-4, the cost that
# bench/cost.py measured. Run it from the repository's root or anywhere:
#   bash results/table1-protocol/table.sh          # the verdict (~4 min on 2 cores), then the report (~1 min)
# It stops (exit 1) while the 55 DQN records are missing (at once) or the verdict is, passes on any other failure
# of the verdict (exit 2: a record off the plan, or one that does not read), prints the verdict's whole output, and
# then writes results/table1-protocol-table/ (beside, not under, results/table1-protocol/, whose records the
# verdict reads).
set -euo pipefail
cd "$(dirname "$0")/../.."
shopt -s nullglob
dqn=(results/table1-protocol/*-dqn-s[0-4]/runs.csv)
if [ "${#dqn[@]}" -ne 55 ]; then
  echo "table.sh: ${#dqn[@]} of the protocol's 55 DQN runs are recorded (results/table1-protocol/); Table 1 waits for them" >&2
  exit 1
fi
rc=0
verdict=$(python results/beta-epsilon/verdict.py) || rc=$?
if [ "$rc" -eq 1 ]; then
  echo "$verdict"
  echo "table.sh: the β-epsilon study has no verdict yet (above); Table 1 waits for it" >&2
  exit 1
elif [ "$rc" -ne 0 ]; then
  echo "$verdict"
  echo "table.sh: results/beta-epsilon/verdict.py failed (exit $rc, above)" >&2
  exit "$rc"
fi
echo "$verdict"  # the decision; beside it, not deciding: domains, environments, the IQM over DQN, each arm's CPUs
case "$verdict" in
  *"verdict: "*"(--beta-epsilon true)"*) arm=true ;;
  *"verdict: "*"(--beta-epsilon false)"*) arm=false ;;
  *) echo "table.sh: the verdict's line names no --beta-epsilon value" >&2; exit 2 ;;
esac
# every record the verdict reads: the reused none runs, the study's runs, the protocol's DQN runs
list=$(python - <<'PY'
import sys
sys.argv = ["verdict.py"]
sys.path.insert(0, "results/beta-epsilon")
import verdict
for path in verdict.records():
    print(path.relative_to(verdict.ROOT))
PY
)
mapfile -t records <<<"$list"
# raw returns (the records also hold min–max runs), the protocol's ε schedule (they also hold DQN runs of the old
# 1M-step decay; β-DQN without ε reads no schedule), the verdict's arm; the columns name their runtime (DQN's runs
# are serial, β-DQN's Ray: results/beta-epsilon/PLAN.md, deviation of 2026-12-05)
python -m learner.report "${records[@]}" --only "bandit-returns=raw,eps-decay-fraction=0.2,beta-epsilon=$arm" \
  --column-by bandit-returns,runtime --seeds 0-4 --cost bench/results/cost-2cpu-cpu.json --out results/table1-protocol-table
