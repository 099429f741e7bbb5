#!/usr/bin/env bash
# Install everything needed, then run the linter and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests
.venv/bin/python -m pytest -q "$@"
