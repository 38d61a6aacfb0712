#!/usr/bin/env bash
# The benchmarks a GPU machine answers, in one sitting: packed seeds (learner alone and end to end), every
# method's cost per env step on CUDA, and a grid against the machine's limit. Each bench has a time limit of
# its own (520 s in all, under a 10-minute command), so one that runs long still leaves the others their results.
#   bash bench/gpu.sh [OUT_DIR]     # JSON files and a log per bench in OUT_DIR (default: a new temporary folder)
# Files are named <bench>-<cores>cpu-<gpu>-<date>.json; one that exists already stops the script before any bench
# runs (nothing is overwritten). Exits 1 when a bench failed or ran past its limit.
# Where the machine lacks a package the project needs, put its wheels in .whl/ first (as pip download gives them for
# that machine's Python, or a wheel's files as NAME-site.tar.xz); they go into a new temporary folder on PYTHONPATH,
# never into the system.
set -uo pipefail
out=${1:-$(mktemp -d)}
out=$(mkdir -p "$out" 2>/dev/null && cd "$out" && pwd) || { echo "bench/gpu.sh: cannot write into ${out@Q}" >&2; exit 2; }
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
site=$(mktemp -d)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl \
    || { echo "bench/gpu.sh: the wheels in .whl/ did not install" >&2; exit 1; }
fi
for packed in .whl/*-site.tar.xz; do  # a wheel's files as a tarball (xz packs a large wheel's binaries smaller)
  [ -f "$packed" ] || continue
  tar -xJf "$packed" -C "$site" || { echo "bench/gpu.sh: $packed did not unpack" >&2; exit 1; }
done
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
python3 - <<'EOF' || exit 1
import torch, ray, gymnasium, minatar  # noqa: F401  (fail here, at once, not inside a bench)
print(f"torch {torch.__version__}, CUDA {torch.cuda.is_available()}, ray {ray.__version__}, "
      f"gymnasium {gymnasium.__version__}")
EOF
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | awk '{print tolower($NF)}')
label="$(nproc)cpu-${gpu:-nogpu}-$(date +%F)"
for name in packed cost grid; do
  if [ -e "$out/$name-$label.json" ]; then
    echo "bench/gpu.sh: $out/$name-$label.json exists; give another OUT_DIR" >&2
    exit 2
  fi
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
failed=0
bench() {  # bench SECONDS NAME ARGS...: one bench under its own limit, its output in the log
  local limit=$1 name=$2 status
  shift 2
  echo "== $name: $* (limit ${limit}s)"
  # SIGTERM at the limit (the bench shuts its Ray cluster down as a run does), SIGKILL 10 s later
  timeout --kill-after=10 "$limit" python3 "$@" --out "$out/$name-$label.json" 2>&1 | tee "$out/$name.log"
  status=${PIPESTATUS[0]}
  echo "== $name: exit $status"
  [ "$status" = 0 ] || failed=1
}
bench 130 packed bench/packed.py --ks 1,8 --steps 10000 --learning-starts 2000 --learner-seconds 2
bench 90 cost bench/cost.py --device cuda --repeats 2 --steps 20000
bench 300 grid bench/grid.py --runs 8 --steps 10000 --modes ray,default
echo "bench/gpu.sh: results in $out"
exit $failed
