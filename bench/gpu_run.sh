#!/usr/bin/env bash
# The GPU checks as one run on a lent GPU machine (CuPy, NCCL, PyTorch and Python 3.12 there;
# no compiler for Rust, no network): the GPU tests, then bench/gpu.py.
#
# It expects, in .gpu/ at the repository root (carried beside the working tree):
#   _native.abi3.so                 mxrs's extension, built here (`maturin develop --release`,
#                                   then `strip`), abi3 so any Python >= 3.10 loads it
#   nvidia_cudnn_frontend-*.whl     `pip download nvidia-cudnn-frontend --python-version 3.12 ...`
# Results go to $OUT (or bench/out/gpu): tests.log, bench.log, gpu.json, gpu.md (and with
# PROFILE=1 profile.txt, a cProfile of mxrs's ResNet-50 steps). ONLY=tests or ONLY=bench runs
# one half.
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export MXRS_KERNELS=numpy  # no oneDNN there: the CPU references compute with NumPy
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
timeout "${BENCH_TIMEOUT:-330}" python3 bench/gpu.py --all --out "$OUT" --timeout 120 \
    --warmup 3 --steps 8 --windows 3 2>&1 | tee "$OUT/bench.log"
[ -n "${PROFILE:-}" ] && timeout 90 python3 bench/gpu.py --case mxrs resnet50 float16 --warmup 2 \
    --steps 4 --windows 1 --profile "$OUT/profile.txt" | tail -1
