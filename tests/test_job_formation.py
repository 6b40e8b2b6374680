"""A job never waits silently: one that cannot form says which nodes it waits for and gives up
within its timeout (``MXRS_FORM_TIMEOUT``), and a worker whose request waits long for its reply
names it on stderr (``MXRS_WAIT_NOTICE``); with real scheduler, server and worker processes on
127.0.0.1."""

import os
import re
import subprocess
import sys

from jobs import TIMEOUT, job_nodes, launch, node_env, start_worker

WAIT_FOR_STORE = """
import mxrs as mx
from mxrs.base import NodeLostError
try:
    mx.kv.create('dist_sync')
except NodeLostError as e:
    print('refused:', e, flush=True)
    raise SystemExit(3)
print('formed', flush=True)
"""


def test_a_missing_worker_ends_the_job_naming_it():
    with job_nodes(workers=2, servers=2, MXRS_FORM_TIMEOUT=3) as (port, procs):
        w = start_worker(port, WAIT_FOR_STORE, DMLC_WORKER_ID=0, MXRS_FORM_TIMEOUT=3)
        try:
            out, err = w.communicate(timeout=TIMEOUT)
        finally:
            w.kill()
        assert w.returncode == 3, out + err
        assert "did not form within 3s (MXRS_FORM_TIMEOUT)" in out, out + err
        assert "1 of 2 workers and 2 of 2 servers have registered; missing: worker 1" in out
        # the scheduler and the servers end too, with a failure status
        for p in procs:
            assert p.wait(timeout=TIMEOUT) != 0


def test_the_launcher_reports_a_job_that_did_not_form(tmp_path):
    # worker 1 never creates its store: the others give up after 3 s instead of waiting
    script = """
    import os, sys, time
    if os.environ['DMLC_WORKER_ID'] == '1':
        time.sleep(120)
    import mxrs as mx
    mx.kv.create('dist_sync')
    """
    result = launch(tmp_path, script, n=2, s=1, env=["MXRS_FORM_TIMEOUT=3"], timeout=90)
    assert result.returncode != 0
    both = result.stdout + result.stderr
    assert "the job did not form within 3s" in both and "missing: worker 1" in both, both


def test_a_node_whose_stderr_is_gone_still_gives_up(tmp_path):
    # Its launcher was killed: the pipe that was its stderr has no reader. Writing the log line
    # fails, and the node must go on regardless (it used to panic in the task that logged it,
    # which here is the one that ends a job that did not form: the scheduler stayed for ever).
    read_end, write_end = os.pipe()
    env = node_env("scheduler", 0, MXRS_FORM_TIMEOUT=2)
    env["MXRS_ANNOUNCE"] = str(tmp_path / "port")
    p = subprocess.Popen(
        [sys.executable, "-c", "import mxrs"], stdout=write_end, stderr=write_end, env=env
    )
    os.close(write_end)
    os.close(read_end)
    try:
        assert p.wait(timeout=TIMEOUT) == 1
    finally:
        p.kill()
        p.wait()


def test_a_job_forms_when_its_last_node_comes_late_within_the_timeout():
    with job_nodes(workers=1, servers=1, MXRS_FORM_TIMEOUT=60) as (port, _):
        w = start_worker(port, WAIT_FOR_STORE, workers=1, servers=1)
        out, err = w.communicate(timeout=TIMEOUT)
        assert w.returncode == 0 and "formed" in out, out + err


def test_a_bad_formation_timeout_is_named():
    with job_nodes(workers=1, servers=1) as (port, _):
        w = start_worker(port, WAIT_FOR_STORE, workers=1, servers=1, MXRS_FORM_TIMEOUT="soon")
        out, err = w.communicate(timeout=TIMEOUT)
    assert w.returncode != 0
    assert "MXRS_FORM_TIMEOUT" in out + err, out + err


def test_a_reply_long_in_coming_is_named_on_the_workers_stderr(tmp_path):
    """Worker 1 pushes 4 s late: worker 0's synchronous round waits for it on an open
    connection, which worker 0 names after 1 s and again at 2 s, and the job still ends well."""
    script = """
    import os, time
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    kv.init('w', mx.nd.zeros((4,)))
    if kv.rank == 1:
        time.sleep(4)
    out = mx.nd.zeros((4,))
    kv.pushpull('w', mx.nd.ones((4,)), out=out)
    assert (out.asnumpy() == 2).all(), out
    print('done', kv.rank, flush=True)
    """
    result = launch(tmp_path, script, n=2, s=1, env=["MXRS_WAIT_NOTICE=1"], timeout=90)
    both = result.stdout + result.stderr
    assert result.returncode == 0, both
    assert "done 0" in both and "done 1" in both, both
    notices = [line for line in both.splitlines() if "no reply from server 0 on 127.0.0.1:" in line]
    assert any("[worker 0]" in n for n in notices), both
    first = next(n for n in notices if "[worker 0]" in n)
    assert re.search(r"for \d+\.\d s to a (Push|Pull|PushPull) request \(id \d+;", first), first
    assert "the connection is open" in first, first
    assert any(" for 2." in n for n in notices), both  # named again when the wait doubled
