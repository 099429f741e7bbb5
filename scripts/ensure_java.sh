#!/usr/bin/env bash
# Make sure a Java runtime (17 or newer) is available for Spark; install one with apt if not.
set -euo pipefail
version() { java -version 2>&1 | awk -F'"' '/version/ {print $2}' | cut -d. -f1; }
if command -v java >/dev/null 2>&1 && [ "$(version)" -ge 17 ] 2>/dev/null; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "ceql: installing a Java runtime for Spark (openjdk-17-jre-headless)..." >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "ceql: Spark needs Java 17 or newer. Install it (e.g. 'apt-get install openjdk-17-jre-headless')" \
     "or set JAVA_HOME, then run this again." >&2
exit 1
