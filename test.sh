#!/usr/bin/env bash
# Installs what the tests need (system tools via apt-get when run as root, see
# scripts/test-deps.sh), installs mxrs and its test tools into ./.venv (building the Rust
# extension), and runs every check and test.
set -euo pipefail
cd "$(dirname "$0")"

scripts/test-deps.sh

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q '.[test,docs]'
# Apache MXNet 1.9.1 in its own virtualenv: the reference of the differential tests
bash bench/setup_mxnet.sh
# NumPy 1.x beside the mxrs of .venv: MXNet's own example scripts need np.fromstring
scripts/np1-venv.sh

cargo fmt --all -- --check
# rust-version is a true minimum; clippy's incompatible_msrv then checks std APIs against it
python scripts/check_msrv.py
cargo clippy --workspace --all-targets -- -D warnings
cargo test -p ps-core -p ps-bench -p mxrs-onednn -p mxrs-shm
ruff check .
ruff format --check .
mypy
# the documentation site (docs/, mkdocs.yml): any warning fails the build
mkdocs build --strict --quiet
pytest -q
# The operator tests again on the portable NumPy kernels (the run above computes convolution,
# pooling, batch norm and activations on oneDNN where it loads)
MXRS_KERNELS=numpy pytest -q tests/test_ops_conv.py tests/test_ops_nn.py tests/test_ops_unary.py \
    tests/test_gluon_nn.py tests/test_norm_pad_layers.py tests/test_conv3d_transpose_layouts.py \
    tests/test_model_zoo.py tests/test_mxnet_checkpoints.py tests/test_autograd_higher.py
