"""``mxrs-launch local``: whole jobs on this machine, failures and interrupts."""

import os
import signal
import socket
import subprocess
import sys
import uuid

import pytest
from jobs import TIMEOUT, launch, tagged_processes
from mxrs.launcher.cli import parse


def test_a_job_runs_with_prefixed_output_and_the_dmlc_environment(tmp_path):
    script = """
    import os
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    print('rank', kv.rank, 'of', kv.num_workers, 'servers', kv.num_servers,
          os.environ['DMLC_WORKER_ID'], os.environ['GREETING'], os.environ['OMP_NUM_THREADS'],
          flush=True)
    """
    r = launch(tmp_path, script, n=3, s=2, env=["GREETING=hello"])
    assert r.returncode == 0, r.stdout + r.stderr
    threads = os.environ.get("OMP_NUM_THREADS") or max(1, (os.cpu_count() or 1) // 3)
    for i in range(3):
        assert f"[worker {i}] rank {i} of 3 servers 2 {i} hello {threads}" in r.stdout, r.stdout


def test_the_first_failure_ends_the_job_with_its_status_and_no_process_is_left(tmp_path):
    tag = uuid.uuid4().hex
    script = """
    import sys
    import time
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    if kv.rank == 1:
        print('giving up', flush=True)
        sys.exit(3)
    try:
        kv.barrier()  # fails or hangs: worker 1 is gone
    finally:
        time.sleep(600)  # either way only the launcher may end this process
    """
    r = launch(tmp_path, script, env=[f"MXRS_TEST_TAG={tag}", "PS_HEARTBEAT_TIMEOUT=600"])
    assert r.returncode == 3, r.stdout + r.stderr
    assert "mxrs-launch: worker 1 failed with exit status 3" in r.stderr, r.stderr
    assert "giving up" in r.stderr  # its last lines are repeated with the error
    assert tagged_processes(tag) == {}


def test_ctrl_c_stops_the_whole_job(tmp_path):
    tag = uuid.uuid4().hex
    path = tmp_path / "w.py"
    path.write_text("import mxrs as mx\nkv = mx.kv.create('dist_sync')\nprint('up', flush=True)\n"
                    "kv.barrier()\nimport time\ntime.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "--env",
                          f"MXRS_TEST_TAG={tag}", sys.executable, str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = 0
    for line in p.stdout:  # wait until both workers joined the job
        seen += "] up" in line
        if seen == 2:
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 128 + signal.SIGINT, err
    assert "interrupted" in err
    assert tagged_processes(tag) == {}


def test_command_line():
    launcher, job, _ = parse(["local", "-n", "2", "python", "train.py", "--lr", "0.1"])
    assert (launcher, job.num_workers, job.num_servers) == ("local", 2, 2)
    assert job.command == ["python", "train.py", "--lr", "0.1"]
    launcher, job, _ = parse(["--launcher", "local", "-n", "3", "-s", "1", "--env", "A=1",
                              "--", "python", "-u", "x.py"])
    assert (launcher, job.num_servers, job.extra_env) == ("local", 1, {"A": "1"})
    assert job.command == ["python", "-u", "x.py"]
    nodes = job.nodes()
    assert [n.label for n in nodes] == ["scheduler", "server 0", "worker 0", "worker 1",
                                        "worker 2"]
    assert nodes[-1].env["DMLC_WORKER_ID"] == "2" and nodes[1].env["DMLC_ROLE"] == "server"
    assert len(job.secret) == 64
    for bad in (["local", "-n", "2"], ["-n", "2", "python"], ["local", "-n", "0", "python"]):
        with pytest.raises(SystemExit):
            parse(bad)


def test_the_scheduler_port_is_free_and_below_the_ephemeral_range(tmp_path):
    from mxrs.launcher import job

    low = job._ephemeral_low()
    for _ in range(20):
        port = job.free_port()
        assert 1024 <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free indeed
    ranges = tmp_path / "range"
    ranges.write_text("40000\t60999\n")
    assert job._ephemeral_low(str(ranges)) == 40000
    assert job._ephemeral_low(str(tmp_path / "missing")) == 32768


def test_the_launchers_name_for_a_server_is_its_rank_in_the_job(tmp_path):
    # The launcher labels servers 0..S-1 in the order it starts them; the job ranks them as it
    # forms. Killing one must give one name in both mouths.
    tag = uuid.uuid4().hex
    (tmp_path / "worker.py").write_text(
        "import sys, time\n"
        "import mxrs as mx\n"
        "kv = mx.kv.create('dist_sync')\n"
        "kv.init(list(range(6)), [mx.nd.zeros((2,))] * 6)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    while True:\n"
        "        outs = [mx.nd.zeros((2,)) for _ in range(6)]\n"
        "        kv.pushpull(list(range(6)), [mx.nd.ones((2,))] * 6, out=outs)\n"
        "        mx.nd.waitall()\n"
        "except mx.base.NodeLostError as e:\n"
        "    print('lost:', e, flush=True)\n"
        "time.sleep(600)  # only the launcher may end this process\n")
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "1", "-s", "3", "--verbose",
           "--env", f"MXRS_TEST_TAG={tag}", "--env", "PS_HEARTBEAT_TIMEOUT=600",
           sys.executable, "worker.py"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        seen, joined = [], []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("[server") and "joined the job as" in line:
                joined.append(line)
            if len(joined) == 3 and any(ln.startswith("[worker 0] ready") for ln in seen):
                break
        assert len(joined) == 3, "".join(seen)
        for ln in joined:
            label = ln[1:ln.index("]")]
            assert f"joined the job as {label} on 127.0.0.1:" in ln, ln
        servers = {env_id: pid for pid, (role, env_id, _) in
                   tagged_processes(tag, "DMLC_SERVER_ID").items() if role == "server"}
        os.kill(servers["1"], signal.SIGKILL)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 137, err
    assert "mxrs-launch: server 1 failed with exit status 137" in err, err
    # The worker may be stopped before (or while) it says what it lost; what it says names
    # the same server.
    lost = [ln for ln in out.splitlines() if ln.startswith("[worker 0] lost:") and " on " in ln]
    assert all("server 1 on 127.0.0.1:" in ln for ln in lost), out
    assert tagged_processes(tag) == {}


def test_every_server_is_started_with_its_label_as_its_rank():
    from mxrs.launcher.job import Job

    job = Job(num_workers=2, num_servers=3, command=["python", "train.py"])
    servers = [n for n in job.nodes() if n.role == "server"]
    assert [(n.label, n.env["DMLC_SERVER_ID"]) for n in servers] == [
        ("server 0", "0"), ("server 1", "1"), ("server 2", "2")]
