"""``mxrs-launch local``: whole jobs on this machine, failures and interrupts."""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from jobs import TIMEOUT, launch, tagged_processes
from mxrs.launcher import scheduler
from mxrs.launcher.cli import parse
from mxrs.launcher.scheduler import start_scheduler


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
    path.write_text(
        "import mxrs as mx\nkv = mx.kv.create('dist_sync')\nprint('up', flush=True)\n"
        "kv.barrier()\nimport time\ntime.sleep(600)\n"
    )
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "local",
            "-n",
            "2",
            "--env",
            f"MXRS_TEST_TAG={tag}",
            sys.executable,
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    launcher, job, _ = parse(
        ["--launcher", "local", "-n", "3", "-s", "1", "--env", "A=1", "--", "python", "-u", "x.py"]
    )
    assert (launcher, job.num_servers, job.extra_env) == ("local", 1, {"A": "1"})
    assert job.command == ["python", "-u", "x.py"]
    nodes = job.nodes()
    assert [n.label for n in nodes] == ["scheduler", "server 0", "worker 0", "worker 1", "worker 2"]
    assert nodes[-1].env["DMLC_WORKER_ID"] == "2" and nodes[1].env["DMLC_ROLE"] == "server"
    assert len(job.secret) == 64
    for bad in (["local", "-n", "2"], ["-n", "2", "python"], ["local", "-n", "0", "python"]):
        with pytest.raises(SystemExit):
            parse(bad)


def test_max_restarts_reaches_every_node_and_only_launchers_that_can_restart(capsys):
    _, job, _ = parse(["local", "-n", "2", "--max-restarts", "3", "python", "x.py"])
    assert job.max_restarts == 3
    assert all(n.env["MXRS_MAX_RESTARTS"] == "3" for n in job.nodes())
    _, job, _ = parse(["local", "-n", "2", "python", "x.py"])
    assert job.max_restarts == 0 and "MXRS_MAX_RESTARTS" not in job.nodes()[0].env
    for bad, said in (
        (["local", "-n", "2", "--max-restarts", "-1", "python"], "must be 0 or more, got -1"),
        (["local", "-n", "2", "-s", "3", "--replicas", "2", "python"], "must be 0 or 1, got 2"),
        (
            ["slurm", "-n", "2", "--max-restarts", "1", "python"],
            "--max-restarts needs a launcher that starts each worker as its own process "
            "(local, ssh, kubernetes); slurm starts them together",
        ),
    ):
        with pytest.raises(SystemExit):
            parse(bad)
        assert said in capsys.readouterr().err


def test_the_job_runs_on_the_port_the_scheduler_announces(tmp_path):
    script = """
    import os
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    print('port', os.environ['DMLC_PS_ROOT_PORT'], flush=True)
    """
    r = launch(tmp_path, script, n=1, s=1, args=(), env=["PS_VERBOSE=1"])
    assert r.returncode == 0, r.stdout + r.stderr
    (port,) = [ln.split()[-1] for ln in r.stdout.splitlines() if ln.startswith("[worker 0] port")]
    assert 0 < int(port) < 65536
    # The worker reached the scheduler on the port the scheduler itself bound and announced.
    listening = [ln for ln in r.stdout.splitlines() if "scheduler listening on" in ln]
    assert listening and listening[0].endswith(f"scheduler listening on 127.0.0.1:{port}"), r.stdout


@pytest.mark.parametrize("why", ["port in use", "bad setting"])
def test_a_scheduler_that_fails_before_announcing_ends_the_launch(tmp_path, why):
    tag = uuid.uuid4().hex
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = [f"MXRS_TEST_TAG={tag}"]
        if why == "port in use":
            env.append(f"DMLC_PS_ROOT_PORT={taken.getsockname()[1]}")
            said = "Address already in use"
        else:
            env.append("PS_HEARTBEAT_TIMEOUT=-1")
            said = "PS_HEARTBEAT_TIMEOUT:"
        r = launch(tmp_path, "print('worker ran', flush=True)\n", n=1, s=1, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    first, *rest = r.stderr.splitlines()
    assert first == (
        "mxrs-launch: the scheduler exited with status 2 before announcing its "
        "port; stopping the job; its last lines:"
    ), r.stderr
    assert said in "\n".join(rest), r.stderr
    assert "[server" not in r.stdout and "[worker" not in r.stdout  # nothing else started
    assert tagged_processes(tag) == {}


def test_a_signal_while_the_scheduler_starts_stops_it(tmp_path):
    # A stand-in python whose scheduler never announces: the launcher is still waiting for the
    # port when it is told to stop.
    tag = uuid.uuid4().hex
    stub = tmp_path / "python-stub"
    stub.write_text("#!/bin/sh\nexec sleep 600\n")
    stub.chmod(0o755)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "local",
            "-n",
            "1",
            "--env",
            f"MXRS_TEST_TAG={tag}",
            str(stub),
            "x.py",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not tagged_processes(tag):  # the scheduler is up (and silent)
            assert time.monotonic() < deadline and p.poll() is None, "no scheduler started"
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 128 + signal.SIGTERM, out + err
    assert err.strip() == "mxrs-launch: interrupted (signal 15); stopping the job", err
    assert tagged_processes(tag) == {}


def test_an_explicit_port_is_used_as_given_and_a_dry_run_shows_the_port(tmp_path):
    def dry(*env):
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "mxrs.launcher",
                "local",
                "-n",
                "1",
                *[a for kv in env for a in ("--env", kv)],
                "--dry-run",
                "python",
                "x.py",
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return r.returncode, r.stdout.splitlines(), r.stderr

    code, lines, err = dry()
    assert code == 0, err
    assert lines[:2] == [
        "[scheduler] on localhost: python -c 'import mxrs'",
        "[scheduler]   port: <port> (any free one, which the scheduler announces once listening)",
    ]
    _, job, _ = parse(
        ["local", "-n", "1", "--env", "DMLC_PS_ROOT_PORT=9123", "--env", "A=1", "python", "x.py"]
    )
    assert (job.root_port, job.extra_env) == (9123, {"A": "1"})
    assert {n.env["DMLC_PS_ROOT_PORT"] for n in job.nodes()} == {"9123"}
    code, lines, err = dry("DMLC_PS_ROOT_PORT=9123")
    assert code == 0 and lines[1] == "[scheduler]   port: 9123", (lines, err)
    for bad in ("x", "70000", "-1"):
        code, _, err = dry(f"DMLC_PS_ROOT_PORT={bad}")
        assert code == 2 and f"--env DMLC_PS_ROOT_PORT={bad}: expected a port" in err, err


def _fake_scheduler(body):
    """argv of a stand-in scheduler: Python ``body`` with ``announce(text)`` writing to the
    announcement path."""
    return [
        sys.executable,
        "-c",
        "import os, sys, time\n"
        "def announce(text):\n"
        "    with open(os.environ['MXRS_ANNOUNCE'], 'w') as f:\n"
        "        f.write(text)\n" + body,
    ]


def test_start_scheduler_reads_the_announced_port():
    proc, port = start_scheduler(_fake_scheduler("announce('5123\\n'); time.sleep(600)"), {})
    try:
        assert port == 5123 and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    "body, said",
    [
        ("sys.exit(3)", "the scheduler exited with status 3 before announcing its port"),
        ("announce('51'); sys.exit(0)", "the scheduler exited with status 0 before announcing"),
        (
            "import signal; os.kill(os.getpid(), signal.SIGKILL)",
            "the scheduler was killed by signal 9 before announcing its port",
        ),
        ("announce('hello\\n'); time.sleep(600)", "the scheduler announced b'hello', not a port"),
        ("announce('0\\n'); time.sleep(600)", "the scheduler announced b'0', not a port"),
        ("time.sleep(600)", "the scheduler did not announce its port within 1 s"),
        (
            "os.close(int(os.environ['MXRS_ANNOUNCE'].rsplit('/', 1)[1])); time.sleep(600)",
            "the scheduler closed its announcement pipe without announcing its port",
        ),
    ],
)
def test_start_scheduler_fails_naming_the_scheduler_and_stops_it(monkeypatch, body, said):
    monkeypatch.setattr(scheduler, "_EXIT_WAIT_S", 0.5)
    started = []

    def popen(argv, **kwargs):
        started.append(subprocess.Popen(argv, **kwargs))
        return started[-1]

    with pytest.raises(scheduler.SchedulerStartError) as e:
        start_scheduler(_fake_scheduler(body), {"PATH": os.environ["PATH"]}, timeout=1, popen=popen)
    assert str(e.value) == said or str(e.value).startswith(said), e.value
    (proc,) = started
    assert proc.returncode is not None  # stopped (or exited) and reaped


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
        "time.sleep(600)  # only the launcher may end this process\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "mxrs.launcher",
        "local",
        "-n",
        "1",
        "-s",
        "3",
        "--verbose",
        "--replicas",
        "0",
        "--env",
        f"MXRS_TEST_TAG={tag}",
        "--env",
        "PS_HEARTBEAT_TIMEOUT=600",
        sys.executable,
        "worker.py",
    ]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
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
            label = ln[1 : ln.index("]")]
            assert f"joined the job as {label} on 127.0.0.1:" in ln, ln
        servers = {
            env_id: pid
            for pid, (role, env_id, _) in tagged_processes(tag, "DMLC_SERVER_ID").items()
            if role == "server"
        }
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
        ("server 0", "0"),
        ("server 1", "1"),
        ("server 2", "2"),
    ]
