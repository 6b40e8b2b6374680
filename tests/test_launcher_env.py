"""``mxrs-launch`` and variables that would clash between the processes of a job: the metrics
port from ``MXRS_METRICS_PORT``, per-node variables, ``MXRS_PORT``, ``MXRS_TIMELINE``, and ports
already in use, named before anything starts."""

import os
import socket
import subprocess
import sys

import pytest
from jobs import free_ports, launch
from mxrs.launcher import clashes, local, mpi, slurm, tracker
from mxrs.launcher.cli import parse
from mxrs.launcher.job import LaunchError

TIMEOUT = 60
JOB = ["local", "-n", "2", "-s", "2", "python", "train.py"]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """Start every test from an environment that sets none of the variables under test."""
    for name in (*clashes.RULES, "MXRS_TIMELINE"):
        monkeypatch.delenv(name, raising=False)


def _error(capsys, argv):
    """The message of the parse error ``argv`` makes (it must make one, with exit status 2)."""
    with pytest.raises(SystemExit) as e:
        parse(argv)
    assert e.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def _metrics(envs):
    return [env.get("MXRS_METRICS_PORT") for env in envs]


# --- MXRS_METRICS_PORT means --metrics-port ---------------------------------------------------


def test_the_variable_in_the_environment_is_the_metrics_port(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", "9100")
    _, job, _ = parse(JOB)
    assert job.metrics_port == 9100
    assert "MXRS_METRICS_PORT" not in job.extra_env


def test_the_variable_in_env_is_the_metrics_port_and_no_process_gets_it_as_it_is(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", "9100")
    _, job, _ = parse(["local", "-n", "2", "-s", "2", "--env", "MXRS_METRICS_PORT=9200", "py"])
    assert job.metrics_port == 9200  # --env comes before the launcher's own environment
    assert "MXRS_METRICS_PORT" not in job.extra_env
    assert _metrics(n.env for n in job.nodes()) == ["9200", "9201", "9202", None, None]


@pytest.mark.parametrize("given", ["env", "environment"])
def test_an_explicit_metrics_port_wins_over_the_variable(monkeypatch, given):
    argv = ["local", "-n", "2", "-s", "2", "--metrics-port", "8000"]
    for value in ("9100", "not-a-port"):
        if given == "env":
            args = [*argv, "--env", f"MXRS_METRICS_PORT={value}", "py"]
        else:
            monkeypatch.setenv("MXRS_METRICS_PORT", value)
            args = [*argv, "py"]
        _, job, _ = parse(args)
        assert job.metrics_port == 8000
        assert "MXRS_METRICS_PORT" not in job.extra_env
        assert _metrics(n.env for n in job.nodes())[:3] == ["8000", "8001", "8002"]


def test_an_empty_variable_is_no_metrics_port(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", " ")
    assert parse(JOB)[1].metrics_port is None


@pytest.mark.parametrize("value", ["not-a-port", "-1", "9100.5", "70000", "65533"])
@pytest.mark.parametrize("given", ["env", "environment"])
def test_a_bad_variable_is_an_error_naming_it(monkeypatch, capsys, value, given):
    if given == "env":
        said = _error(
            capsys, ["local", "-n", "2", "-s", "2", "--env", f"MXRS_METRICS_PORT={value}", "py"]
        )
        assert said.startswith(f"mxrs-launch: error: --env MXRS_METRICS_PORT={value}: "), said
    else:
        monkeypatch.setenv("MXRS_METRICS_PORT", value)
        said = _error(capsys, JOB)
        assert said.startswith(
            f"mxrs-launch: error: MXRS_METRICS_PORT={value} (in mxrs-launch's environment): "
        ), said
    # 65533 leaves no room for two servers: P+2 would be 65535 + 1.
    assert (
        "expected a port P, 0-65532, that leaves room for the scheduler (P) and 2 servers" in said
    )


def test_the_highest_port_that_leaves_room_is_taken(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", "65532")
    assert parse(JOB)[1].metrics_port == 65532


def test_metrics_per_role_is_refused(capsys):
    for flag in ("--env-server", "--env-worker"):
        said = _error(capsys, ["local", "-n", "2", flag, "MXRS_METRICS_PORT=9100", "py"])
        assert f"{flag} MXRS_METRICS_PORT: use --metrics-port P" in said, said


# --- the environment of each node ---------------------------------------------------------------


def test_scheduler_and_servers_get_their_own_ports_and_workers_none(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", "9100")
    _, job, _ = parse(JOB)
    nodes = job.nodes()
    assert [n.label for n in nodes] == ["scheduler", "server 0", "server 1", "worker 0", "worker 1"]
    assert _metrics(n.env for n in nodes) == ["9100", "9101", "9102", None, None]
    # As the local launcher starts them: the launcher's environment (which has the variable)
    # under each node's own.
    job.root_port = 12345
    assert tracker.scheduler_launch(job).env["MXRS_METRICS_PORT"] == "9100"
    launches = local.launches(job)
    assert [la.label for la in launches] == [n.label for n in nodes[1:]]
    assert _metrics(la.env for la in launches) == ["9101", "9102", None, None]
    assert all(la.env["DMLC_NODE_HOST"] == "127.0.0.1" for la in launches)


def test_batch_launchers_pass_no_metrics_port_to_workers(monkeypatch):
    monkeypatch.setenv("MXRS_METRICS_PORT", "9100")
    _, job, _ = parse(["slurm", "-n", "2", "-s", "2", "py"])
    assert job.metrics_port == 9100
    # Servers' ranks are known only once they run: each takes any free port (and says where).
    for launches in (slurm.step_launches(job), mpi.launches(job, "openmpi", "hostfile")):
        assert [la.role for la in launches] == ["server", "worker"]
        assert _metrics(la.env for la in launches) == ["0", None]


def test_a_command_that_starts_a_whole_role_counts_its_processes():
    # They fail together: the launcher ends the job when such a command fails, even with
    # backups of the servers' keys (tests/test_launcher_mpi.py runs it).
    _, job, _ = parse(["slurm", "-n", "3", "-s", "2", "py"])
    for launches in (slurm.step_launches(job), mpi.launches(job, "openmpi", "hostfile")):
        assert [(la.role, la.count) for la in launches] == [("server", 2), ("worker", 3)]
    assert all(la.count == 1 for la in local.launches(job))


def test_per_node_variables_are_never_inherited(monkeypatch):
    for name, value in (
        ("DMLC_ROLE", "worker"),
        ("DMLC_WORKER_ID", "7"),
        ("DMLC_SERVER_ID", "3"),
        ("DMLC_NODE_HOST", "10.0.0.9"),
        ("MXRS_ANNOUNCE", "/tmp/nowhere"),
        ("KEEP_ME", "yes"),
    ):
        monkeypatch.setenv(name, value)
    _, job, _ = parse(JOB)
    job.root_port = 12345
    sched = tracker.scheduler_launch(job).env
    assert sched["DMLC_ROLE"] == "scheduler" and sched["KEEP_ME"] == "yes"
    assert not {"DMLC_WORKER_ID", "DMLC_SERVER_ID", "MXRS_ANNOUNCE"} & set(sched)
    envs = {la.label: la.env for la in local.launches(job)}
    for i in range(2):
        server, worker = envs[f"server {i}"], envs[f"worker {i}"]
        assert (server["DMLC_ROLE"], server["DMLC_SERVER_ID"]) == ("server", str(i))
        assert (worker["DMLC_ROLE"], worker["DMLC_WORKER_ID"]) == ("worker", str(i))
        assert "DMLC_WORKER_ID" not in server and "DMLC_SERVER_ID" not in worker
        for env in (server, worker):
            assert env["DMLC_NODE_HOST"] == "127.0.0.1" and env["KEEP_ME"] == "yes"
            assert "MXRS_ANNOUNCE" not in env
    for launches in (slurm.step_launches(job), mpi.launches(job, "openmpi", "hostfile")):
        for la in launches:
            assert la.env["DMLC_ROLE"] == la.role
            assert not {"DMLC_WORKER_ID", "DMLC_SERVER_ID", "DMLC_NODE_HOST"} & set(la.env)


@pytest.mark.parametrize("flag", ["--env", "--env-server", "--env-worker"])
@pytest.mark.parametrize(
    "name", ["DMLC_ROLE", "DMLC_WORKER_ID", "DMLC_SERVER_ID", "DMLC_NODE_HOST", "MXRS_ANNOUNCE"]
)
def test_per_node_variables_given_to_every_process_are_refused(capsys, flag, name):
    said = _error(capsys, ["local", "-n", "2", flag, f"{name}=1", "py"])
    assert said.startswith(f"mxrs-launch: error: {flag} {name}: mxrs-launch sets "), said
    hint = "; --interface IFACE chooses the network" if name == "DMLC_NODE_HOST" else ""
    assert said.endswith(f"for each process itself; every process would get the same value{hint}")


# --- MXRS_PORT: one fixed port for every server ---------------------------------------------------


def test_mxrs_port_in_the_environment_with_two_local_servers_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("MXRS_PORT", "7000")
    said = _error(capsys, JOB)
    assert said == (
        "mxrs-launch: error: MXRS_PORT=7000 (from mxrs-launch's environment) is the port every "
        "server listens on, and the local launcher runs all 2 servers on this machine: the "
        "second to bind it would fail with 'Address already in use'. Unset it (each server then "
        "takes a free port and the scheduler tells the workers), or run one server per machine"
    )


def test_mxrs_port_is_refused_only_where_two_servers_may_share_a_machine(
    monkeypatch, capsys, tmp_path
):
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("a\n")
    two.write_text("a\nb\n")
    ok = (
        ["local", "-n", "2", "-s", "1", "--env", "MXRS_PORT=7000", "py"],
        ["local", "-n", "2", "-s", "2", "--env", "MXRS_PORT=0", "py"],  # any free port each
        ["local", "-n", "2", "-s", "2", "--env-worker", "MXRS_PORT=7000", "py"],  # unused
        ["ssh", "-n", "2", "-s", "2", "-H", str(two), "--env", "MXRS_PORT=7000", "py"],
        # every pod has an address of its own
        ["kubernetes", "--image", "i", "-n", "2", "-s", "2", "--env", "MXRS_PORT=7000", "py"],
    )
    for argv in ok:
        parse(argv)
    for argv, where in (
        (["local", "-n", "2", "--env-server", "MXRS_PORT=7000", "py"], "this machine"),
        (["ssh", "-n", "2", "-s", "2", "-H", str(one), "--env", "MXRS_PORT=7000", "py"], "on a"),
        (["slurm", "-n", "2", "-s", "2", "--env", "MXRS_PORT=7000", "py"], "Slurm places"),
        (["sge", "-n", "2", "-s", "2", "--env", "MXRS_PORT=7000", "py"], "SGE places"),
    ):
        said = _error(capsys, argv)
        assert "MXRS_PORT=7000 (from --env" in said and where in said, said
    # The ssh launcher passes its nodes no variable of its own environment: nothing clashes.
    monkeypatch.setenv("MXRS_PORT", "7000")
    parse(["ssh", "-n", "2", "-s", "2", "-H", str(one), "py"])
    said = _error(capsys, ["mpi", "-n", "2", "-s", "2", "-H", str(two), "py"])
    assert "(from mxrs-launch's environment)" in said and "mpirun places the 2 servers" in said


# --- MXRS_TIMELINE: one file per worker ----------------------------------------------------------


def test_a_timeline_for_every_worker_by_role_gets_a_file_per_worker():
    _, job, _ = parse(["local", "-n", "2", "--env-worker", "MXRS_TIMELINE=t.json", "py"])
    paths = [n.env.get("MXRS_TIMELINE") for n in job.nodes() if n.role == "worker"]
    target = os.path.abspath("t.json")
    assert paths == [f"{target}.parts/worker0.json", f"{target}.parts/worker1.json"]


@pytest.mark.parametrize("launcher", ["mpi", "sge", "yarn", "slurm"])
def test_a_timeline_under_a_batch_launcher_is_refused(capsys, launcher, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("a\n")
    said = _error(
        capsys, [launcher, "-n", "2", "-H", str(hosts), "--env", "MXRS_TIMELINE=t.json", "py"]
    )
    assert f"the {launcher} launcher starts every worker with the same settings" in said, said
    assert "use the local or ssh launcher for a timeline, or unset MXRS_TIMELINE" in said


# --- ports already in use, before anything starts --------------------------------------------


def test_ports_two_nodes_would_share_are_named():
    _, job, _ = parse(
        ["local", "-n", "1", "-s", "1", "--metrics-port", "9100", "--env", "MXRS_PORT=9101", "py"]
    )
    assert clashes.planned_ports(job) == [
        (9100, "the scheduler's metrics"),
        (9101, "server 0's metrics"),
        (9101, "server 0's port"),
    ]
    with pytest.raises(
        LaunchError, match="^port 9101 would be both server 0's metrics and server 0's port$"
    ):
        clashes.check_free_ports(job, "127.0.0.1")


def test_a_port_in_use_is_named_before_the_job_starts(tmp_path):
    base = free_ports(3)
    marker = tmp_path / "worker-ran"
    script = tmp_path / "w.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    env = {**os.environ, "MXRS_METRICS_PORT": str(base)}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        r = subprocess.run(
            [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2"]
            + [sys.executable, str(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (
        f"mxrs-launch: port {base + 1} (server 0's metrics) is already in use on 127.0.0.1; "
        "choose another --metrics-port\n"
    )
    assert r.stdout == ""  # no node said anything: none was started
    assert not marker.exists()


def test_free_ports_pass_the_check():
    base = free_ports(3)
    _, job, _ = parse(["local", "-n", "2", "-s", "2", "--metrics-port", str(base), "py"])
    clashes.check_free_ports(job, "127.0.0.1")


# --- a real job with MXRS_METRICS_PORT in the launcher's environment -----------------------------

SCRAPER = """
import os
import urllib.request
import mxrs as mx

assert "MXRS_METRICS_PORT" not in os.environ, os.environ["MXRS_METRICS_PORT"]
kv = mx.kv.create("dist_sync")
kv.init(3, mx.nd.zeros((4,)))
out = mx.nd.zeros((4,))
kv.pushpull(3, mx.nd.ones((4,)), out=out)
assert out.asnumpy().tolist() == [2.0] * 4, out.asnumpy()
kv.barrier()
if kv.rank == 0:
    base = int(os.environ["METRICS_BASE"])
    for port, name in ((base, "mxrs_nodes"), (base + 1, "mxrs_rounds_completed_total")):
        url = f"http://127.0.0.1:{port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        assert name in text, (url, text[:500])
    print("scraped", base, flush=True)
kv.barrier()
"""


def test_a_job_with_the_variable_in_the_launchers_environment(tmp_path, monkeypatch):
    base = free_ports(3)
    monkeypatch.setenv("MXRS_METRICS_PORT", str(base))  # the launcher inherits it
    r = launch(tmp_path, SCRAPER, n=2, s=2, env=[f"METRICS_BASE={base}"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[worker 0] scraped {base}" in r.stdout, r.stdout
    assert f"metrics at http://127.0.0.1:{base}/metrics (scheduler)" in r.stderr, r.stderr
    for i in range(2):
        where = f"mxrs: metrics of server {i} at http://127.0.0.1:{base + 1 + i}/metrics"
        assert where in r.stdout, r.stdout
