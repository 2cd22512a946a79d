#!/usr/bin/env bash
# Set up a virtual environment (core + the report extra) and run the end-to-end demo on the bundled set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[report]"
snapbench demo --out demo_out "$@"
