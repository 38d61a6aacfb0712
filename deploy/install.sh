#!/usr/bin/env bash
# Installs the project into the active Python environment (a venv is recommended).
#   bash deploy/install.sh          # the runtime
#   bash deploy/install.sh --test   # plus pytest and ruff
set -euo pipefail
cd "$(dirname "$0")/.."
pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  pip install -q -e ".[test]"
else
  pip install -q -e .
fi
# Last and without dependencies: MinAtar's metadata asks for matplotlib, seaborn, pandas and scipy,
# which its environments never import (~330 MB).
pip install -q --no-deps "minatar==1.0.15"
