#!/usr/bin/env bash
# A Spark standalone cluster on this machine, from the installed pyspark: one master and two
# workers (one core, 1 GiB each) on 127.0.0.1.
#   bash scripts/cluster.sh start    start it; prints the master URL (spark://127.0.0.1:7077)
#   bash scripts/cluster.sh stop     stop what `start` started (by the process ids it recorded)
#   bash scripts/cluster.sh status   print the master URL if it runs
# Then e.g. `bash scripts/main.sh --master spark://127.0.0.1:7077`, or
# `ceql.spark.session("spark://127.0.0.1:7077")`. Logs and process ids are in .cluster/
# (CEQL_CLUSTER_DIR); CEQL_CLUSTER_PORT (7077) and CEQL_CLUSTER_WORKERS (2) change the set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${CEQL_CLUSTER_DIR:-$PWD/.cluster}
PORT=${CEQL_CLUSTER_PORT:-7077}
WORKERS=${CEQL_CLUSTER_WORKERS:-2}
URL="spark://127.0.0.1:$PORT"
PYTHON=${CEQL_PYTHON:-$PWD/.venv/bin/python}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() {  # wait_for FILE PATTERN COUNT: until the log has COUNT lines matching PATTERN
  for _ in $(seq 1 240); do
    if [ "$(grep -c "$2" "$1" 2>/dev/null || true)" -ge "$3" ]; then return 0; fi
    sleep 0.5
  done
  echo "cluster.sh: timed out waiting for '$2' in $1:" >&2
  tail -n 20 "$1" >&2
  return 1
}

start() {
  if running "$RUN/master.pid"; then echo "$URL"; return 0; fi
  bash scripts/ensure_java.sh
  mkdir -p "$RUN"
  SPARK_HOME=$("$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
  export SPARK_HOME SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON="$PYTHON"
  # spark-class execs java, so $! is the JVM's process id.
  nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$PORT" --webui-port $((PORT + 1000)) >"$RUN/master.log" 2>&1 &
  echo $! >"$RUN/master.pid"
  wait_for "$RUN/master.log" "I have been elected leader" 1
  for i in $(seq 1 "$WORKERS"); do
    mkdir -p "$RUN/work$i"
    nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "$URL" \
      --host 127.0.0.1 --cores 1 --memory 1g --webui-port $((PORT + 1000 + i)) \
      --work-dir "$RUN/work$i" >"$RUN/worker$i.log" 2>&1 &
    echo $! >"$RUN/worker$i.pid"
  done
  wait_for "$RUN/master.log" "Registering worker" "$WORKERS"
  echo "$URL"
}

stop() {
  for pidfile in "$RUN"/worker*.pid "$RUN"/master.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running "$RUN/master.pid"; then echo "$URL"; else echo "not running" >&2; exit 1; fi ;;
  *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
