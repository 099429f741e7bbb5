#!/usr/bin/env bash
# Issue 33's 16-core table in one call of a lent machine (16 cores, no network): ceql's workers
# 1/2/4/8/16 beside DuckDB's threads 1/2/4/8/16 (benchmarks/workers.py --counts --duckdb), and
# the calling thread's share at 16 workers for every workload; the tables go to $OUT.
#
# Here, once (downloads the DuckDB wheel for the device's Python 3.12 into .whl/, which git
# ignores; 24 MB of the 64 MiB a call may carry):
#     bash benchmarks/device_scaling.sh fetch
# There, as one command, carrying .whl (about 4-5 minutes at the default 10M events):
#     bash benchmarks/device_scaling.sh            # run(command=..., carry=[".whl"], timeout_s=600)
# Try it here on a small input (no install; the .venv's packages):
#     PYTHON=.venv/bin/python EVENTS=200000 COUNTS=1,2 WORKERS=2 OUT=/tmp/scaling bash benchmarks/device_scaling.sh
#
# The device's image has numpy, pandas, pyarrow and numba (python3 there is 3.12); the script
# installs what .whl holds (DuckDB; other wheels too, e.g. numba 0.68.1 with llvmlite 0.50.0
# if the image's numba does not import ceql's kernel: 61 MB, so then without DuckDB) into
# /tmp/site and runs ceql from src/ without installing it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "fetch" ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>"$(git rev-parse --git-path info/exclude)"
    "${PYTHON:-.venv/bin/python}" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "duckdb==2.0.0" "${@:2}"
    ls -la .whl
    exit 0
fi

PYTHON="${PYTHON:-python3}"
OUT="${OUT:?OUT: the folder the tables go to}"
EVENTS="${EVENTS:-10000000}"
COUNTS="${COUNTS:-1,2,4,8,16}"
WORKERS="${WORKERS:-16}"
REPEAT="${REPEAT:-2}"
mkdir -p "$OUT"

if compgen -G ".whl/*.whl" >/dev/null; then  # the carried wheels, beside the image's packages
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

{
    echo "# $(date -u +%FT%TZ), $(nproc) cores, $(uname -m)"
    "$PYTHON" - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "pyarrow", "pandas", "numba", "llvmlite", "duckdb"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:  # reported, not fatal: DuckDB's column is then left out
        print(name, "missing:", error)
EOF
} | tee "$OUT/versions.txt"

duck=()
if "$PYTHON" -c "import duckdb" 2>/dev/null; then
    duck=(--duckdb)
fi
# The kernel compiles and runs here (a wrong numba fails now, not after minutes).
"$PYTHON" - <<'EOF'
import ceql
schema = ceql.declare("CREATE STREAM S { EVENT A { k:int, t:primary_time }, EVENT B { k:int, t:primary_time } }")
query = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]", schema)
rows = [{"event_type": "A", "k": 1, "t": 0}, {"event_type": "B", "k": 1, "t": 1}]
assert len(list(query.run(rows, engine="compiled"))) == 1
print("ceql", ceql.__version__ if hasattr(ceql, "__version__") else "(src)", "kernel ok")
EOF

set -o pipefail
"$PYTHON" -m benchmarks.workers --events "$EVENTS" --repeat "$REPEAT" --workers "$WORKERS" \
    --only keys,shards,strings,measures,cross,absence --counts "$COUNTS" "${duck[@]}" 2>&1 | tee "$OUT/scaling.txt"
