"""The job summary ``mxrs-launch`` prints when a job ends, and the report lines it is made of."""

import io
import os
import re
import subprocess
import sys
import time
import uuid

import pytest
from jobs import TIMEOUT, launch, tagged_processes
from mxrs.launcher.console import Console
from mxrs.launcher.summary import (
    PREFIX,
    JobSummary,
    Report,
    format_bytes,
    parse_report,
    split_report,
)
from mxrs.launcher.supervise import Supervisor


def _report(**fields):
    """A report line as a process writes it."""
    import json

    return PREFIX + json.dumps(fields).encode()


def _job(workers=2, servers=2):
    """A summary of a job whose processes all started once."""
    s = JobSummary()
    s.started("scheduler", "scheduler")
    for i in range(servers):
        s.started(f"server {i}", "server")
    for i in range(workers):
        s.started(f"worker {i}", "worker")
    return s


def test_the_summary_shows_what_each_process_reported_and_the_slowest_worker():
    s = _job()
    report = _report(role="worker", rank=0, steps=93, samples=5952, seconds=1.5)
    assert s.take("worker 0", report) is None  # nothing of the line is shown
    s.take("worker 1", _report(role="worker", rank=1, steps=93, samples=5952, seconds=2))
    s.take("server 0", _report(role="server", rank=0, bytes_in=12_897_484, bytes_out=47_815_065))
    s.take("server 1", _report(role="server", rank=1, bytes_in=2_000, bytes_out=512, extra=[1]))
    for label in ("worker 1", "worker 0", "server 1", "server 0", "scheduler"):
        s.ended(label, 0)
    assert s.format() == [
        "mxrs-launch: job summary",
        "  worker 0    exit 0   steps 93      samples/s 3968.0",
        "  worker 1    exit 0   steps 93      samples/s 2976.0",
        "  server 0    exit 0   in 12.3 MiB   out 45.6 MiB",
        "  server 1    exit 0   in 2.0 KiB    out 512 B",
        "  scheduler   exit 0",
        "  slowest worker: worker 1 (2976.0 samples/s)",
    ]


def test_what_was_not_reported_is_a_dash_and_every_kind_of_end_is_named():
    s = _job(workers=4, servers=1)
    s.take("worker 0", _report(role="worker", rank=0, steps=7, samples=224, seconds=0.5))
    s.take("worker 2", _report(role="worker", rank=2, steps=1, samples=32, seconds=0))
    s.ended("worker 0", 0)
    s.ended("worker 1", -9)  # killed by SIGKILL
    s.started("worker 1", "worker")  # restarted; still running when the job is stopped
    s.ended("worker 2", 3)
    s.ended("scheduler", 0)
    s.stopping()  # the launcher stops what is left: worker 1, worker 3, server 0
    assert s.format() == [
        "mxrs-launch: job summary",
        "  worker 0    exit 0                   steps 7   samples/s 448.0",
        "  worker 1    stopped (restarted 1×)   steps -   samples/s -",
        "  worker 2    exit 3                   steps 1   samples/s -",
        "  worker 3    stopped                  steps -   samples/s -",
        "  server 0    stopped                  in -      out -",
        "  scheduler   exit 0",
    ]  # one worker with samples/s: no slowest worker


def test_signal_running_and_restart_statuses():
    s = _job(workers=2, servers=0)
    s.ended("worker 0", -15)
    s.ended("worker 1", 1)
    s.started("worker 1", "worker")
    s.ended("worker 1", 0)
    s.started("worker 1", "worker")
    s.take("worker 1", _report(role="worker", rank=1, steps=2))
    assert s.format() == [
        "mxrs-launch: job summary",
        "  worker 0    signal 15                steps -   samples/s -",
        "  worker 1    running (restarted 2×)   steps 2   samples/s -",
        "  scheduler   running",
    ]


def test_a_restarted_process_shows_only_its_own_report():
    s = _job(workers=1, servers=0)
    s.take("worker 0", _report(role="worker", rank=0, steps=50, samples=50, seconds=1))
    s.ended("worker 0", 1)
    s.started("worker 0", "worker")
    s.ended("worker 0", -9)  # the second process never reported
    assert s.format()[1] == "  worker 0    signal 9 (restarted 1×)   steps -   samples/s -"


def test_one_launch_of_several_processes_gets_a_row_per_report():
    s = JobSummary()
    s.started("workers", "worker")  # mpirun, srun: one launch, every worker's output
    for rank in (1, 0, 10, 2):
        s.take("workers", _report(role="worker", rank=rank, steps=rank, samples=8, seconds=rank))
    s.ended("workers", 0)
    assert s.format() == [
        "mxrs-launch: job summary",
        "  worker 0    exit 0   steps 0    samples/s -",
        "  worker 1    exit 0   steps 1    samples/s 8.0",
        "  worker 2    exit 0   steps 2    samples/s 4.0",
        "  worker 10   exit 0   steps 10   samples/s 0.8",
        "  slowest worker: worker 10 (0.8 samples/s)",
    ]


def test_nothing_started_means_no_summary():
    assert JobSummary().format() == []


@pytest.mark.parametrize(
    "text",
    [
        b"{not json",
        b"[1, 2]",
        b'"worker"',
        b"",
        b'{"role": 3}',
        b'{"role": "worker", "steps": "93"}',
        b'{"role": "worker", "steps": 9.5}',
        b'{"role": "worker", "steps": true}',
        b'{"role": "worker", "steps": -1}',
        b'{"role": "worker", "seconds": NaN}',
        b'{"role": "worker", "samples": Infinity}',
        b'{"role": "server", "bytes_in": 18446744073709551616}',
        b'{"role": "worker", "rank": [0]}',
        b'{"role": "worker"} trailing',
        b"\xff\xfe",
    ],
)
def test_a_malformed_report_is_an_ordinary_line(text):
    line = PREFIX + text
    assert parse_report(text) is None
    assert split_report(line) == (line, None)
    s = _job(workers=1, servers=0)
    assert s.take("worker 0", line) == line  # shown as it is
    s.ended("worker 0", 0)
    assert s.format()[1] == "  worker 0    exit 0    steps -   samples/s -"


def test_a_report_takes_known_keys_and_ignores_the_others():
    assert parse_report(b'{"role": "worker", "rank": 2, "steps": 3, "new": {"x": 1}}') == Report(
        role="worker", rank=2, steps=3
    )
    assert parse_report(b'{"steps": null, "samples": 64.5, "seconds": 2}') == Report(
        samples=64.5, seconds=2
    )


def test_text_before_a_report_on_its_line_is_shown():
    line = b" 100%|####| 3/3" + _report(role="worker", rank=0, steps=3)
    assert split_report(line) == (b" 100%|####| 3/3", Report(role="worker", rank=0, steps=3))
    assert split_report(b"no report here") == (b"no report here", None)


def test_bytes_in_human_units():
    assert [format_bytes(n) for n in (0, 1023, 1024, 1536, 1048575, 12.3 * 2**20)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "1.0 MiB",
        "12.3 MiB",
    ]
    assert format_bytes(3 * 2**30) == "3.0 GiB"
    assert format_bytes(2**50) == "1048576.0 GiB"


def test_the_console_takes_report_lines_out_and_shows_malformed_ones():
    s = _job(workers=1, servers=0)
    out = io.BytesIO()
    c = Console(out, tty=False, take=s.take)
    good = _report(role="worker", rank=0, steps=4, samples=128, seconds=2)
    bad = PREFIX + b"{oops"
    shown = c.feed("worker 0", b"step 4\n" + good + b"\n" + bad + b"\nbye\n")
    assert shown == [b"step 4", bad, b"bye"]
    assert c.close("worker 0") == []
    c.feed("worker 0", b"\r 3/3" + _report(role="worker", rank=0, steps=5))  # no line end
    assert c.close("worker 0") == [b" 3/3"]
    assert out.getvalue() == (
        b"[worker 0] step 4\n[worker 0] " + bad + b"\n[worker 0] bye\n[worker 0]  3/3\n"
    )
    s.ended("worker 0", 0)
    assert s.format()[1] == "  worker 0    exit 0    steps 5   samples/s -"


def test_a_live_line_ended_by_a_taken_report_leaves_the_screen():
    s = _job(workers=1, servers=0)
    out = io.BytesIO()
    c = Console(out, tty=True, take=s.take)
    c.feed("worker 0", b"\rbatch 1/3")
    c.feed("worker 0", b"\r" + _report(role="worker", rank=0, steps=3) + b"\n")
    assert out.getvalue() == b"[worker 0] batch 1/3\n\x1b[1F\x1b[J"  # taken back, nothing new


def _python(code):
    return [sys.executable, "-c", code]


def test_the_supervisor_passes_mxrs_report_and_keeps_reports_out_of_the_output():
    out, err = io.BytesIO(), io.StringIO()
    sup = Supervisor(out=out, err=err)
    server = (
        "import os, sys; print('serving', os.environ['MXRS_REPORT'], flush=True); "
        'sys.stderr.write(\'mxrs-report: {"role": "server", "rank": 0, \''
        '\'"bytes_in": 3145728, "bytes_out": 100}\\n\')'
    )
    worker = (
        "import sys; print('step', flush=True); "
        'sys.stderr.write(\'mxrs-report: {"steps": "x"}\\n\'); '
        'sys.stderr.write(\'mxrs-report: {"role": "worker", "rank": 0, "steps": 1}\\n\')'
    )
    sup.start("server 0", "server", _python(server), dict(os.environ))
    sup.start("worker 0", "worker", _python(worker), dict(os.environ))
    assert sup.wait() == 0, err.getvalue()
    lines = sorted(out.getvalue().decode().splitlines())
    assert lines == [
        "[server 0] serving 1",
        '[worker 0] mxrs-report: {"steps": "x"}',  # malformed: an ordinary line
        "[worker 0] step",
    ]
    assert err.getvalue() == (
        "mxrs-launch: job summary\n"
        "  worker 0   exit 0   steps 1      samples/s -\n"
        "  server 0   exit 0   in 3.0 MiB   out 100 B\n"
    )


def test_a_failed_job_is_summarised_and_its_tail_has_no_report():
    out, err = io.BytesIO(), io.StringIO()
    sup = Supervisor(out=out, err=err)
    server = "import time; print('up', flush=True); time.sleep(600)"
    worker = (
        "import sys; print('giving up', flush=True); "
        'sys.stderr.write(\'mxrs-report: {"role": "worker", "rank": 1, "steps": 2}\\n\'); '
        "sys.exit(3)"
    )
    sup.start("server 0", "server", _python(server), dict(os.environ))
    sup.start("worker 1", "worker", _python(worker), dict(os.environ))
    try:
        assert sup.wait() == 3, err.getvalue()
    finally:
        sup.stop()  # a failed assertion leaves no process behind
    assert sup.last_lines("worker 1") == "giving up"
    assert "mxrs-report" not in out.getvalue().decode()
    assert err.getvalue().endswith(
        "mxrs-launch: worker 1 failed with exit status 3; stopping the job; its last lines:\n"
        "giving up\n"
        "mxrs-launch: job summary\n"
        "  worker 1   exit 3    steps 2   samples/s -\n"
        "  server 0   stopped   in -      out -\n"
    ), err.getvalue()


def test_a_killed_process_is_named_over_the_error_exit_it_caused():
    # the scheduler exits 1 on hearing a node is lost, sometimes before the launcher hears the
    # node was killed: the killed node is the job's failure, with its status
    out, err = io.BytesIO(), io.StringIO()
    sup = Supervisor(out=out, err=err)
    scheduler = "import sys; print('job failed: worker 1 disconnected', flush=True); sys.exit(1)"
    worker = "import os, time; time.sleep(0.1); os.kill(os.getpid(), 9)"
    server = "import time; time.sleep(600)"
    sup.start("scheduler", "scheduler", _python(scheduler), dict(os.environ))
    sup.start("worker 1", "worker", _python(worker), dict(os.environ))
    sup.start("server 0", "server", _python(server), dict(os.environ))
    try:
        assert sup.wait() == 137, err.getvalue()
    finally:
        sup.stop()
    assert "mxrs-launch: worker 1 failed with exit status 137; stopping the job" in err.getvalue()
    assert "scheduler failed" not in err.getvalue()


def test_an_error_exit_alone_is_the_failure_after_a_short_wait():
    out, err = io.BytesIO(), io.StringIO()
    sup = Supervisor(out=out, err=err)
    sup.start("scheduler", "scheduler", _python("import sys; sys.exit(4)"), dict(os.environ))
    sup.start("worker 0", "worker", _python("import time; time.sleep(600)"), dict(os.environ))
    started = time.monotonic()
    try:
        assert sup.wait() == 4, err.getvalue()
    finally:
        sup.stop()
    assert time.monotonic() - started < 30
    assert "mxrs-launch: scheduler failed with exit status 4; stopping the job" in err.getvalue()


_SCRIPT = """
import sys
import time
import mxrs as mx
import mxrs._report as report
kv = mx.kv.create('dist_sync')
steps = {0: 5, 1: 3}[kv.rank]
for _ in range(steps):
    report.record_step(32)
print('trained', kv.rank, flush=True)
if FAIL and kv.rank == 1:
    sys.exit(3)
if FAIL:
    try:
        kv.barrier()  # fails or hangs: worker 1 is gone
    finally:
        time.sleep(600)  # either way only the launcher may end this process
"""


def _row(stderr, label):
    rows = [ln for ln in stderr.splitlines() if ln.startswith(f"  {label} ")]
    assert len(rows) == 1, stderr
    return re.sub(r" {2,}", "  ", rows[0].strip())


def test_a_job_ends_with_its_summary_of_steps_per_worker(tmp_path):
    r = launch(tmp_path, _SCRIPT.replace("FAIL", "False"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker 0] trained 0" in r.stdout and "[worker 1] trained 1" in r.stdout
    assert "mxrs-report" not in r.stdout + r.stderr
    summary = r.stderr[r.stderr.index("mxrs-launch: job summary\n") :]
    for rank, steps in ((0, 5), (1, 3)):
        row = _row(summary, f"worker {rank}")
        assert re.fullmatch(rf"worker {rank}  exit 0  steps {steps}  samples/s (-|\d+\.\d)", row)
    for label in ("server 0", "server 1"):
        assert _row(summary, label).startswith(f"{label}  exit 0  in "), summary
    assert _row(summary, "scheduler") == "scheduler  exit 0"


def test_a_failed_worker_shows_its_exit_status_in_the_summary(tmp_path):
    tag = uuid.uuid4().hex
    env = [f"MXRS_TEST_TAG={tag}", "PS_HEARTBEAT_TIMEOUT=600"]
    r = launch(tmp_path, _SCRIPT.replace("FAIL", "True"), env=env)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "mxrs-report" not in r.stdout + r.stderr
    summary = r.stderr[r.stderr.index("mxrs-launch: job summary\n") :]
    row = _row(summary, "worker 1")
    assert re.fullmatch(r"worker 1  exit 3  steps 3  samples/s (-|\d+\.\d)", row), summary
    assert _row(summary, "worker 0").startswith("worker 0  stopped  steps "), summary
    assert tagged_processes(tag) == {}


def test_a_worker_reports_once_as_it_exits_only_when_asked(tmp_path):
    code = (
        "import mxrs._report as r\n"
        "for _ in range(4):\n"
        "    r.record_step(16)\n"
        "print('done', flush=True)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "MXRS_"))}

    def run(**env):
        p = subprocess.run(
            _python(code), env={**base, **env}, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert p.returncode == 0 and p.stdout == "done\n", p.stdout + p.stderr
        return p.stderr

    err = run(MXRS_REPORT="1", DMLC_ROLE="worker", DMLC_WORKER_ID="4")
    m = re.fullmatch(
        r'mxrs-report: \{"role": "worker", "rank": 4, "steps": 4, "samples": 64, '
        r'"seconds": ([0-9.e-]+)\}\n',
        err,
    )
    assert m and float(m.group(1)) >= 0, err
    report = parse_report(err[len("mxrs-report: ") :].encode())
    assert report == Report("worker", 4, 4, 64, float(m.group(1)))
    assert run(MXRS_REPORT="1", DMLC_ROLE="worker").startswith(
        'mxrs-report: {"role": "worker", "steps": 4,'
    )  # no rank known
    assert run(DMLC_ROLE="worker", DMLC_WORKER_ID="0") == ""  # not under mxrs-launch
    assert run(MXRS_REPORT="1") == ""  # not a worker


def test_the_prefix_is_the_workers():
    code = "import mxrs._report as r; print(r.PREFIX, end='')"
    p = subprocess.run(_python(code), capture_output=True, text=True, timeout=TIMEOUT)
    assert p.stdout.encode() == PREFIX, p.stderr
