#!/usr/bin/env bash
# The benchmarks a GPU machine answers, in one sitting: packed seeds (learner alone and end to end), every
# method's cost per env step on CUDA, and a grid against the machine's limit. Each bench has a time limit of
# its own, so one that runs long still leaves the others their results.
#   bash bench/gpu.sh [OUT_DIR]     # JSON files and a log in OUT_DIR (default bench/results)
# Where the machine lacks a package the project needs, put its wheels in .whl/ first (as pip download
# gives them for that machine's Python, or a wheel's files as NAME-site.tar.xz); they go into a scratch directory,
# never into the system.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "bench/gpu.sh: the wheels in .whl/ did not install" >&2; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
for packed in .whl/*-site.tar.xz; do  # a wheel's files as a tarball (xz packs a large wheel's binaries smaller)
  [ -f "$packed" ] || continue
  mkdir -p /tmp/site && tar -xJf "$packed" -C /tmp/site \
    || { echo "bench/gpu.sh: $packed did not unpack" >&2; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
done
python3 - <<'EOF' || exit 1
import torch, ray, gymnasium, minatar  # noqa: F401  (fail here, at once, not inside a bench)
print(f"torch {torch.__version__}, CUDA {torch.cuda.is_available()}, ray {ray.__version__}, "
      f"gymnasium {gymnasium.__version__}")
EOF
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
bench() {  # bench SECONDS NAME ARGS...: one bench under its own limit, its output in the log
  local limit=$1 name=$2
  shift 2
  echo "== $name: $* (limit ${limit}s)"
  timeout --signal=INT --kill-after=20 "$limit" python3 "$@" 2>&1 | tee "$out/$name.log"
  echo "== $name: exit ${PIPESTATUS[0]}"
}
bench 150 packed bench/packed.py --ks 1,8 --steps 10000 --learning-starts 2000 --learner-seconds 2 \
  --out "$out/packed-16cpu-h200.json"
bench 110 cost bench/cost.py --device cuda --repeats 2 --steps 20000 --out "$out/cost-16cpu-h200.json"
bench 320 grid bench/grid.py --runs 8 --steps 10000 --modes ray,default --out "$out/grid-16cpu-h200.json"
