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
