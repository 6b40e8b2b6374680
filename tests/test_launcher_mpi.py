"""``mxrs-launch mpi``: a real job under Open MPI on 127.0.0.1, and MPICH's spelling."""

import os
import shlex
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import mxrs
import pytest
from jobs import TIMEOUT, run_launcher, tagged_processes
from mxrs.launcher import mpi_rank

PYTHON_DIR = str(Path(mxrs.__file__).resolve().parents[1])


def _run(tmp_path, args, command, **env):
    (tmp_path / "hosts").write_text("127.0.0.1 slots=4\n")
    full = {
        **os.environ,
        "PYTHONPATH": PYTHON_DIR,
        "MXRS_MPIRUN_ARGS": "--allow-run-as-root --oversubscribe",
        **env,
    }
    cmd = [sys.executable, "-m", "mxrs.launcher", "mpi", "-H", "hosts", *args, "--", *command]
    return run_launcher(cmd, cwd=tmp_path, env=full)


def test_a_dist_sync_job_runs_under_open_mpi_with_mpi_ranks_as_worker_ids(tmp_path):
    (tmp_path / "worker.py").write_text(
        textwrap.dedent("""
        import os
        import sys
        import mxrs as mx
        kv = mx.kv.create('dist_sync')
        kv.init(7, mx.nd.zeros((3,)))
        kv.push(7, mx.nd.ones((3,)) * (kv.rank + 1))
        out = mx.nd.zeros((3,))
        kv.pull(7, out=out)
        # one write per line: mpirun merges every rank's output into one stream
        sys.stdout.write(f"rank {kv.rank} of {kv.num_workers} servers {kv.num_servers} id "
                         f"{os.environ['DMLC_WORKER_ID']} {os.environ['GREETING']} "
                         f"{out.asnumpy().tolist()}\\n")
        sys.stdout.flush()
        """)
    )
    r = _run(
        tmp_path,
        ["-n", "2", "-s", "2", "--interface", "lo", "--env", "GREETING=hello"],
        [sys.executable, "worker.py"],
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in (0, 1):  # tagged with its MPI rank; the sum of both workers' pushes
        assert (
            f",{rank}]<stdout>:rank {rank} of 2 servers 2 id {rank} hello [3.0, 3.0, 3.0]"
            in r.stdout
        ), r.stdout


def test_a_failing_worker_fails_the_job_and_no_process_is_left(tmp_path):
    tag = uuid.uuid4().hex
    (tmp_path / "worker.py").write_text(
        textwrap.dedent("""
        import sys
        import mxrs as mx
        kv = mx.kv.create('dist_sync')
        if kv.rank == 1:
            sys.exit(5)
        kv.barrier()  # never completes: the launcher must stop this process
        """)
    )
    r = _run(
        tmp_path,
        ["-n", "2", "-s", "1", "--interface", "lo", "--env", f"MXRS_TEST_TAG={tag}"],
        [sys.executable, "worker.py"],
        PS_HEARTBEAT_TIMEOUT="600",
    )
    assert r.returncode != 0, r.stdout + r.stderr
    assert "mxrs-launch: workers failed with exit status" in r.stderr, r.stderr
    assert tagged_processes(tag) == {}


def test_servers_that_fail_as_they_start_end_the_job_though_keys_have_backups(tmp_path):
    # One mpirun starts every server: when it fails, no server is left to serve a backup (the
    # job could not even form), so the job ends at once with its status.
    tag = uuid.uuid4().hex
    (tmp_path / "worker.py").write_text("import mxrs as mx\nmx.kv.create('dist_sync')\n")
    r = _run(
        tmp_path,
        ["-n", "2", "-s", "2", "--replicas", "1", "--interface", "lo"]
        + ["--env", f"MXRS_TEST_TAG={tag}", "--env-server", "PS_HEARTBEAT_TIMEOUT=soon"],
        [sys.executable, "worker.py"],
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "mxrs-launch: servers failed with exit status 2; stopping the job" in r.stderr
    assert "served by their backups" not in r.stderr
    # the server's reason, as one line of each server's tagged output
    assert "<stderr>:mxrs server: PS_HEARTBEAT_TIMEOUT: 'soon' is not a valid number" in r.stdout
    assert tagged_processes(tag) == {}


def _dry(tmp_path, flavor):
    r = _run(
        tmp_path,
        ["-n", "3", "-s", "2", "--env", "K=v w", "--dry-run"],
        ["python", "my train.py", "--tag", "it's"],
        MXRS_MPI_FLAVOR=flavor,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    secret_lines = [ln for ln in lines if "MXRS_SECRET=" in ln]
    assert secret_lines and all(ln.endswith("MXRS_SECRET=<secret>") for ln in secret_lines)
    runs = {ln.split("]", 1)[0][1:]: ln.split(": ", 1)[1] for ln in lines if " on " in ln}
    return lines, {label: shlex.split(cmd) for label, cmd in runs.items()}


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_open_mpi_dry_run_passes_the_environment_by_name(tmp_path):
    lines, runs = _dry(tmp_path, "openmpi")
    servers, workers = runs["servers"], runs["workers"]
    assert servers[:3] == ["mpirun", "--allow-run-as-root", "--oversubscribe"]
    assert _value(servers, "-n") == "2" and _value(workers, "-n") == "3"
    hostfile = _value(workers, "--hostfile")
    assert f"[file] {hostfile} (mode 0600):" in lines and "[file]   127.0.0.1 slots=4" in lines
    names = {argv[i + 1] for argv in (workers,) for i, a in enumerate(argv) if a == "-x"}
    assert {"MXRS_SECRET", "DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_NUM_WORKER", "K"} <= names
    assert not any("=" in n for n in names)  # names only: the values stay in mpirun's env
    assert workers[-7:] == [
        "-m",
        "mxrs.launcher.mpi_rank",
        "--",
        "python",
        "my train.py",
        "--tag",
        "it's",
    ]
    assert servers[-2:] == ["-c", "import mxrs"]
    assert "[workers]   env: K=v w" in lines and "[servers]   env: DMLC_ROLE=server" in lines


def test_mpich_dry_run_uses_genvlist_and_its_hostfile_format(tmp_path):
    lines, runs = _dry(tmp_path, "mpich")
    workers = runs["workers"]
    assert "-x" not in workers and "--hostfile" not in workers
    names = _value(workers, "-genvlist").split(",")
    assert {"MXRS_SECRET", "DMLC_ROLE", "K"} <= set(names)
    assert _value(workers, "-n") == "3" and _value(runs["servers"], "-n") == "2"
    assert f"[file] {_value(workers, '-f')} (mode 0600):" in lines
    assert "[file]   127.0.0.1:4" in lines
    assert workers[workers.index("--") + 1 :] == ["python", "my train.py", "--tag", "it's"]


def test_mpi_needs_a_hostfile_and_a_known_flavor(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "mxrs.launcher", "mpi", "-n", "1", "python"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 2 and "needs -H/--hostfile" in r.stderr
    r = _run(tmp_path, ["-n", "1", "--dry-run"], ["python"], MXRS_MPI_FLAVOR="lam")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "mxrs-launch: MXRS_MPI_FLAVOR=lam: expected one of openmpi, mpich"
    ]


@pytest.mark.parametrize("var", mpi_rank.RANK_VARS)
def test_the_rank_shim_takes_the_rank_from_mpi_or_slurm(var):
    env = {k: v for k, v in os.environ.items() if k not in mpi_rank.RANK_VARS}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxrs.launcher.mpi_rank",
            "--",
            sys.executable,
            "-c",
            "import os; print(os.environ['DMLC_WORKER_ID'])",
        ],
        env={**env, var: "3", "PYTHONPATH": PYTHON_DIR},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr
    assert mpi_rank.rank({}) is None
    with pytest.raises(ValueError):
        mpi_rank.rank({var: "x"})


def test_the_rank_shim_shares_the_cores_among_the_local_processes():
    assert mpi_rank.thread_env({"OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, 16) == {
        "OMP_NUM_THREADS": "4",
        "OPENBLAS_NUM_THREADS": "4",
        "MKL_NUM_THREADS": "4",
    }
    assert mpi_rank.thread_env({"MPI_LOCALNRANKS": "3"}, 2)["OMP_NUM_THREADS"] == "1"
    # a count the user set is kept, and without a local size nothing is guessed
    assert "OMP_NUM_THREADS" not in mpi_rank.thread_env(
        {"PMIX_LOCAL_SIZE": "2", "OMP_NUM_THREADS": "8"}, 16
    )
    assert mpi_rank.thread_env({}, 16) == {}


def test_open_mpis_session_directory_is_kept_while_the_two_mpiruns_start(tmp_path):
    """Each Open MPI 4 mpirun, as it starts, deletes the files in its session directory and
    removes it if that leaves it empty; the other mpirun, starting meanwhile, then fails to
    make its own in it. A folder of the launcher's in it keeps it, and goes with the job."""
    import socket

    from mxrs.launcher import mpi

    host = socket.gethostname().split(".")[0]
    top = tmp_path / f"ompi.{host}.{os.getuid()}"
    (top / "pid.1").mkdir(parents=True)  # another job's: left as it is
    (top / "mxrs-launch.1").mkdir()  # a running launcher's (pid 1 is alive): left as it is
    gone = subprocess.Popen(["true"])
    gone.wait()
    (top / f"mxrs-launch.{gone.pid}").mkdir()  # a killed launcher's: removed
    with mpi.session_kept(str(tmp_path)) as keeper:
        assert keeper == str(top / f"mxrs-launch.{os.getpid()}")
        assert (os.stat(keeper).st_mode & 0o777) == 0o700
        # What an mpirun does as it starts, when nothing else keeps the directory:
        subprocess.run(
            ["mpirun", "--allow-run-as-root", "-n", "1", "true"],
            check=True,
            timeout=TIMEOUT,
            env={**os.environ, "TMPDIR": str(tmp_path)},
        )
        assert os.path.isdir(keeper)
    assert sorted(p.name for p in top.iterdir()) == ["mxrs-launch.1", "pid.1"]
    # Made here when missing, private to the user.
    with mpi.session_kept(str(tmp_path / "fresh")) as keeper:
        made = tmp_path / "fresh" / f"ompi.{host}.{os.getuid()}"
        assert keeper is not None and (os.stat(made).st_mode & 0o777) == 0o700
    # Where it cannot be made, mpirun is left to say why.
    (tmp_path / "a-file").write_text("")
    with mpi.session_kept(str(tmp_path / "a-file")) as keeper:
        assert keeper is None
