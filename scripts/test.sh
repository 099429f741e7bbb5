#!/usr/bin/env bash
# Install what is needed (scripts/setup.sh), then run the linter and the tests.
#   bash scripts/test.sh            ruff, then every test except the slow ones (what CI runs;
#                                   generated cases from fixed seeds, the larger property tests
#                                   at half size)
#   bash scripts/test.sh --quick    ruff, then the quick subset (under a minute): no Spark, no
#                                   property tests, no benchmark runs, nothing slow
#   bash scripts/test.sh --all      ruff, then everything, slow tests included (install tests
#                                   per Python, the main job, full-size property tests on new
#                                   random cases each run)
# Further arguments go to pytest, e.g. `bash scripts/test.sh --quick -k golden`. The tests run in
# parallel, one pytest-xdist worker per core (`-n 0` among the arguments: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
marks=()
# Generated (Hypothesis) cases from fixed seeds, except with --all (see tests/conftest.py).
export CEQL_HYPOTHESIS_PROFILE="${CEQL_HYPOTHESIS_PROFILE:-ci}"
case "${1:-}" in
  --quick) marks=(-m "not slow and not spark and not property and not bench"); shift ;;
  --all) marks=(-m ""); export CEQL_HYPOTHESIS_PROFILE=default; shift ;;
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
bash scripts/setup.sh
.venv/bin/ruff check src tests
# Every Spark test runs on one worker (one xdist group, tests/conftest.py): one Spark session.
.venv/bin/python -m pytest -q -n auto --dist loadgroup ${marks[@]+"${marks[@]}"} "$@"
