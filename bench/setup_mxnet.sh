#!/usr/bin/env bash
# Creates bench/.venv-mxnet with Apache MXNet 1.9.1, the comparison peer of the benchmarks.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv-mxnet/bin/python ]; then
    python3 -m venv .venv-mxnet
fi
.venv-mxnet/bin/python -m pip install -q --upgrade pip
.venv-mxnet/bin/python -m pip install -q mxnet==1.9.1 numpy==1.23.5
