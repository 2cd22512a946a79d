#!/usr/bin/env bash
# Set up a virtual environment with the test extras, lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first and pinned: the CPU wheel; an unpinned torch (pulled by sentence-transformers) is a multi-GB CUDA build
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test]"
ruff check .
lint-imports
python -m pytest -q "$@"
