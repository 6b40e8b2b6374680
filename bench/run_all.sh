#!/usr/bin/env bash
# Every side-by-side benchmark of mxrs and Apache MXNet 1.9.1, in one run on this machine; each
# rewrites its section of bench/RESULTS.md, and scaling.py draws the charts from their numbers.
# Takes about two hours on 2 cores (compute.py alone about an hour). Needs the package
# registries once (pip, and apt for iperf3).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q '.[bench]'
bash bench/setup_mxnet.sh
if ! command -v iperf3 >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq iperf3 >/dev/null || { apt-get update -qq && apt-get install -y -qq iperf3 >/dev/null; }
    else
        echo "run_all.sh: iperf3 is missing (apt-get install iperf3); the TCP ceiling is left out" >&2
    fi
fi

py=.venv/bin/python
# the time-to-accuracy run needs the full MNIST (see bench/_train_side.py for where it looks)
if [ -z "${MNIST_DIR:-}" ] && [ ! -d ../shared/data/mnist ]; then
    $py -m mxrs.gluon.data.vision.fetch_mnist
fi
$py bench/kvstore_mxnet.py --write
$py bench/train_mxnet.py --write
# MXNet's train_imagenet.py (symbolic API) needs its scripts in ../shared/mxnet-examples
if [ -d ../shared/mxnet-examples ]; then $py bench/symbolic.py --write; fi
$py bench/sparse.py --write
$py bench/run_lenet.py --repeats 5 --threads 1 2 --write
$py bench/compute.py --repeats 3 --threads 1 2 --openblas both --write
$py bench/rnn.py --repeats 3 --threads 1 --openblas both --write
$py bench/data.py --repeats 3 --write
$py bench/scaling.py --write
