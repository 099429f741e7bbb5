#!/usr/bin/env bash
# Create .venv (if needed) and install ceql into it, editable, with the Spark engine and the test
# tools (extras spark and dev), at the exact versions of constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "ceql needs Python 3.10 or newer; set PYTHON=/path/to/python3.x and run this again." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.ceql-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[spark,dev]"
  touch "$stamp"
fi
# Compile the kernel's numba functions once (seconds), so that the first query does not.
.venv/bin/python -c "from ceql.runtime.kernel import warm; warm.ready() or warm.main()"
