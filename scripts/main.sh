#!/usr/bin/env bash
# The main job: the Spark pipeline over the bundled sample stock data, in four files
# (examples/stocks/parts/, read in the order of their names: examples/stocks/events.csv again),
# in local mode, or on a cluster with --master spark://127.0.0.1:7077 after
# `bash scripts/cluster.sh start`.
# Installs what it needs (Python packages into .venv, Java when missing), then runs two queries
# in one pass and prints a short summary; results go to out/matches (Parquet), replaced on each
# run (the job's own output folder: --overwrite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/ensure_java.sh
mkdir -p out
exec .venv/bin/ceql run --engine spark \
  --declaration examples/stocks/declaration.core \
  --query examples/stocks/sell_then_buys.ceql \
  --query examples/stocks/same_volume.ceql \
  --input 'examples/stocks/parts/*.csv' \
  --output out/matches --format parquet --overwrite "$@"
