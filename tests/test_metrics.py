"""Prometheus metrics of the scheduler and servers, scraped during a real 2-worker x 2-server
dist_sync job and read with the ``prometheus_client`` package's OpenMetrics parser."""

import contextlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from jobs import free_ports, launch, node_env, start_worker
from mxrs.launcher.scheduler import start_scheduler
from prometheus_client.openmetrics.parser import text_string_to_metric_families

STEPS = 4
TIMEOUT = 60

# Two keys, one on each server (keys go to servers by hash; both are under the slicing bound):
# 1000 and 100 float32 elements, pushed and pulled STEPS times by each worker.
WORKER = f"""
import sys
import numpy as np
import mxrs as mx

kv = mx.kv.create("dist_sync")
kv.init(3, mx.nd.zeros((1000,)))
kv.init(4, mx.nd.zeros((10, 10)))
big, small = mx.nd.zeros((1000,)), mx.nd.zeros((10, 10))
for step in range({STEPS}):
    kv.push(3, mx.nd.ones((1000,)))
    kv.push(4, mx.nd.ones((10, 10)))
    kv.pull(3, out=big)
    kv.pull(4, out=small)
    big.wait_to_read()
    small.wait_to_read()
assert float(big.asnumpy()[0]) == 2.0, big.asnumpy()[:3]
print("ready", flush=True)
sys.stdin.readline()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port):
    """The families of ``http://127.0.0.1:port/metrics``, by name, and the content type."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        kind = r.headers["Content-Type"]
        text = r.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}, kind


def _value(families, name, **labels):
    """The value of the one sample called ``name`` (with ``labels``) of any family; 0 if absent."""
    found = [
        s.value
        for f in families.values()
        for s in f.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0


def _total(scrapes, name, **labels):
    return sum(_value(f, name, **labels) for f in scrapes)


@pytest.fixture
def job():
    """A scheduler and two servers with metrics endpoints, and two workers that did STEPS
    steps and wait on stdin; yields (metrics ports: scheduler's first, the servers' data ports,
    the workers); kills them all."""
    ports = [_free_port() for _ in range(3)]
    data = [_free_port() for _ in range(2)]
    sched, root = start_scheduler(
        [sys.executable, "-c", "import mxrs"],
        node_env("scheduler", 0, MXRS_METRICS_PORT=ports[0]),
    )
    procs = [sched]
    try:
        procs += [
            subprocess.Popen(
                [sys.executable, "-c", "import mxrs"],
                env=node_env(
                    "server",
                    root,
                    DMLC_SERVER_ID=i,
                    MXRS_PORT=data[i],
                    MXRS_METRICS_PORT=ports[1 + i],
                ),
            )
            for i in range(2)
        ]
        workers = [
            start_worker(root, WORKER, stdin=subprocess.PIPE, DMLC_WORKER_ID=r) for r in range(2)
        ]
        procs += workers
        for w in workers:
            line = w.stdout.readline()
            assert line == "ready\n", (line, w.stderr.read() if w.poll() is not None else "")
        yield ports, data, workers
    finally:
        for p in procs:
            p.kill()
            p.communicate()


def test_a_scrape_during_a_job_counts_what_the_job_did(job):
    ports, data, workers = job
    sched, kind = _scrape(ports[0])
    assert kind.startswith("application/openmetrics-text")
    servers = [_scrape(p)[0] for p in ports[1:]]

    # The scheduler: four nodes alive, none lost, each worker registered and sent messages.
    assert _value(sched, "mxrs_nodes", state="alive") == 4
    assert _value(sched, "mxrs_nodes_lost_total") == 0
    for r in range(2):
        assert _value(sched, "mxrs_received_messages_total", peer=f"worker {r}") >= 2
        assert _value(sched, "mxrs_sent_bytes_total", peer=f"worker {r}") > 0

    # The servers, together: every push and pull entry, every round of each key.
    assert _total(servers, "mxrs_requests_total", op="push") == 2 * 2 * STEPS
    assert _total(servers, "mxrs_requests_total", op="pull") == 2 * 2 * STEPS
    assert _total(servers, "mxrs_requests_total", op="init") == 2 * 2
    assert _total(servers, "mxrs_rounds_completed_total") == 2 * STEPS
    assert _total(servers, "mxrs_round_seconds_count") == 2 * STEPS
    # Each key on its server and a copy on the other, its backup.
    assert _total(servers, "mxrs_keys") == 2 * 2
    # Values held: at least both keys' float32 values, twice (round sums come on top).
    assert _total(servers, "mxrs_value_bytes") >= 2 * 4 * (1000 + 100)
    for r in range(2):
        # Each worker's latest push completed round STEPS on whichever server holds a key.
        rounds = [_value(s, "mxrs_worker_round", worker=str(r)) for s in servers]
        assert max(rounds) == STEPS, rounds
        # Bytes in: at least the gradients pushed; out: at least the values pulled.
        got = _total(servers, "mxrs_received_bytes_total", peer=f"worker {r}")
        sent = _total(servers, "mxrs_sent_bytes_total", peer=f"worker {r}")
        assert got >= STEPS * 4 * 1100, got
        assert sent >= STEPS * 4 * 1100, sent
        # One reply frame per request frame: as many messages out as in.
        assert _total(servers, "mxrs_sent_messages_total", peer=f"worker {r}") == _total(
            servers, "mxrs_received_messages_total", peer=f"worker {r}"
        )
    assert _total(servers, "mxrs_connections_refused_total") == 0

    # A connection that fails the handshake is refused and counted; the job carries on.
    with socket.create_connection(("127.0.0.1", data[0]), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 200)
        s.settimeout(10)
        with contextlib.suppress(ConnectionResetError):
            while s.recv(1024):  # the server's challenge, then the end: it hung up
                pass
    deadline = time.monotonic() + TIMEOUT
    while _total([_scrape(p)[0] for p in ports[1:]], "mxrs_connections_refused_total") != 1:
        assert time.monotonic() < deadline, "the refused connection was never counted"
    for w in workers:
        w.stdin.write("\n")
        w.stdin.flush()
    for w in workers:
        assert w.wait(timeout=TIMEOUT) == 0, w.stderr.read()


def test_a_bad_metrics_port_is_a_clear_error():
    env = node_env("scheduler", _free_port(), MXRS_METRICS_PORT="not-a-port")
    out = subprocess.run(
        [sys.executable, "-c", "import mxrs"], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert "MXRS_METRICS_PORT" in out.stderr


def test_the_endpoint_answers_only_metrics(job):
    ports, _, _ = job
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{ports[1]}/", timeout=10)
    e.value.close()
    assert e.value.code == 404


LAUNCHED = f"""
import json, os, urllib.request
import mxrs as mx
from prometheus_client.openmetrics.parser import text_string_to_metric_families

kv = mx.kv.create("dist_sync")
kv.init(3, mx.nd.zeros((1000,)))
out = mx.nd.zeros((1000,))
for step in range({STEPS}):
    kv.push(3, mx.nd.ones((1000,)))
    kv.pull(3, out=out)
    out.wait_to_read()
kv.barrier()  # both workers' rounds are done
if kv.rank == 0:
    port = int(os.environ["METRICS_PORT"])
    rounds = 0
    for p in (port + 1, port + 2):
        text = urllib.request.urlopen(f"http://127.0.0.1:{{p}}/metrics", timeout=10).read()
        for f in text_string_to_metric_families(text.decode()):
            rounds += sum(s.value for s in f.samples if s.name == "mxrs_rounds_completed_total")
    print("scraped", json.dumps({{"rounds": rounds}}), flush=True)
kv.barrier()
"""


def test_the_launcher_gives_each_node_its_port_and_sums_up_server_bytes(tmp_path):
    port = free_ports(3)
    out = launch(
        tmp_path,
        LAUNCHED,
        env=[f"METRICS_PORT={port}"],
        launcher_args=("--metrics-port", str(port)),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"metrics at http://127.0.0.1:{port}/metrics (scheduler)" in out.stderr
    for i in range(2):
        where = f"[server {i}] mxrs: metrics of server {i} at http://127.0.0.1:{port + 1 + i}/"
        assert where in out.stdout, out.stdout
    assert f"http://127.0.0.1:{port}/metrics" in out.stdout  # the scheduler says it too
    assert f'scraped {{"rounds": {STEPS}' in out.stdout, out.stdout
    # The summary: each server's bytes in and out, as the server reported them at exit.
    rows = [ln for ln in out.stderr.splitlines() if ln.strip().startswith("server ")]
    assert len(rows) == 2, out.stderr
    for row in rows:
        assert "exit 0" in row and " in " in row and " out " in row and " - " not in row, row
    assert "mxrs-report" not in out.stdout + out.stderr
