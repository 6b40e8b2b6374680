"""``mx.profiler``: while running (and not paused) it records the user's spans, counters and
markers with pid, tid and timestamps, ``dump`` writes them as a Chrome trace, ``dumps`` gives the
aggregate table in MXNet 1.9.1's layout; configuration errors are MXNet's. A fake
``perf_counter_ns`` makes every time exact."""

import json
import os
import threading
import time

import mxnet_ref
import pytest
from mxrs import profiler
from mxrs.base import MXNetError


class Clock:
    """A fake ``time.perf_counter_ns``: ``advance(ms)`` moves it."""

    def __init__(self):
        self.ns = 5_000_000_000

    def __call__(self):
        return self.ns

    def advance(self, ms):
        self.ns += int(ms * 1_000_000)


@pytest.fixture(autouse=True)
def fresh_profiler(monkeypatch):
    """Each test gets a profiler of its own (stopped, default configuration), stopped after it
    (so no operator stays timed for the tests that follow)."""
    monkeypatch.setattr(profiler, "_prof", profiler._Profiler())
    yield
    profiler.set_state("stop")


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(time, "perf_counter_ns", c)
    return c


def _trace(path):
    with open(path) as f:
        trace = json.load(f)
    assert trace["displayTimeUnit"] == "ms"
    return [e for e in trace["traceEvents"] if e["ph"] != "M"]


def test_spans_counters_and_markers_make_a_chrome_trace(tmp_path, clock):
    path = tmp_path / "trace.json"
    profiler.set_config(filename=str(path), profile_all=True)
    domain = profiler.Domain("train")
    counter = domain.new_counter("queue", 5)  # set before running: not recorded
    profiler.set_state("run")
    assert profiler.state() == "run"
    with domain.new_task("epoch"):
        clock.advance(3)
        frame = domain.new_frame("batch")
        frame.start()
        clock.advance(1.5)
        frame.stop()
    event = profiler.Event("io")
    event.start()
    clock.advance(0.25)
    event.stop()
    counter += 2
    counter -= 1
    counter.set_value(10)
    domain.new_marker("checkpoint").mark("global")
    domain.new_marker("here").mark()
    profiler.set_state("stop")
    profiler.dump()
    pid, tid, t0 = os.getpid(), threading.get_native_id(), 5_000_000.0
    common = {"pid": pid, "tid": tid}
    assert _trace(path) == [
        {"name": "batch", "cat": "train,frame", "ph": "X", "ts": t0 + 3000, "dur": 1500, **common},
        {"name": "epoch", "cat": "train", "ph": "X", "ts": t0, "dur": 4500, **common},
        {"name": "io", "cat": "event", "ph": "X", "ts": t0 + 4500, "dur": 250, **common},
        *[
            {
                "name": "queue",
                "cat": "train",
                "ph": "C",
                "ts": t0 + 4750,
                "args": {"queue": v},
                **common,
            }
            for v in (7, 6, 10)
        ],
        {
            "name": "checkpoint",
            "cat": "train,instant_marker",
            "ph": "i",
            "ts": t0 + 4750,
            "s": "g",
            **common,
        },
        {
            "name": "here",
            "cat": "train,instant_marker",
            "ph": "i",
            "ts": t0 + 4750,
            "s": "p",
            **common,
        },
    ]
    assert counter.value == 10 and str(counter) == "queue" and str(domain) == "train"
    with open(path) as f:
        meta = [e for e in json.load(f)["traceEvents"] if e["ph"] == "M"]
    assert meta == [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "mxrs"}}]


def test_nothing_is_recorded_while_stopped_or_paused(tmp_path, clock):
    profiler.set_config(filename=str(tmp_path / "p.json"))
    task = profiler.Domain("d").new_task("t")
    with task:  # before run
        clock.advance(1)
    profiler.set_state("run")
    profiler.pause()
    early = profiler.Event("started-while-paused")
    early.start()
    assert profiler.state() == "run"
    with task:
        clock.advance(1)
    profiler.Domain("d").new_marker("m").mark()
    profiler.Domain("d").new_counter("c").increment()
    profiler.resume()
    early.stop()  # started while paused: not recorded
    across = profiler.Event("across-a-pause")  # running at start and stop: recorded
    across.start()
    profiler.pause()
    profiler.resume()
    clock.advance(1)
    across.stop()
    late = profiler.Event("started-before-stop")
    late.start()
    with task:
        clock.advance(2)
    profiler.set_state("stop")
    late.stop()
    profiler.dump()
    assert [(e["name"], e["dur"]) for e in _trace(tmp_path / "p.json")] == [
        ("across-a-pause", 1000),
        ("t", 2000),
    ]


def test_spans_of_other_threads_carry_their_thread_id(tmp_path):
    profiler.set_config(filename=str(tmp_path / "t.json"))
    profiler.set_state("run")
    tids = []

    def work():
        tids.append(threading.get_native_id())
        with profiler.Domain("d").new_task("in-thread"):
            pass

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    with profiler.Event("main"):
        pass
    profiler.dump()
    events = {e["name"]: e for e in _trace(tmp_path / "t.json")}
    assert events["in-thread"]["tid"] == tids[0] != events["main"]["tid"]
    assert events["main"]["tid"] == threading.get_native_id()
    assert events["in-thread"]["dur"] >= 0 and events["main"]["ts"] >= events["in-thread"]["ts"]


def test_scopes_name_the_spans_inside_them(tmp_path, clock):
    profiler.set_config(filename=str(tmp_path / "s.json"))
    profiler.set_state("run")
    domain = profiler.Domain("d")
    with profiler.scope("data"):
        with domain.new_task("load"):
            pass
        with profiler.scope("decode", append_mode=True):
            with domain.new_task("jpeg"):
                pass
        with profiler.scope("other:"):
            with domain.new_task("x"):
                pass
    with domain.new_task("outside"):
        pass
    profiler.dump()
    scopes = {e["name"]: e.get("args", {}).get("scope") for e in _trace(tmp_path / "s.json")}
    assert scopes == {"load": "data:", "jpeg": "data:decode:", "x": "other:", "outside": None}


def test_dump_finished_ends_the_session_and_dump_unfinished_keeps_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MXNetError, match="hasn't been run"):
        profiler.dump()
    profiler.set_state("run")
    with profiler.Event("a"):
        pass
    profiler.dump(finished=False)  # default filename
    assert [e["name"] for e in _trace("profile.json")] == ["a"]
    assert profiler.state() == "run"
    with profiler.Event("b"):
        pass
    profiler.dump()
    assert [e["name"] for e in _trace("profile.json")] == ["a", "b"]
    assert profiler.state() == "stop"
    with pytest.raises(MXNetError, match="hasn't been run"):
        profiler.dump()
    profiler.set_state("run")
    with profiler.Event("c"):
        pass
    profiler.dump()
    assert [e["name"] for e in _trace("profile.json")] == ["c"]
    profiler.set_config(filename=str(tmp_path / "no-such-dir" / "p.json"))
    profiler.set_state("run")
    with pytest.raises(MXNetError, match="cannot write the profile to .*no-such-dir"):
        profiler.dump()


def test_the_server_process_is_accepted_and_left_alone(tmp_path):
    profiler.set_config(filename=str(tmp_path / "w.json"))
    profiler.set_config(profile_process="server", filename="server.json", aggregate_stats=True)
    profiler.set_state("run", profile_process="server")
    assert profiler.state() == "stop"
    profiler.pause(profile_process="server")
    profiler.resume(profile_process="server")
    profiler.dump(profile_process="server")
    assert profiler.dumps() == ""  # the worker's aggregate_stats is still off
    assert not (tmp_path / "server.json").exists() and not os.path.exists("server.json")


def test_dumps_aggregates_per_category(clock):
    assert profiler.dumps() == ""
    profiler.set_config(aggregate_stats=True)
    profiler.set_state("run")
    domain = profiler.Domain("D")
    for ms in (2, 4):
        with domain.new_task("T"):
            clock.advance(ms)
    with domain.new_task("U"):
        clock.advance(1)
    with domain.new_frame("F"):
        clock.advance(0.5)
    counter = domain.new_counter("C", 3)
    counter += 4
    table = profiler.dumps()
    head = "Name                          Total Count        Time (ms)    Min Time (ms)    Max Time (ms)    Avg Time (ms)"  # noqa: E501
    rule = "----                          -----------        ---------    -------------    -------------    -------------"  # noqa: E501
    assert table.split("\n") == [
        "",
        "Profile Statistics:",
        "\tNote the difference in units for different entries.",
        "D",
        "=================",
        head,
        rule,
        "T                                       2           6.0000           2.0000           4.0000           3.0000",  # noqa: E501
        "U                                       1           1.0000           1.0000           1.0000           1.0000",  # noqa: E501
        "",
        "D,frame",
        "=================",
        head,
        rule,
        "F                                       1           0.5000           0.5000           0.5000           0.5000",  # noqa: E501
        "",
        "D (counters)",
        "=================",
        "Name                          Total Count       Last Value        Min Value        Max Value",  # noqa: E501
        "----                          -----------       ----------        ---------        ---------",  # noqa: E501
        "C                                       2                7                3                7",  # noqa: E501
        "",
        "",
    ]
    by_count = profiler.dumps(sort_by="count", ascending=True).split("\n")
    assert by_count.index(next(x for x in by_count if x.startswith("U "))) < by_count.index(
        next(x for x in by_count if x.startswith("T "))
    )
    stats = json.loads(profiler.dumps(format="json", reset=True))
    assert stats["Time"]["D"]["T"] == {"Count": 2, "Total": 6.0, "Min": 2.0, "Max": 4.0, "Avg": 3.0}
    assert stats["Counter"] == {"D": {"C": {"Count": 2, "Last": 7, "Min": 3, "Max": 7}}}
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    assert (
        profiler.dumps()
        == "\nProfile Statistics:\n\tNote the difference in units for different entries.\n"
    )  # noqa: E501


def test_configuration_errors_and_table_layout_match_mxnet(tmp_path):
    script = """
    import mxnet as mx
    def error(f, *args, **kwargs):
        try:
            f(*args, **kwargs)
        except Exception as e:
            return [type(e).__name__, isinstance(e, AssertionError), str(e).split("\\n")[0]]
    result = {
        "unknown": error(mx.profiler.set_config, foo=1),
        "bool": error(mx.profiler.set_config, profile_all="maybe"),
        "process": error(mx.profiler.set_config, profile_process="both"),
        "period": error(mx.profiler.set_config, dump_period="x"),
        "format": error(mx.profiler.dumps, format="xml"),
        "sort_by": error(mx.profiler.dumps, sort_by="name"),
    }
    mx.profiler.set_config(aggregate_stats=True, profile_api=False, profile_memory=False,
                           profile_imperative=False, profile_symbolic=False,
                           continuous_dump=False, profile_all=0, dump_period=2,
                           filename="x.json", profile_process="worker")
    result["empty"] = mx.profiler.dumps()
    mx.profiler.set_state("run")
    with_task = mx.profiler.Domain("D").new_task("a_task_name")
    with_task.start()
    with_task.stop()
    mx.profiler.set_state("stop")
    lines = mx.profiler.dumps().split("\\n")
    at = lines.index("D")
    result["section"] = lines[at:at + 5]
    """
    want, _ = mxnet_ref.run(tmp_path, script)

    def error(f, *args, **kwargs):
        with pytest.raises(MXNetError) as info:
            f(*args, **kwargs)
        return isinstance(info.value, AssertionError), str(info.value)

    assert error(profiler.set_config, foo=1)[1].startswith(
        want["unknown"][2][len("MXNetError: ") :]
    )
    for key, value in (
        ("bool", {"profile_all": "maybe"}),
        ("process", {"profile_process": "both"}),
        ("period", {"dump_period": "x"}),
    ):
        assert want[key][0] == "MXNetError"
        assert error(profiler.set_config, **value) == (False, want[key][2][len("MXNetError: ") :])
    for key, value in (("format", {"format": "xml"}), ("sort_by", {"sort_by": "name"})):
        assert want[key][:2] == ["AssertionError", True]
        is_assertion, message = error(profiler.dumps, **value)
        assert is_assertion and message.startswith(want[key][2].split(".")[0])

    profiler.set_config(
        aggregate_stats=True,
        profile_api=False,
        profile_memory=False,
        profile_imperative=False,
        profile_symbolic=False,
        continuous_dump=False,
        profile_all=0,
        dump_period=2,
        filename="x.json",
        profile_process="worker",
    )
    assert profiler.dumps() == want["empty"]
    profiler.set_state("run")
    with profiler.Domain("D").new_task("a_task_name"):
        pass
    lines = profiler.dumps().split("\n")
    at = lines.index("D")
    got = lines[at : at + 5]
    assert got[:4] == want["section"][:4]
    # the row: same name and count columns, four-decimal times at the same places
    assert len(got[4]) == len(want["section"][4]) and got[4][:41] == want["section"][4][:41]
    assert [len(x) for x in got[4][41:].split(".")] == [
        len(x) for x in want["section"][4][41:].split(".")
    ]


def test_other_bad_uses_are_errors():
    with pytest.raises(MXNetError, match="state must be 'run' or 'stop', got 'go'"):
        profiler.set_state("go")
    with pytest.raises(MXNetError, match="profile_process must be 'worker' or 'server'"):
        profiler.set_state("run", profile_process="client")
    with pytest.raises(MXNetError, match="profile_process"):
        profiler.pause(profile_process="client")
    with pytest.raises(MXNetError, match="Task 't' stopped without being started"):
        profiler.Domain("d").new_task("t").stop()
    with pytest.raises(MXNetError, match="scope must be one of"):
        profiler.Domain("d").new_marker("m").mark("galaxy")
    with pytest.raises(AssertionError, match="ascending"):
        profiler.dumps(ascending="yes")
    profiler.set_config(filename="ok.json")  # a bad call above changed nothing
    assert profiler._prof.config["profile_all"] is False


def test_deprecated_spellings_warn_and_work(tmp_path):
    with pytest.warns(DeprecationWarning, match="set_config"):
        profiler.profiler_set_config(mode="all", filename=str(tmp_path / "old.json"))
    assert profiler._prof.config["profile_all"] is True
    with pytest.warns(DeprecationWarning, match="set_state"):
        profiler.profiler_set_state("run")
    with profiler.Event("e"):
        pass
    with pytest.warns(DeprecationWarning, match="dump"):
        profiler.dump_profile()
    assert [e["name"] for e in _trace(tmp_path / "old.json")] == ["e"]


def test_the_event_buffer_is_bounded_and_says_what_it_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(profiler, "MAX_EVENTS", 3)
    profiler.set_config(filename=str(tmp_path / "t.json"))
    profiler.set_state("run")
    marker = profiler.Domain("d").new_marker("m")
    marker.mark()
    marker.mark()
    marker.mark()
    with pytest.warns(UserWarning, match="3 trace events are held"):
        marker.mark()
    marker.mark()  # warned once only (warnings are errors in this suite)
    profiler.dump()
    meta = json.loads((tmp_path / "t.json").read_text())["traceEvents"][0]
    assert meta["args"] == {"name": "mxrs", "dropped_events": 2}
    assert [e["name"] for e in _trace(tmp_path / "t.json")] == ["m", "m", "m"]
    # a finishing dump frees the buffer: a new session records again
    profiler.set_state("run")
    marker.mark()
    profiler.dump()
    meta = json.loads((tmp_path / "t.json").read_text())["traceEvents"][0]
    assert meta["args"] == {"name": "mxrs"} and len(_trace(tmp_path / "t.json")) == 1
