"""``mxrs-launch sge|yarn|slurm``: the dry runs, field by field, and their job scripts run by sh."""

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import mxrs
import pytest
from jobs import TIMEOUT

PYTHON_DIR = str(Path(mxrs.__file__).resolve().parents[1])
# A worker command with spaces and quotes that shows what it got.
SHOW = (
    "import os, sys; print('argv', sys.argv[1:], os.environ['DMLC_ROLE'], "
    "os.environ.get('DMLC_WORKER_ID'), os.environ['A'], os.environ['W'], "
    "os.environ['MXRS_SECRET'])"
)
COMMAND = [sys.executable, "-c", SHOW, "a b", "it's"]


def _launch(tmp_path, launcher, *, n=3, s=2, args=(), dry_run=True, **env):
    full = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    full.update(PYTHONPATH=PYTHON_DIR, MXRS_JOB_DIR=str(tmp_path), **env)
    cmd = [
        sys.executable,
        "-m",
        "mxrs.launcher",
        launcher,
        "-n",
        str(n),
        "-s",
        str(s),
        "--env",
        "A=x y",
        "--env-worker",
        "W=1",
        *args,
        *(["--dry-run"] if dry_run else []),
        "--",
        *COMMAND,
    ]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, env=full
    )


def _dry(tmp_path, launcher, **kw):
    """The dry run's files ({path: text}) and command lines ({label: argv})."""
    r = _launch(tmp_path, launcher, **kw)
    assert r.returncode == 0, r.stderr
    files, runs, current = {}, {}, None
    for line in r.stdout.splitlines():
        if line.startswith("[file]   "):
            files[current].append(line[len("[file]   ") :])
        elif line.startswith("[file] "):
            current = line[len("[file] ") :].removesuffix(" (mode 0600):")
            files[current] = []
        elif " on localhost: " in line:
            label, cmd = line[1:].split("] on localhost: ", 1)
            assert "<secret>" not in cmd  # the secret is on no command line
            runs[label] = shlex.split(cmd)
    assert runs["scheduler"][-2:] == ["-c", "import mxrs"]
    for text in files.values():
        assert "export MXRS_SECRET=<secret>" in text
        assert [ln for ln in text if ln.startswith("export DMLC_PS_ROOT_PORT=")]
    assert not list(tmp_path.glob("mxrs-*"))  # a dry run writes nothing
    return {p: "\n".join(t) + "\n" for p, t in files.items()}, runs, r.stdout


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def _sh(tmp_path, text, **env):
    """Run job script ``text`` (as a dry run shows it) with ``sh``; returns the CompletedProcess."""
    path = tmp_path / "script.sh"
    path.write_text(text.replace("=<secret>\n", "='<secret>'\n"))
    return subprocess.run(
        ["sh", str(path)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **env},
        cwd=tmp_path,
    )


def _shown(role, worker_id):
    return f"argv ['a b', \"it's\"] {role} {worker_id} x y 1 <secret>\n"


def test_sge_dry_run_is_one_blocking_array_job(tmp_path):
    files, runs, _ = _dry(
        tmp_path, "sge", args=["--env-server", "S=2"], MXRS_QSUB_ARGS="-q all.q -l 'h_vmem=4G'"
    )
    ((script, text),) = files.items()
    qsub = runs["sge"]
    assert qsub[0] == "qsub" and _value(qsub, "-sync") == "y" and _value(qsub, "-t") == "1-5"
    assert _value(qsub, "-o") == _value(qsub, "-e") == os.path.dirname(script)
    assert os.path.dirname(os.path.dirname(script)) == str(tmp_path)  # MXRS_JOB_DIR
    assert qsub[-5:] == ["-q", "all.q", "-l", "h_vmem=4G", script]
    assert not any(a in qsub for a in ("-v", "-V"))  # no environment on the command line
    assert "export A='x y'" in text and f"export PYTHONPATH={PYTHON_DIR}" in text
    server = text.split('if [ "$SGE_TASK_ID" -le 2 ]; then\n', 1)[1].split("fi\n", 1)[0]
    assert server.split("\n") == [
        "  export DMLC_SERVER_ID=$((SGE_TASK_ID - 1))",
        "  export DMLC_ROLE=server",
        "  export S=2",
        f"  exec {shlex.quote(sys.executable)} -c 'import mxrs'",
        "",
    ]
    for task, worker_id in ((3, 0), (5, 2)):
        r = _sh(tmp_path, text, SGE_TASK_ID=str(task))
        assert (r.returncode, r.stdout) == (0, _shown("worker", worker_id)), r.stderr
    r = _sh(tmp_path, text, SGE_TASK_ID="")
    assert r.returncode == 2 and "not a task of 1-5" in r.stderr


def test_yarn_dry_run_is_two_distributed_shell_applications(tmp_path):
    jar_dir = tmp_path / "hadoop" / "share" / "hadoop" / "yarn"
    jar_dir.mkdir(parents=True)
    jar = jar_dir / "hadoop-yarn-applications-distributedshell-3.3.6.jar"
    jar.write_bytes(b"")
    files, runs, _ = _dry(
        tmp_path,
        "yarn",
        HADOOP_HOME=str(tmp_path / "hadoop"),
        MXRS_YARN_MEMORY="2048",
        MXRS_YARN_VCORES="2",
    )
    for role, count in (("server", "2"), ("worker", "3")):
        argv = runs[f"yarn {role}s"]
        assert argv[:4] == [
            "yarn",
            "jar",
            str(jar),
            "org.apache.hadoop.yarn.applications.distributedshell.Client",
        ]
        assert _value(argv, "-jar") == str(jar)
        assert _value(argv, "-num_containers") == count
        assert _value(argv, "-container_memory") == "2048"
        assert _value(argv, "-container_vcores") == "2"
        assert "-shell_env" not in argv
        script = _value(argv, "-shell_script")
        assert script.endswith(f"/{role}.sh") and script in files
        assert f"export DMLC_ROLE={role}" in files[script]
    text = files[_value(runs["yarn workers"], "-shell_script")]
    r = _sh(tmp_path, text)  # no rank: the scheduler gives each worker its own
    assert (r.returncode, r.stdout) == (0, _shown("worker", None)), r.stderr


def test_slurm_outside_an_allocation_submits_a_batch_script_that_waits(tmp_path):
    files, runs, _ = _dry(tmp_path, "slurm", MXRS_SBATCH_ARGS="-p gpu")
    ((script, text),) = files.items()
    argv = runs["slurm"]
    assert argv[:2] == ["sbatch", "--wait"] and "--ntasks=5" in argv and "--export=ALL" in argv
    assert argv[-3:] == ["-p", "gpu", script]
    assert f"--output={os.path.dirname(script)}/slurm-%j.out" in argv
    # Run the script with a stand-in srun that starts --ntasks copies with SLURM_PROCID set.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "srun"
    fake.write_text(
        '#!/bin/sh\nn=1\nwhile [ "${1#-}" != "$1" ]; do\n'
        '  case "$1" in --ntasks=*) n=${1#--ntasks=};; esac\n  shift\ndone\n'
        'if [ "$DMLC_ROLE" = server ]; then echo "servers $n $*"; exit 0; fi\n'
        'i=0\nwhile [ $i -lt $n ]; do SLURM_PROCID=$i "$@" || exit $?; '
        "i=$((i + 1)); done\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    text = text.replace("export PATH=", f"export PATH={bin_dir}:", 1)
    r = _sh(tmp_path, text)
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.splitlines(keepends=True))
    assert lines == sorted(
        [f"servers 2 {sys.executable} -c import mxrs\n", *(_shown("worker", i) for i in range(3))]
    ), r.stdout


def test_slurm_inside_an_allocation_runs_two_srun_steps(tmp_path):
    _, runs, out = _dry(tmp_path, "slurm", SLURM_JOB_ID="42", MXRS_SRUN_ARGS="--overlap")
    servers, workers = runs["servers"], runs["workers"]
    assert servers[:3] == ["srun", "--ntasks=2", "--export=ALL"]
    assert workers[:3] == ["srun", "--ntasks=3", "--export=ALL"]
    assert "--overlap" in servers and "--overlap" in workers
    assert workers[workers.index("--") - 2 :] == ["-m", "mxrs.launcher.mpi_rank", "--", *COMMAND]
    assert servers[-2:] == ["-c", "import mxrs"]
    assert "[workers]   env: MXRS_SECRET=<secret>" in out.splitlines()
    assert "[workers]   env: W=1" in out.splitlines()
    assert "[servers]   env: DMLC_ROLE=server" in out.splitlines()


@pytest.mark.parametrize("launcher, tool", [("sge", "qsub"), ("slurm", "sbatch"), ("yarn", "yarn")])
def test_a_missing_tool_is_a_one_line_error(tmp_path, launcher, tool):
    r = _launch(tmp_path, launcher, dry_run=False, PATH=str(tmp_path), HADOOP_HOME="")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"mxrs-launch: the {launcher} launcher needs '{tool}'"), line
    assert not list(tmp_path.glob("mxrs-*"))


def test_a_real_slurm_job_through_stand_in_sbatch_and_srun(tmp_path):
    """sbatch runs the written script (0600, removed afterwards); srun starts its tasks."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (
        (
            "sbatch",
            'for a; do script=$a; done\nstat -c "script mode %a" "$script"\nexec sh "$script"\n',
        ),
        (
            "srun",
            'n=1\nwhile [ "${1#-}" != "$1" ]; do\n'
            '  case "$1" in --ntasks=*) n=${1#--ntasks=};; esac\n  shift\ndone\n'
            'i=0\nwhile [ $i -lt $n ]; do SLURM_PROCID=$i "$@" & i=$((i + 1)); done\n'
            "status=0\nfor p in $(jobs -p); do wait $p || status=1; done\n"
            "exit $status\n",
        ),
    ):
        (bin_dir / name).write_text("#!/bin/sh\n" + text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "worker.py").write_text(
        "import mxrs as mx\nkv = mx.kv.create('dist_sync')\nkv.init(1, mx.nd.zeros((2,)))\n"
        "kv.push(1, mx.nd.ones((2,)))\nout = mx.nd.zeros((2,))\nkv.pull(1, out=out)\n"
        "import sys\nsys.stdout.write(f'rank {kv.rank} {out.asnumpy().tolist()}\\n')\n"
    )
    full = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    full.update(
        PYTHONPATH=PYTHON_DIR, MXRS_JOB_DIR=str(tmp_path), PATH=f"{bin_dir}:{os.environ['PATH']}"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "slurm",
            "-n",
            "2",
            "-s",
            "2",
            "--interface",
            "lo",
            sys.executable,
            "worker.py",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env=full,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "[slurm] script mode 600" in lines, r.stdout
    assert {"[slurm] rank 0 [2.0, 2.0]", "[slurm] rank 1 [2.0, 2.0]"} <= set(lines), r.stdout
    assert list(tmp_path.glob("mxrs-slurm-*")) == []  # the script is gone, and its folder
