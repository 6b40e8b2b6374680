"""``bench/cluster``: emulated hosts (network namespaces on a bridge, links shaped with tc), dist
jobs of both libraries on them, that a run leaves nothing behind however it ends, and the
step-time model's arithmetic.

The cluster tests need root (CI runs as root); every run here has its own prefix, so nothing
else is touched.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import mxnet_ref
import pytest

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "bench" / "cluster"
sys.path[:0] = [str(CLUSTER), str(ROOT / "bench")]

import _dist  # noqa: E402
import _hosts  # noqa: E402
import _model  # noqa: E402
import _report_targets  # noqa: E402
import _targets  # noqa: E402

root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: the emulated hosts are network namespaces shaped by tc"
)
#: A guard against a hung run, not a timing: these runs take 5 to 20 s on an idle 2-core
#: machine and several times that on a loaded one (5 processes per job, MXNet's import included).
TIMEOUT = 180
SMALL = ["--model", "mlp", "--mlp-width", "64", "--mlp-depth", "2", "--batch", "32"]


def _prefix():
    return "t" + uuid.uuid4().hex[:8]


def _sh(*argv, ns=None):
    cmd = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout


def _leftovers(prefix):
    """What of run ``prefix`` exists: namespaces, links in this namespace, processes."""
    left = [n for n in _sh("ip", "netns", "list").split() if n.startswith(prefix)]
    left += [line for line in _sh("ip", "-o", "link").splitlines() if prefix in line]
    mark = f"{_dist.MARK_VAR}={prefix}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mark in env and state != "Z":
            left.append(f"process {pid}")
    return left


def _run_sh(prefix, out, *args):
    """Start ``run.sh`` for a small 2-host run of ``prefix`` writing its JSON to ``out``."""
    env = {**os.environ, "CLUSTER_PREFIX": prefix, "PYTHON": sys.executable}
    env["CLUSTER_TIMEOUT_S"] = str(TIMEOUT)
    argv = ["bash", str(CLUSTER / "run.sh"), "--no-write", "--no-probe", "--no-seed-configs"]
    argv += ["--hosts", "2", "--repeats", "1", "--rate-mbit", "800", "--out", str(out)]
    argv += ["--model", "mlp", "--mlp-width", "64", "--mlp-depth", "2", *args]
    return subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # with Ctrl-C's default action, as a terminal gives it, even where the tests run as a
        # background job (whose SIGINT is ignored, which a shell script cannot trap again)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@root
def test_hosts_are_namespaces_on_links_shaped_both_ways_and_a_job_runs_across_them(tmp_path):
    prefix = _prefix()
    with _hosts.Cluster(prefix, 2, _hosts.Link(rate_mbit=300)) as c:
        assert sorted(_hosts.namespaces(prefix)) == [f"{prefix}-h0", f"{prefix}-h1", f"{prefix}-sw"]
        for i in range(2):
            addr = _sh("ip", "-o", "-4", "addr", "show", "dev", c.dev(i), ns=c.ns(i))
            assert f"inet 10.213.0.{i + 1}/24" in addr
            for dev, ns in ((c.dev(i), c.ns(i)), (c.port(i), c.switch)):
                qdisc = _sh("tc", "qdisc", "show", "dev", dev, ns=ns)
                assert "qdisc tbf" in qdisc and "rate 300Mbit" in qdisc, qdisc
        # 6 MB from host 0 to host 1 cannot go faster than 300 Mbit/s (37.5 MB/s)
        recv = subprocess.Popen(
            c.exec_argv(1, [sys.executable, "-c", _RECEIVER]), stdout=subprocess.PIPE, text=True
        )
        try:
            assert recv.stdout.readline().strip() == "listening"
            t = time.perf_counter()
            subprocess.run(
                c.exec_argv(0, [sys.executable, "-c", _SENDER]), timeout=TIMEOUT, check=True
            )
            got = int(recv.communicate(timeout=TIMEOUT)[0])
            rate = got / (time.perf_counter() - t)
        finally:
            recv.kill()
            recv.wait()
        assert got == 6 << 20
        assert rate < 1.05 * 300e6 / 8, f"{rate / 1e6:.1f} MB/s through a 37.5 MB/s link"

        argv = [str(CLUSTER / "worker.py"), *SMALL, "--compute-s", "0.05", "--steps", "3"]
        out = _dist.run_job(c, "mxrs", _dist.Layout.symmetric(2), argv, tmp_path, TIMEOUT)
        assert sorted(r["host"] for r in out) == ["10.213.0.1", "10.213.0.2"]
        for r in out:
            assert len(r["step_s"]) == 3 and min(r["step_s"]) >= 0.05
            assert r["images_per_s"] == pytest.approx(32 / r["median_step_s"])
        # the job's pushes and pulls crossed the shaped links: both directions carry at least
        # the half of the model that lives on the other host's server, each step
        sent = _sh("tc", "-s", "qdisc", "show", "dev", c.dev(0), ns=c.ns(0))
        received = _sh("tc", "-s", "qdisc", "show", "dev", c.port(0), ns=c.switch)
        for stats in (sent, received):
            assert int(stats.split("Sent ")[1].split()[0]) > 5 * out[0]["bytes"] / 2
    assert _leftovers(prefix) == []


_RECEIVER = """
import socket
s = socket.socket(); s.bind(("10.213.0.2", 5001)); s.listen(1); print("listening", flush=True)
c, _ = s.accept(); n = 0
while (k := len(c.recv(1 << 20))):
    n += k
print(n)
"""
_SENDER = """
import socket
c = socket.create_connection(("10.213.0.2", 5001)); c.sendall(bytes(6 << 20)); c.close()
"""


@root
def test_a_delay_is_emulated_with_netem_or_refused_where_the_kernel_has_none():
    prefix = _prefix()
    try:
        with _hosts.Cluster(prefix, 1, _hosts.Link(100, delay_ms=2)) as c:
            for dev, ns in ((c.dev(0), c.ns(0)), (c.port(0), c.switch)):
                qdiscs = _sh("tc", "qdisc", "show", "dev", dev, ns=ns)
                assert "netem" in qdiscs and "delay 2ms" in qdiscs and "rate 100Mbit" in qdiscs
    except _hosts.ClusterError as e:  # a kernel built without CONFIG_NET_SCH_NETEM
        assert "no netem qdisc" in str(e) and "run with a delay of 0" in str(e)
    assert _leftovers(prefix) == []


@root
def test_a_run_of_both_libraries_reports_images_per_s_and_leaves_nothing(tmp_path):
    mxnet_ref.python()  # MXNet 1.9.1 must be set up
    prefix = _prefix()
    p = _run_sh(prefix, tmp_path, "--series", "mxrs", "mxnet", "--compute-s", "0.05")
    out, _ = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, out
    data = json.loads((tmp_path / f"{prefix}.json").read_text())
    assert [j["lib"] for j in data["jobs"]] == ["mxrs", "mxnet"]
    for job in data["jobs"]:
        assert job["ok"] and job["layout"] == "2s2w-sync", job
        assert [h["addr"] for h in job["cluster"]["hosts"]] == ["10.213.0.1", "10.213.0.2"]
        for host in job["cluster"]["hosts"]:
            assert "rate 800Mbit" in host["send"] and "rate 800Mbit" in host["receive"]
        steps = [r["median_step_s"] for r in job["worker_results"]]
        assert len(steps) == 2 and min(steps) >= 0.05
        assert job["images_per_s"] == pytest.approx(sum(960 / s for s in steps))
        assert f"r0-2s2w-sync-{job['lib']}: {job['images_per_s']:,.1f} images/s" in out
    assert _leftovers(prefix) == []


@root
def test_a_run_whose_worker_fails_exits_non_zero_and_leaves_nothing(tmp_path):
    prefix = _prefix()
    p = _run_sh(prefix, tmp_path, "--series", "mxrs", "--compute-s", "0.05", "--fail-at-step", "1")
    out, _ = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 1, out
    assert "exited with 3" in out and "failed jobs: r0-2s2w-sync-mxrs" in out, out
    job = json.loads((tmp_path / f"{prefix}.json").read_text())["jobs"][0]
    assert not job["ok"] and "exited with 3" in job["error"]
    assert _leftovers(prefix) == []


@root
def test_ctrl_c_midway_stops_the_run_and_leaves_nothing(tmp_path):
    prefix = _prefix()
    p = _run_sh(prefix, tmp_path, "--series", "mxrs", "--compute-s", "0.5", "--steps", "500")
    try:
        deadline = time.monotonic() + TIMEOUT
        # the job is under way once its scheduler, 2 servers and 2 workers are on the hosts
        while sum(map(len, _hosts.processes(prefix).values())) < 5:
            assert p.poll() is None and time.monotonic() < deadline, p.stdout.read()
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, out
    assert "interrupted" in out
    assert _leftovers(prefix) == []


def test_the_model_counts_bytes_over_the_busiest_link_and_requests_per_worker():
    mb = 100.0
    assert _model.link_bytes(1, [0], [0], mb, mb) == 0.0  # worker and server share the host
    assert _model.link_bytes(2, [0, 1], [0, 1], mb, mb) == 100.0  # half out, half back, twice
    assert _model.link_bytes(4, [0, 1, 2, 3], [0, 1, 2, 3], mb, mb) == 150.0  # 2 * 3/4
    # one server: host 0 takes worker 1's whole push and sends it the whole model
    assert _model.link_bytes(2, [0], [0, 1], mb, mb) == 100.0
    # compressed pushes: the link carries a 16th of the push and the whole pull each way
    assert _model.link_bytes(2, [0, 1], [0, 1], mb / 16, mb) == pytest.approx(53.125)
    # small arrays live on one server, larger ones are cut over all of them
    assert _model.requests([10, 1_000_000, 1_000_001], 4) == 2 * (1 + 1 + 4)


def test_the_model_recovers_the_link_share_request_cost_and_overlap_it_was_made_with():
    comm = {"eta": 0.8, "alpha": 0.002}
    keys = [100] * 20 + [2_000_000] * 2

    def job(hosts, compute_s, hide, rate=1000.0):
        every = list(range(hosts))
        rec = {"hosts": hosts, "servers": every, "workers": every, "rate_mbit": rate}
        rec["worker_results"] = [{"bytes": 4e8, "key_elems": keys, "batch": 960}]
        d, m = _model.features(rec)
        step = _model.step_time(compute_s, _model.t_comm(comm, rate, d, m), hide)
        return rec | {"step_s": step, "compute_s": compute_s, "ok": True, "lib": "x"}

    probe = [job(n, 0.0, 0.0) for n in (1, 2, 4)]
    fit = _model.fit_comm(probe)
    assert fit["eta"] == pytest.approx(0.8) and fit["alpha"] == pytest.approx(0.002)
    jobs = [job(n, 4.0, 0.3) | {"layout": f"{n}h-sync", "series": "s"} for n in (1, 2, 4)]
    got = _model.calibrate(probe, jobs, {"s": "x"})["series"]["s"]
    assert got["hide"] == pytest.approx(0.3, abs=0.005)
    assert all(abs(p["error"]) < 1e-3 for p in got["points"])
    assert got["ideal"][64] == pytest.approx(64 * 960 / 4.0)
    d64 = _model.link_bytes(64, list(range(64)), list(range(64)), 4e8, 4e8)
    t64 = _model.step_time(4.0, _model.t_comm(comm, 1000.0, d64, 2 * (20 + 2 * 64)), 0.3)
    assert got["projection"][64] == pytest.approx(64 * 960 / t64)


@root
def test_the_compression_and_real_compute_runs_count_wire_bytes_and_turn_overlap_off(tmp_path):
    mxnet_ref.python()
    prefix = _prefix()
    p = _run_sh(
        prefix,
        tmp_path,
        *("--no-sweep", "--comm-bound", "--comm-compute-s", "0.05", "--comm-steps", "1"),
        *("--comm-repeats", "1", "--warmup", "0", "--real", "--real-batch", "4"),
        *("--real-steps", "2", "--real-warmup", "1", "--real-repeats", "1"),
    )
    out, _ = p.communicate(timeout=2 * TIMEOUT)
    assert p.returncode == 0, out
    data = json.loads((tmp_path / f"{prefix}.json").read_text())
    comm = data["comm"]
    assert comm["rate_mbit"] == 200.0  # a 4th of --rate-mbit 800
    assert [j["series"] for j in comm["jobs"]] == [*_targets.COMM_SERIES, "mxrs", "mxnet"]
    assert [j["layout"] for j in comm["jobs"] if j["ok"]] == ["2s2w-sync"] * 6 + ["1s2w-sync"] * 2
    params = comm["jobs"][0]["worker_results"][0]["bytes"] / 4
    got = {s: _report_targets.wire_bytes(comm["jobs"], s) for s in _targets.COMM_SERIES}
    assert got["mxrs"] == 4 * params and got["mxrs-fp16"] == got["mxrs-bf16"] == 2 * params
    assert got["mxrs-2bit"] < params / 3 and got["mxnet"] is None  # MXNet has no counters
    real = data["real"]
    assert [c["ok"] for c in real["compute"]] == [True, True]
    mine = real["compute"][0]
    assert real["rate_mbit"] == pytest.approx(mine["bytes"] * 8 / mine["step_s"] / 1e6)
    assert mine["bytes"] == 4 * 11_181_642  # resnet18_v1 with 10 classes
    assert [j["series"] for j in real["jobs"]] == ["mxrs", "mxrs-nooverlap", "mxnet"]
    for job in real["jobs"]:
        assert job["ok"], job
        ws = job["worker_results"]
        assert [w["overlap_env"] for w in ws] == ["0" if "no" in job["series"] else ""] * 2
        assert job["images_per_s"] == pytest.approx(sum(4 / w["median_step_s"] for w in ws))
    assert _leftovers(prefix) == []


def test_the_targets_are_read_off_the_medians():
    cells = {
        ("1h-sync", "mxrs"): {"images": 100.0},
        ("4h-sync", "mxrs"): {"images": 370.0},
        ("1h-sync", "mxnet"): {"images": 100.0},
        ("4h-sync", "mxnet"): {"images": 300.0},
        ("1s2w-sync", "mxrs"): {"images": 200.0},
        ("1s2w-sync", "mxnet"): {"images": 180.0},
    }

    def job(series, images, payload=None, pulled=None):
        # 1000-byte model: the first pull of the weights is 2 x 1000 bytes over the servers
        w = {"push_rounds": 2, "workers": 2, "bytes": 1000}
        stats = {"payload_bytes": payload, "pulled_bytes": pulled}
        w["server_stats"] = None if payload is None else [stats] * 2
        return {"ok": True, "series": series, "images_per_s": images, "worker_results": [w]}

    data = {
        "comm": {
            "jobs": [job("mxrs", 10.0, 800, 1800), job("mxrs-fp16", 16.0, 400, 1400)],
        },
        "real": {"jobs": [job("mxrs", 13.0), job("mxrs-nooverlap", 10.0), job("mxnet", 9.0)]},
    }
    text = "\n".join(_report_targets.target_lines(cells, data))
    assert "(a) mxrs at S = W = 4, dist_sync, float32: 370.0 images/s against 100.0" in text
    assert "3.70× (target ≥ 3.6×): **reached**. MXNet 1.9.1: 300.0 against 100.0, 3.00×" in text
    assert "1.11× (target ≥ 1.25×): **missed**" in text
    assert "wire bytes 0.00 MB pushed and 0.00 MB pulled against 0.00 + 0.00 MB" in text
    assert "(0.500 and 0.500 of float32's)" in text
    assert "1.60× (target both directions halved and ≥ 1.6×): **reached**" in text
    assert "overlap on 13.0 images/s, off 10.0, 1.30× (target ≥ 1.3×): **reached**" in text
    assert _report_targets.wire_bytes(data["comm"]["jobs"], "mxrs") == 400.0
    # pulled: (2 x 1800 - 2 x 1000 of first pulls) / (2 rounds x 2 workers)
    assert _report_targets.wire_bytes(data["comm"]["jobs"], "mxrs", pulled=True) == 400.0
    assert _report_targets.wire_bytes(data["comm"]["jobs"], "mxrs-fp16", pulled=True) == 200.0
