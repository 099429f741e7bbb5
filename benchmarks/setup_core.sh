#!/usr/bin/env bash
# Create benchmarks/.venv-core with CORE++'s Python wheel (pycer, cp313 only) for the CORE++ columns.
# Needs a Python 3.13 interpreter: $CORE_PYTHON, else python3.13 on the PATH, else pyenv's 3.13.0.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=""
for candidate in ${CORE_PYTHON:-} python3.13 "$HOME/.pyenv/versions/3.13.0/bin/python"; do
  if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
    PYTHON="$candidate"
    break
  fi
done
if [ -z "$PYTHON" ]; then
  echo "setup_core.sh: no Python 3.13 found (set CORE_PYTHON)" >&2
  exit 1
fi
if [ ! -x .venv-core/bin/python ]; then
  "$PYTHON" -m venv .venv-core
fi
.venv-core/bin/python -m pip install --quiet --disable-pip-version-check "pycer==0.1.6"
.venv-core/bin/python -c "import pycer; print('pycer', 'ok')"
