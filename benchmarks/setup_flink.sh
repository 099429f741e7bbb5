#!/usr/bin/env bash
# Create benchmarks/.venv-flink with PyFlink for the Flink SQL MATCH_RECOGNIZE table.
# A separate environment: apache-flink 2.3.0 requires pandas<2.3 and pyarrow<21, older than ceql's
# pins, and its own py4j. Flink needs a Java 17 runtime (JAVA_HOME or java on the PATH).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${FLINK_PYTHON:-python3}"
if [ ! -x .venv-flink/bin/python ]; then
  "$PYTHON" -m venv .venv-flink
fi
.venv-flink/bin/python -m pip install --quiet --disable-pip-version-check "apache-flink==2.3.0"
.venv-flink/bin/python -c "import pyflink; print('pyflink', 'ok')"
