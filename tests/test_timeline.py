"""``MXRS_TIMELINE``: each worker's Chrome trace, and the launcher's merge of them into one."""

import io
import json
import os
import subprocess
import sys
import textwrap

from jobs import TIMEOUT, launch
from mxrs.launcher import timeline as job_timeline

STEPS = 3

TRAIN = (
    f"STEPS = {STEPS}\n"
    + """
import json, os, sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

store = sys.argv[1] if len(sys.argv) > 1 else "device"
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(3, in_units=8))
ctx = [mx.cpu(0)] if store.startswith("dist") else [mx.cpu(0), mx.cpu(1)]
net.initialize(mx.init.Xavier(), ctx=ctx)
overlap = len(sys.argv) > 2 and sys.argv[2] == "overlap"
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=store,
                        overlap=overlap)
x = mx.nd.ones((4, 5))
for _ in range(STEPS):
    with autograd.record():  # one block call per device: net's (its layers are inside it)
        outs = [net(x.as_in_context(c)) for c in ctx]
        losses = [(o * o).sum() for o in outs]
    autograd.backward(losses)
    trainer.step(4)
mx.nd.waitall()
rank = os.environ.get("DMLC_WORKER_ID", "0")
sizes = {i: int(np.prod(p.shape)) * 4 for i, p in enumerate(net.collect_params().values())}
with open(f"params{rank}.json", "w") as f:
    json.dump(sizes, f)
"""
)


def _run(tmp_path, script, env_update, args=()):
    """Run ``script`` in one process in ``tmp_path`` with the environment changed."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = {k: v for k, v in os.environ.items() if k not in ("MXRS_TIMELINE", "DMLC_ROLE")}
    env.update(env_update)
    return subprocess.run(
        [sys.executable, str(path), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )


def _spans(events, name, pid=None):
    return [
        e
        for e in events
        if e.get("ph") == "X" and e["name"] == name and (pid is None or e["pid"] == pid)
    ]


def _inside(span, outer):
    return outer["ts"] <= span["ts"] and span["ts"] + span["dur"] <= outer["ts"] + outer["dur"]


def _overlap(a, b):
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


# ---------------------------------------------------------------------------- one process
def test_off_by_default_nothing_is_hooked_or_written(tmp_path):
    probe = """
    import mxrs
    from mxrs import autograd, timeline
    from mxrs.gluon import Block, Trainer
    assert not timeline.active
    for f in (Block.__call__, autograd.backward, Trainer.step):
        assert not hasattr(f, "__wrapped__"), f
    """
    _run(tmp_path, TRAIN + textwrap.dedent(probe), {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params0.json", "script.py"]


def test_one_process_records_forward_backward_and_step(tmp_path):
    _run(tmp_path, TRAIN, {"MXRS_TIMELINE": "trace.json"})
    doc = json.loads((tmp_path / "trace.json").read_text())
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"]["dropped_events"] == 0
    assert isinstance(doc["otherData"]["wall_start_us"], int)
    events = doc["traceEvents"]
    names = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert names == [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "worker 0"}}
    ]
    steps = _spans(events, "step")
    assert len(steps) == STEPS
    # one forward span per device per iteration: the outer block's call, not its children's
    assert len(_spans(events, "forward")) == 2 * STEPS
    assert not _spans(events, "push")  # (a single-process store records no requests)
    assert len(_spans(events, "backward")) == STEPS
    for e in _spans(events, "forward") + _spans(events, "backward"):
        assert not any(_overlap(e, s) for s in steps)
        assert set(e) == {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}


def test_events_beyond_the_bound_are_counted_not_kept(tmp_path):
    script = "import mxrs.timeline\nmxrs.timeline.MAX_EVENTS = 4\n" + TRAIN
    _run(tmp_path, script, {"MXRS_TIMELINE": "trace.json"})
    doc = json.loads((tmp_path / "trace.json").read_text())
    kept = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(kept) == 4
    assert doc["otherData"]["dropped_events"] == 4 * STEPS - 4  # 2 forward, backward, step


# ---------------------------------------------------------------------------- the merge
def _part(path, rank, wall_start_us, spans):
    events = [
        {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"w{rank}"}}
    ]
    events += [
        {"name": n, "cat": "c", "ph": "X", "ts": ts, "dur": d, "pid": rank, "tid": 0, "args": {}}
        for n, ts, d in spans
    ]
    other = {"rank": rank, "wall_start_us": wall_start_us, "dropped_events": rank}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"traceEvents": events, "otherData": other}))


def test_merge_puts_parts_with_different_origins_on_one_wall_clock(tmp_path):
    parts = job_timeline.Parts(str(tmp_path / "t.json"), 2)
    # worker 1 started 250 us of wall-clock time after worker 0
    _part(tmp_path / "t.json.parts" / "worker0.json", 0, 1_000_000, [("step", 300, 50)])
    _part(tmp_path / "t.json.parts" / "worker1.json", 1, 1_000_250, [("step", 50, 50)])
    err = io.StringIO()
    assert job_timeline.merge(parts, err) == 2
    assert err.getvalue() == f"mxrs-launch: timeline of 2 workers written to {parts.target}\n"
    doc = json.loads((tmp_path / "t.json").read_text())
    steps = {e["pid"]: e["ts"] for e in _spans(doc["traceEvents"], "step")}
    assert steps == {0: 300, 1: 300}  # the same wall-clock moment
    assert doc["otherData"] == {"wall_start_us": 1_000_000, "workers": 2, "dropped_events": 1}
    assert {e["pid"] for e in doc["traceEvents"] if e["ph"] == "M"} == {0, 1}
    assert not (tmp_path / "t.json.parts").exists()  # merged parts are removed


def test_merge_skips_a_missing_or_corrupt_part_with_a_warning(tmp_path):
    parts = job_timeline.Parts(str(tmp_path / "t.json"), 3)
    _part(tmp_path / "t.json.parts" / "worker0.json", 0, 5, [("step", 1, 2)])
    (tmp_path / "t.json.parts" / "worker2.json").write_text('{"traceEvents": [')
    err = io.StringIO()
    assert job_timeline.merge(parts, err) == 1
    lines = err.getvalue().splitlines()
    assert lines[0] == f"mxrs-launch: worker 1 wrote no timeline ({parts.path(1)}); skipped"
    assert lines[1].startswith(f"mxrs-launch: timeline part {parts.path(2)} is unreadable (")
    assert lines[2] == f"mxrs-launch: timeline of 1 worker written to {parts.target}"
    doc = json.loads((tmp_path / "t.json").read_text())
    assert [e["pid"] for e in _spans(doc["traceEvents"], "step")] == [0]


def test_merge_without_parts_says_so_and_writes_nothing(tmp_path):
    parts = job_timeline.Parts(str(tmp_path / "t.json"), 2)
    err = io.StringIO()
    assert job_timeline.merge(parts, err) == 0
    assert "no worker wrote a timeline" in err.getvalue()
    assert not (tmp_path / "t.json").exists()
    assert job_timeline.merge(None, err) == 0


def test_each_worker_gets_its_own_part_file(tmp_path, monkeypatch):
    from mxrs.launcher.job import Job

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MXRS_TIMELINE", raising=False)
    job = Job(2, 1, ["python", "train.py"], extra_env={"MXRS_TIMELINE": "out/t.json"})
    envs = {(n.role, n.rank): n.env for n in job.nodes()}
    target = str(tmp_path / "out" / "t.json")
    assert envs[("worker", 1)]["MXRS_TIMELINE"] == f"{target}.parts/worker1.json"
    assert envs[("server", 0)]["MXRS_TIMELINE"] == "out/t.json"  # unused: servers record none
    assert "MXRS_TIMELINE" not in Job(2, 1, ["python"]).nodes()[-1].env


# ---------------------------------------------------------------------------- a real job
def test_a_dist_sync_job_writes_one_timeline_with_every_key_inside_its_step(tmp_path):
    res = launch(tmp_path, TRAIN, n=2, s=2, env=["MXRS_TIMELINE=trace.json"], args=["dist_sync"])
    assert res.returncode == 0, res.stderr
    target = tmp_path / "trace.json"
    assert f"mxrs-launch: timeline of 2 workers written to {target}" in res.stderr
    doc = json.loads(target.read_text())
    events = doc["traceEvents"]
    assert doc["otherData"]["workers"] == 2 and doc["otherData"]["dropped_events"] == 0
    assert {e["pid"] for e in events} == {0, 1}
    for rank in (0, 1):
        sizes = {
            int(k): v for k, v in json.loads((tmp_path / f"params{rank}.json").read_text()).items()
        }
        steps = _spans(events, "step", rank)
        assert len(steps) == STEPS
        forward, backward = _spans(events, "forward", rank), _spans(events, "backward", rank)
        assert len(forward) == STEPS and len(backward) == STEPS
        for e in forward + backward:
            assert not any(_overlap(e, s) for s in steps)
        for step in steps:
            for name in ("push", "pull"):
                inside = [e for e in _spans(events, name, rank) if _inside(e, step)]
                assert {e["args"]["key"] for e in inside} == set(sizes), (name, step)
                if name == "push":  # (the first step also pulls each key once after init)
                    assert len(inside) == len(sizes)
                for e in inside:
                    assert e["args"]["bytes"] == sizes[e["args"]["key"]]
                    assert 0 <= e["args"]["wait_us"] <= e["dur"]
        assert len(_spans(events, "push", rank)) == STEPS * len(sizes)


def test_with_overlap_requests_start_in_backward_and_end_in_their_step(tmp_path):
    # each Parameter is sent alone as soon as backward has its gradient (from the 2nd step on)
    env = ["MXRS_TIMELINE=trace.json", "MXRS_BUCKET_BYTES=0"]
    res = launch(tmp_path, TRAIN, n=2, s=2, env=env, args=["dist_sync", "overlap"])
    assert res.returncode == 0, res.stderr
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    for rank in (0, 1):
        sizes = json.loads((tmp_path / f"params{rank}.json").read_text())
        steps, backward = _spans(events, "step", rank), _spans(events, "backward", rank)
        pushes = _spans(events, "push", rank)
        assert len(steps) == len(backward) == STEPS and len(pushes) == STEPS * len(sizes)
        early = 0
        for b, s in zip(backward, steps, strict=True):
            window = {"ts": b["ts"], "dur": s["ts"] + s["dur"] - b["ts"]}
            mine = [e for e in pushes if _inside(e, window)]
            assert {str(e["args"]["key"]) for e in mine} == set(sizes)
            early += sum(e["ts"] < s["ts"] for e in mine)
        assert early > 0  # some were sent while backward ran
