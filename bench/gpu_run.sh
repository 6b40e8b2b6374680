#!/usr/bin/env bash
# The GPU checks as one run on a lent GPU machine (CuPy, NCCL, PyTorch and Python 3.12 there;
# no compiler for Rust, no network): the GPU tests, then bench/gpu.py.
#
# It expects, in .gpu/ at the repository root (carried beside the working tree):
#   _native.abi3.so                 mxrs's extension from `maturin build --release` (the wheel's
#                                   file, then `strip`): abi3, so any Python >= 3.10 loads it. Not
#                                   `cargo build`'s, which links this machine's libpython
#   nvidia_cudnn_frontend-*.whl     `pip download nvidia-cudnn-frontend --python-version 3.12 ...`
# Results go to $OUT (or bench/out/gpu): tests.log, bench.log, gpu.json, gpu.md; with
# PROFILE=1 profile.log (bench/gpu_profile.py: a ResNet-50 step's CUDA kernels beside
# PyTorch's, and where mxrs allocates; PROFILE_DTYPE, float16 by default), with CPROFILE=1 profile.txt (a cProfile of mxrs's
# ResNet-50 steps). ONLY=tests or ONLY=bench runs one half; MODELS="resnet50" limits the
# benchmark's models.
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export MXRS_KERNELS=numpy  # no oneDNN there: the CPU references compute with NumPy
if grep -q libpython .gpu/_native.abi3.so; then
    echo ".gpu/_native.abi3.so links libpython: build it with maturin (see above)" >&2
    exit 1
fi
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gpu-site .gpu/*.whl || exit 1
cp .gpu/_native.abi3.so python/mxrs/_native.abi3.so || exit 1
export PYTHONPATH=/tmp/gpu-site:$PWD/python
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 - <<'PY'
import cupy, mxrs
from mxrs import nd, kernels
x = nd.ones((2, 3, 8, 8), ctx=mxrs.gpu(0))
w = nd.ones((4, 3, 3, 3), ctx=mxrs.gpu(0))
print(nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True).asnumpy()[0, 0, 0, :3])
print("cupy", cupy.__version__, "kernels", kernels.describe().get("gpu"))
PY
if [ "${ONLY:-}" != bench ]; then
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider --tb=short \
    tests/test_gpu_kernels.py tests/test_gpu.py tests/test_kernels_gpu_seam.py 2>&1 \
    | tee "$OUT/tests.log" | tail -60
fi
[ "${ONLY:-}" = tests ] && exit 0
if [ -n "${PROFILE:-}" ]; then
    timeout 150 python3 bench/gpu_profile.py --dtype "${PROFILE_DTYPE:-float16}" --sites 2>&1 \
        | tee "$OUT/profile.log"
fi
# shellcheck disable=SC2086  # MODELS is a list
timeout "${BENCH_TIMEOUT:-330}" python3 bench/gpu.py --all --out "$OUT" --timeout 120 \
    --warmup 3 --steps 8 --windows 3 --models ${MODELS:-resnet50 lenet} 2>&1 | tee "$OUT/bench.log"
if [ -n "${CPROFILE:-}" ]; then
    timeout 90 python3 bench/gpu.py --case mxrs resnet50 float16 --warmup 2 --steps 4 \
        --windows 1 --profile "$OUT/profile.txt" | tail -1
fi
