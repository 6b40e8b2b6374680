#!/usr/bin/env bash
# Creates bench/.venv-mxnet with Apache MXNet 1.9.1, the comparison peer of the benchmarks.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv-mxnet/bin/python ]; then
    python3 -m venv .venv-mxnet
fi
.venv-mxnet/bin/python -m pip install -q --upgrade pip
# SciPy: MXNet's csr_matrix takes coordinates and scipy.sparse matrices through it
.venv-mxnet/bin/python -m pip install -q mxnet==1.9.1 numpy==1.23.5 scipy==1.11.4
