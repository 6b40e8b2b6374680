"""``mxrs-launch ssh`` on two real hosts: network namespaces on a bridge, a real sshd in each.

The namespaces share this machine's filesystem and process table, so the test reads the job's
files directly and can find (and kill) a remote worker by the tag in its environment.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest
from jobs import tagged_processes
from mxrs.launcher.cli import parse
from mxrs.launcher.hostfile import parse_hostfile
from mxrs.launcher.job import LaunchError

TIMEOUT = 180
SSHD = "/usr/sbin/sshd"


def _can_make_hosts():
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    for tool in ("ip", "ssh", "ssh-keygen", "rsync"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists(SSHD):
        return "openssh-server is not installed"
    return None


def _sh(*argv):
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


def _wait_gone(tag, deadline_s=15):
    end = time.monotonic() + deadline_s
    while tagged_processes(tag) and time.monotonic() < end:
        time.sleep(0.1)
    return tagged_processes(tag)


@pytest.fixture
def two_hosts(tmp_path):
    """Two namespaces with sshd on 10.213.N.2 and .3; yields (hostfile, env for mxrs-launch)."""
    why = _can_make_hosts()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:6]
    net = f"10.213.{random.randint(1, 250)}"
    bridge, namespaces, sshds = f"mxb{tag}", [f"mxrs-{tag}-{i}" for i in (2, 3)], []
    os.makedirs("/run/sshd", exist_ok=True)
    key, hostkey = tmp_path / "id", tmp_path / "hostkey"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
    shutil.copy(f"{key}.pub", tmp_path / "authorized_keys")
    try:
        _sh("ip", "link", "add", bridge, "type", "bridge")
        _sh("ip", "addr", "add", f"{net}.1/24", "dev", bridge)
        _sh("ip", "link", "set", bridge, "up")
        for i, ns in zip((2, 3), namespaces, strict=True):
            veth = f"mxv{tag}{i}"
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", f"{veth}p")
            _sh("ip", "link", "set", f"{veth}p", "netns", ns)
            _sh("ip", "link", "set", veth, "master", bridge, "up")
            _sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{net}.{i}/24", "dev", f"{veth}p")
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", f"{veth}p", "up")
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            cfg = tmp_path / f"sshd{i}.conf"
            cfg.write_text(
                textwrap.dedent(f"""\
                ListenAddress {net}.{i}
                HostKey {hostkey}
                PidFile {tmp_path}/sshd{i}.pid
                AuthorizedKeysFile {tmp_path}/authorized_keys
                PermitRootLogin yes
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                UsePAM no
                StrictModes no
                MaxStartups 100
                MaxSessions 100
                """)
            )
            sshds.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", str(cfg)],
                    stderr=subprocess.DEVNULL,
                )
            )
        client = tmp_path / "ssh_config"
        client.write_text(
            f"Host *\n  IdentityFile {key}\n  StrictHostKeyChecking no\n"
            "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        env = dict(os.environ, MXRS_SSH_OPTIONS=f"-F {client}")
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
        for i in (2, 3):  # sshd is up once a login works
            end = time.monotonic() + 30
            while (
                subprocess.run(
                    ["ssh", "-F", str(client), "-o", "BatchMode=yes", f"{net}.{i}", "true"],
                    capture_output=True,
                    timeout=30,
                ).returncode
                != 0
            ):
                assert time.monotonic() < end, f"sshd on {net}.{i} did not come up"
                time.sleep(0.2)
        hostfile = tmp_path / "hosts"
        hostfile.write_text(f"# two hosts\n{net}.2\n{net}.3:22\n")
        yield hostfile, env
    finally:
        for p in sshds:
            p.terminate()
            p.wait(timeout=30)
        for ns in namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


TRAIN = """
import os, sys, time
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

kv = mx.kv.create('dist_sync')
mx.random.seed(3)
rng = np.random.RandomState(kv.rank)
net = gluon.nn.Dense(2, in_units=3)
net.initialize(mx.init.Xavier())
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                        kvstore=kv)
steps = int(sys.argv[1])
print('started', kv.rank, flush=True)
try:
    for step in range(steps):
        x = mx.nd.array(rng.normal(size=(4, 3)))
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        trainer.step(4)
        if steps > 100:
            time.sleep(0.05)
except mx.MXNetError:
    if steps <= 100:
        raise
    time.sleep(600)  # the kill test: a survivor leaves only when the launcher stops it
np.save(f'weights{kv.rank}.npy', net.weight.data().asnumpy())
print('done', kv.rank, os.getcwd(), sys.argv[2], flush=True)
"""


def _launch(tmp_path, hostfile, env, tag, steps, **popen):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "train.py").write_text(TRAIN)
    dst = tmp_path / "dst"
    cmd = [
        sys.executable,
        "-m",
        "mxrs.launcher",
        "ssh",
        "-n",
        "2",
        "-s",
        "2",
        "-H",
        str(hostfile),
        "--sync-dst-dir",
        str(dst),
        "--env",
        f"MXRS_TEST_TAG={tag}",
        "--",
        sys.executable,
        "train.py",
        str(steps),
        'it\'s a "test" $HOME',
    ]
    return dst, subprocess.Popen(
        cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )


def test_a_job_over_ssh_trains_to_identical_weights_on_both_hosts(tmp_path, two_hosts):
    hostfile, env = two_hosts
    tag = uuid.uuid4().hex
    dst, p = _launch(tmp_path, hostfile, env, tag, 5)
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, out + err
    for r in (0, 1):  # arguments arrive as given, quotes and $ included
        assert f'[worker {r}] done {r} {dst} it\'s a "test" $HOME' in out, out
    w0, w1 = np.load(dst / "weights0.npy"), np.load(dst / "weights1.npy")
    np.testing.assert_array_equal(w0, w1)
    assert _wait_gone(tag) == {}


def test_a_killed_remote_worker_ends_the_job_and_nothing_survives(tmp_path, two_hosts):
    hostfile, env = two_hosts
    tag = uuid.uuid4().hex
    _, p = _launch(tmp_path, hostfile, env, tag, 100000)
    for line in p.stdout:  # until both workers train
        if "[worker 1] started" in line:
            break
    victims = [
        pid
        for pid, (role, rank, exe) in tagged_processes(tag).items()
        if role == "worker" and rank == "1" and exe.startswith("python")
    ]
    assert len(victims) == 1, tagged_processes(tag)
    os.kill(victims[0], signal.SIGKILL)
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode != 0
    assert "mxrs-launch: worker 1 failed with exit status 137" in err, err
    assert _wait_gone(tag) == {}


def test_an_unreachable_host_is_one_line_before_anything_starts(tmp_path, two_hosts):
    _, env = two_hosts
    hosts = tmp_path / "bad_hosts"
    hosts.write_text("10.213.251.9\n")  # a subnet nobody answers on
    env = dict(env, MXRS_SSH_OPTIONS=env["MXRS_SSH_OPTIONS"] + " -o ConnectTimeout=2")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "ssh",
            "-n",
            "1",
            "-H",
            str(hosts),
            "python",
            "x.py",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("mxrs-launch: host 10.213.251.9"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_dry_run_shows_the_commands_without_the_secret(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("10.0.0.5\n10.0.0.6:2222\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "--launcher",
            "ssh",
            "-n",
            "2",
            "-H",
            str(hosts),
            "--env-worker",
            "ROLE_ONLY=w",
            "--dry-run",
            "--",
            "python",
            "train.py",
            "--tag",
            "it's",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    worker1 = [ln for ln in lines if ln.startswith("[worker 1] on 10.0.0.6:2222: ssh ")]
    assert len(worker1) == 1 and "-p 2222" in worker1[0] and "BatchMode=yes" in worker1[0]
    assert "MXRS_SECRET" not in worker1[0]  # the environment travels on stdin
    stdin = [ln for ln in lines if ln.startswith("[worker 1]   stdin: ")]
    assert "[worker 1]   stdin: MXRS_SECRET=<secret>" in stdin
    assert "[worker 1]   stdin: ROLE_ONLY=w" in stdin
    assert "[worker 1]   stdin: DMLC_WORKER_ID=1" in stdin
    assert not any("ROLE_ONLY" in ln for ln in lines if ln.startswith("[server"))
    assert "train.py --tag" in r.stdout


def test_hostfile_lines():
    hosts = parse_hostfile(
        "# cluster\nnode1\nnode2:2222  # second\n\nnode3 slots=4\n[fe80::1]:22\n"
    )
    assert [(h.name, h.port, h.slots) for h in hosts] == [
        ("node1", None, 1),
        ("node2", 2222, 1),
        ("node3", None, 4),
        ("fe80::1", 22, 1),
    ]
    for bad, why in (
        ("node1:x\n", "hosts:1"),
        ("a b c\n", "hosts:1"),
        ("\n# none\n", "no hosts"),
        ("ok\nnode:70000\n", "hosts:2: port 70000"),
    ):
        with pytest.raises(LaunchError, match=why):
            parse_hostfile(bad, "hosts")


def test_ssh_needs_a_hostfile():
    with pytest.raises(SystemExit):
        parse(["ssh", "-n", "2", "python", "x.py"])
