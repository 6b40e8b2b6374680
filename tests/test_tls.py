"""Mutual TLS on every link of a job (``mxrs-launch --tls``, ``MXRS_TLS_*``): the numbers are
those of a job without it, and a node without the job's certificates is refused with a clear
error while the job goes on."""

import os
import subprocess
import sys
import textwrap

import pytest
from jobs import TIMEOUT, job_nodes, launch, node_env
from mxrs.launcher import tls

# Two workers push known values for three rounds and train a Dense layer on fixed data; each
# prints what it pulled and the layer's weights.
TRAIN = """
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

kv = mx.kv.create('dist_sync')
kv.init(3, mx.nd.zeros((5,)))
out = mx.nd.zeros((5,))
for r in range(3):
    kv.push(3, mx.nd.arange(5) * (kv.rank + 1) + r)
    kv.pull(3, out=out)
print('pulled', out.asnumpy().tolist(), flush=True)

mx.random.seed(7)
net = gluon.nn.Dense(3, in_units=4)
net.initialize(mx.init.Xavier())
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1}, kvstore=kv)
rng = np.random.RandomState(kv.rank)
x = mx.nd.array(rng.rand(8, 4))
y = mx.nd.array(rng.randint(0, 3, 8))
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for _ in range(4):
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(8)
print('weights', net.weight.data().asnumpy().round(6).tolist(), flush=True)
"""


def _results(stdout, what):
    tag = f"] {what} "
    return sorted(line.split(tag, 1)[1] for line in stdout.splitlines() if tag in line)


def test_a_job_with_tls_trains_to_the_numbers_of_one_without(tmp_path):
    plain = launch(tmp_path, TRAIN)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    secure = launch(tmp_path, TRAIN, launcher_args=["--tls"])
    assert secure.returncode == 0, secure.stdout + secure.stderr
    for what in ("pulled", "weights"):
        assert len(_results(secure.stdout, what)) == 2, secure.stdout
        assert _results(secure.stdout, what) == _results(plain.stdout, what)
    # Every value pulled is the round's sum over both workers: arange(5) * 3 + 2 * 2.
    assert _results(secure.stdout, "pulled")[0] == "[4.0, 7.0, 10.0, 13.0, 16.0]"


def test_the_nodes_get_files_only_this_user_reads_and_they_go_with_the_job(tmp_path):
    script = """
    import os, stat
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    paths = [os.environ[v] for v in ('MXRS_TLS_CERT', 'MXRS_TLS_KEY', 'MXRS_TLS_CA')]
    modes = sorted({oct(stat.S_IMODE(os.stat(p).st_mode)) for p in paths})
    folder = oct(stat.S_IMODE(os.stat(os.path.dirname(paths[0])).st_mode))
    print('files', os.path.dirname(paths[0]), modes, folder, flush=True)
    print('own', kv.rank, os.path.basename(paths[0]), open(paths[0]).read().count('BEGIN'),
          flush=True)
    """
    r = launch(tmp_path, script, launcher_args=["--tls"])
    assert r.returncode == 0, r.stdout + r.stderr
    lines = _results(r.stdout, "files")
    assert len(lines) == 2, r.stdout
    folder = lines[0].split()[0]
    assert lines[0].endswith("['0o600'] 0o700"), lines
    # Each worker has a certificate of its own.
    assert _results(r.stdout, "own") == ["0 worker-0.pem 1", "1 worker-1.pem 1"]
    assert not os.path.exists(folder)


def _write(directory, material, role):
    """``material``'s files for ``role`` in ``directory``: the MXRS_TLS_* of such a node."""
    material.write(str(directory))
    return material.env(role)


def _worker(port, env_over, code):
    env = node_env("worker", port)
    for k in ("MXRS_TLS_CERT", "MXRS_TLS_KEY", "MXRS_TLS_CA"):
        env.pop(k, None)
    env.update(env_over)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


INTRUDER = """
import mxrs as mx
try:
    mx.kv.create('dist_sync')
except mx.base.MXNetError as e:
    print(type(e).__name__, e, flush=True)
else:
    print('joined', flush=True)
"""


def test_a_node_without_the_jobs_certificates_is_refused_and_the_job_goes_on(tmp_path):
    job = _write(tmp_path / "job", tls.make(["servers", "workers"]), "servers")
    other = tls.make(["workers"])
    with job_nodes(workers=2, servers=2, **job) as (port, procs):
        intruders = {
            "plain": _worker(port, {}, INTRUDER),
            "another job's": _worker(port, _write(tmp_path / "other", other, "workers"), INTRUDER),
        }
        seen = {k: p.communicate(timeout=TIMEOUT) for k, p in intruders.items()}
        assert seen["plain"][0].startswith("AuthenticationError"), seen
        assert "requires TLS" in seen["plain"][0], seen
        assert seen["another job's"][0].startswith("AuthenticationError"), seen
        assert "UnknownIssuer" in seen["another job's"][0], seen
        # The job's own workers form the job and train on it.
        mine = {**_role(tmp_path / "job", "workers")}
        workers = [_worker(port, {**mine, "DMLC_WORKER_ID": str(i)}, TRAIN) for i in range(2)]
        outs = [w.communicate(timeout=TIMEOUT) for w in workers]
        for w, (out, err) in zip(workers, outs, strict=True):
            assert w.returncode == 0, out + err
            assert "pulled [4.0, 7.0, 10.0, 13.0, 16.0]" in out, out + err
        for p in procs:
            assert p.wait(timeout=TIMEOUT) == 0


def _role(directory, role):
    return {
        "MXRS_TLS_CERT": str(directory / f"{role}.pem"),
        "MXRS_TLS_KEY": str(directory / f"{role}-key.pem"),
        "MXRS_TLS_CA": str(directory / "ca.pem"),
    }


def test_a_node_given_part_of_the_tls_settings_says_what_is_missing(tmp_path):
    material = tls.make(["workers"])
    env = _write(tmp_path, material, "workers")
    p = _worker(1, {"MXRS_TLS_CERT": env["MXRS_TLS_CERT"]}, INTRUDER)
    out, err = p.communicate(timeout=TIMEOUT)
    assert "MXRS_TLS_KEY and MXRS_TLS_CA" in out + err, out + err
    # A key file that cannot be read is named with the variable.
    p = _worker(1, {**env, "MXRS_TLS_KEY": str(tmp_path / "missing.pem")}, INTRUDER)
    out, err = p.communicate(timeout=TIMEOUT)
    assert "MXRS_TLS_KEY" in out + err and "missing.pem" in out + err, out + err


def test_a_dry_run_shows_no_private_key(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("10.0.0.5\n10.0.0.6\n")
    r = subprocess.run(
        [sys.executable, "-m", "mxrs.launcher", "ssh", "-H", str(hosts), "-n", "2", "--tls"]
        + ["--dry-run", sys.executable, "train.py"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stderr
    assert "PRIVATE KEY" not in r.stdout
    assert "MXRS_TLS_KEY=<secret>" in r.stdout
    # Certificates travel inline, on one line, to hosts that cannot read this one's files.
    assert "MXRS_TLS_CERT=-----BEGIN CERTIFICATE-----\\n" in r.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tls-days", "3"], "--tls-days needs --tls"),
        (["--tls", "--tls-days", "0"], "--tls-days must be above 0"),
        (["--tls", "--env", "MXRS_TLS_CA=/x.pem"], "give no MXRS_TLS_* with --env"),
    ],
)
def test_bad_tls_options_are_refused(args, message):
    r = subprocess.run(
        [sys.executable, "-m", "mxrs.launcher", "local", "-n", "1", *args, "--dry-run", "true"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 2
    assert message in r.stderr, r.stderr


def test_launchers_that_start_a_role_together_give_it_one_certificate():
    from mxrs.launcher import batch
    from mxrs.launcher.cli import parse

    _, job, _ = parse(["slurm", "-n", "3", "-s", "2", "--tls", "python", "train.py"])
    assert sorted(job.tls.certs) == ["scheduler", "servers", "workers"]
    for role in ("server", "worker"):
        env = batch.role_env(job, role)
        cert, key = job.tls.certs[f"{role}s"]
        assert env["MXRS_TLS_CERT"] == cert.strip().replace("\n", "\\n")
        assert env["MXRS_TLS_KEY"] == key.strip().replace("\n", "\\n")
        assert "\n" not in env["MXRS_TLS_CA"]
    # Those that start each node on its own give each a certificate of its own.
    _, job, _ = parse(["local", "-n", "2", "-s", "1", "--tls", "python", "train.py"])
    assert sorted(job.tls.certs) == ["scheduler", "server 0", "worker 0", "worker 1"]
    certs = {n.label: n.env["MXRS_TLS_CERT"] for n in job.nodes()}
    assert len(set(certs.values())) == 4
