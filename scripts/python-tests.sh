#!/usr/bin/env bash
# The Python half of the test suite: installs the package with its test extras
# into a virtual environment (.venv, or $DWSR_VENV) with `pip install .`, then
# runs pytest and executes every notebook. Needs the Release build of the tool
# (build/apps/dwsr/dwsr) beside it: the tests compare with it bit for bit.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${DWSR_VENV:-.venv}
python=${PYTHON:-python3}

if [[ ! -x $venv/bin/python ]]; then
  echo "dwsr: creating the virtual environment $venv with $("$python" --version 2>&1)" >&2
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# build-python keeps the extension's build between runs, so a second install
# compiles only what changed.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --config-settings=build-dir=build-python ".[test]"

cli=$PWD/build/apps/dwsr/dwsr
[[ -x $cli ]] || { echo "dwsr: $cli is missing; build the Release tree first (scripts/test.sh does)" >&2; exit 1; }
DWSR_CLI=$cli DWSR_REQUIRE_CLI=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
DWSR_CLI=$cli "$venv/bin/python" scripts/run-notebooks.py --output build/notebooks
