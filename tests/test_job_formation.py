"""A job that cannot form says which nodes it waits for and gives up within its timeout
(``MXRS_FORM_TIMEOUT``), with real scheduler, server and worker processes on 127.0.0.1."""

from jobs import TIMEOUT, job_nodes, launch, start_worker

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
