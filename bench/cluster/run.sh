#!/usr/bin/env bash
# The seeds' scaling experiment on emulated hosts (network namespaces, shaped links), mxrs and
# Apache MXNet 1.9.1 side by side: probe, jobs, JSON, charts and the RESULTS.md section
# (bench/cluster/run.py; every option of run.py can be given here, e.g. --hosts 1 2
# --series mxrs mxnet --repeats 1 for a subset). Needs root. About 40 minutes on 2 cores.
#
# Every run has its own prefix (CLUSTER_PREFIX, else a random one); whatever a run leaves
# (namespaces, links, processes inside them) is removed on exit, on errors and on Ctrl-C or
# SIGTERM, by that prefix alone. CLUSTER_TIMEOUT_S (default 4500) bounds the whole run.
# PYTHON (default .venv/bin/python, else python3) must import mxrs (and matplotlib, unless
# --no-write).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" != 0 ]; then
    echo "run.sh: needs root (network namespaces and tc)" >&2
    exit 2
fi
py="${PYTHON:-}"
if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
if ! "$py" -c "import mxrs" 2>/dev/null; then
    echo "run.sh: $py cannot import mxrs (set PYTHON, or PYTHONPATH=$PWD/python)" >&2
    exit 2
fi
prefix="${CLUSTER_PREFIX:-mxc$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
child=""

cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    "$py" bench/cluster/_hosts.py teardown "$prefix" || status=1
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# in the background, so that a signal to this script is handled at once (wait returns)
timeout -k 30 "${CLUSTER_TIMEOUT_S:-4500}" "$py" bench/cluster/run.py --prefix "$prefix" "$@" &
child=$!
wait "$child"
