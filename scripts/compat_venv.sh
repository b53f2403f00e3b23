#!/usr/bin/env bash
# Create (once, cached) the Python 3.12 virtualenv that holds the published reflexio-client 0.2.16,
# which the compatibility test (tests/compat) drives against our server. Prints the venv's python.
# Exits 3 when this machine has no Python 3.12 (pyenv provides one on ours).
# Usage: scripts/compat_venv.sh    (COMPAT_VENV=dir, COMPAT_PYTHON=/path/to/python3.12 to override)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${COMPAT_VENV:-$PWD/.tmp/compat-venv}
PIN="reflexio-client==0.2.16"
STAMP="$VENV/.installed-$PIN"

is_312() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }

find_python() {
    local candidate
    for candidate in "${COMPAT_PYTHON:-}" python3.12; do
        if [ -n "$candidate" ] && is_312 "$candidate"; then echo "$candidate"; return 0; fi
    done
    if command -v pyenv >/dev/null 2>&1; then
        for candidate in "$(pyenv root)"/versions/3.12*/bin/python3.12; do
            if [ -x "$candidate" ] && is_312 "$candidate"; then echo "$candidate"; return 0; fi
        done
    fi
    return 1
}

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9  # parallel test workers must not build the same venv twice
if [ ! -f "$STAMP" ]; then
    if ! PYTHON=$(find_python); then
        echo "no Python 3.12 found (tried \$COMPAT_PYTHON, python3.12, pyenv versions)" >&2
        exit 3
    fi
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$PIN" >&2
    touch "$STAMP"
fi
echo "$VENV/bin/python"
