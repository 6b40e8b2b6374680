"""``mx.profiler`` records operators as MXNet 1.9.1 names them: imperative ones
(``profile_imperative``), an executor's nodes (``profile_symbolic``) and custom operators in
the ``Custom Operator`` category; nothing is hooked while the profiler is off."""

import json

import mxnet_ref
import mxrs as mx
import pytest
from mxrs import profiler
from mxrs.ndarray.ndarray import NDArray

#: MXNet's engine entries in the ``operator`` category, which run no operator of the script
ENGINE = {"DeleteVariable", "WaitForVar", "ResourceParallelRandomSetSeed", "CopyCPU2CPU",
          "SetValueOp", "SetupExec"}  # fmt: skip

IMPERATIVE = """
a = mx.nd.zeros((4, 5))
b = mx.nd.ones((4, 5))
mx.nd.sqrt(a)
a + 1
a + 1
1 - a
a * b
a / 2
2 / b
-a
abs(a)
a ** 2
a == b
a > 1
mx.nd.add(a, b)
mx.nd.maximum(a, 3)
mx.nd.dot(a, b, transpose_b=True)
mx.nd.relu(a)
mx.nd.random.uniform(shape=(3,))
mx.nd.full((2,), 3)
c = mx.nd.array([1, 2, 3])
mx.nd.empty((2,))
mx.nd.waitall()
"""


def _stats(prefix, body, scope):
    profiler.set_config(aggregate_stats=True, filename="ops.json", **prefix)
    profiler.set_state("run")
    profiler.dumps(reset=True)
    exec(body, scope)
    mx.nd.waitall()
    out = json.loads(profiler.dumps(format="json"))["Time"]
    profiler.set_state("stop")
    return out


@pytest.fixture(autouse=True)
def stopped_after(tmp_path, monkeypatch):
    """Run in ``tmp_path`` with a fresh profiler, and leave it stopped (its hooks taken out)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(profiler, "_prof", profiler._Profiler())
    yield
    profiler.set_state("stop")


def _counts(category):
    return {name: s["Count"] for name, s in category.items() if name not in ENGINE}


def test_imperative_operators_are_named_and_counted_as_mxnet_does(tmp_path):
    script = (
        "import json\nimport mxnet as mx\nfrom mxnet import profiler\n"
        "profiler.set_config(aggregate_stats=True, filename='ops.json')\n"
        "profiler.set_state('run')\nprofiler.dumps(reset=True)\n"
        + IMPERATIVE
        + "result = json.loads(profiler.dumps(format='json'))['Time']['operator']\n"
        "profiler.set_state('stop')\n"
    )
    want, _ = mxnet_ref.run(tmp_path, script)
    got = _stats({}, IMPERATIVE, {"mx": mx})
    assert _counts(got["operator"]) == _counts(want)
    assert got["operator"]["_plus_scalar"]["Count"] == 2
    stat = got["operator"]["sqrt"]
    assert stat["Min"] <= stat["Avg"] <= stat["Max"] and stat["Total"] > 0


def test_nothing_is_hooked_or_recorded_while_stopped_paused_or_not_asked():
    sqrt, add = mx.nd.sqrt, NDArray.__dict__.get("__add__")
    a = mx.nd.ones((2,))
    assert _stats({"profile_imperative": False, "profile_symbolic": False},
                  "a + 1; mx.nd.sqrt(a)", {"mx": mx, "a": a}) == {}  # fmt: skip
    profiler.set_config(profile_imperative=True, profile_symbolic=True)
    profiler.set_state("run")
    assert mx.nd.sqrt is not sqrt  # timed while recording
    profiler.pause()
    assert mx.nd.sqrt is sqrt and NDArray.__dict__.get("__add__") is add
    mx.nd.sqrt(a)
    profiler.set_state("run")  # 'run' ends the pause, as in MXNet
    a + 1
    profiler.set_state("stop")
    assert mx.nd.sqrt is sqrt and NDArray.__dict__.get("__add__") is add
    mx.nd.sqrt(a)
    assert _counts(json.loads(profiler.dumps(format="json"))["Time"]["operator"]) == {
        "_plus_scalar": 1
    }


def test_an_executor_records_each_node_once():
    a = mx.sym.Variable("a")
    net = mx.sym.relu(mx.sym.FullyConnected(a + 1, num_hidden=2, name="fc"), name="r")
    ex = net.simple_bind(mx.cpu(), a=(3, 4))
    got = _stats({"profile_symbolic": True, "profile_imperative": True}, "ex.forward()",
                 {"ex": ex})  # fmt: skip
    assert _counts(got["operator"]) == {"_plus_scalar": 1, "FullyConnected": 1, "relu": 1}
    got = _stats({"profile_symbolic": False, "profile_imperative": True}, "ex.forward()",
                 {"ex": ex})  # fmt: skip
    assert got == {}


@mx.operator.register("ProfiledAddOne")
class _AddOneProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _AddOne()


class _AddOne(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        mx.nd.zeros((2, 2))
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 1)


def test_custom_operators_are_recorded_in_their_category():
    body = """
x = mx.nd.ones((3,))
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.Custom(x, op_type="ProfiledAddOne")
y.backward()
"""
    got = _stats({}, body, {"mx": mx})
    assert _counts(got["Custom Operator"]) == {
        "ProfiledAddOne::pure_python": 1,
        "ProfiledAddOne::_zeros": 1,
        "ProfiledAddOne::_plus_scalar": 1,
        "_backward_ProfiledAddOne::pure_python": 1,
        "_backward_ProfiledAddOne::_mul_scalar": 1,
    }
    assert _counts(got["operator"]) == {"_ones": 1}  # the custom operator's own are not here


def test_custom_operators_in_a_graph(tmp_path):
    data = mx.sym.Variable("a")
    net = mx.sym.Custom(data=data, op_type="ProfiledAddOne", name="c")
    ex = net.bind(mx.cpu(), {"a": mx.nd.zeros((2, 2))})
    got = _stats({}, "ex.forward()", {"ex": ex})
    assert _counts(got["Custom Operator"]) == {
        "ProfiledAddOne::pure_python": 1,
        "ProfiledAddOne::_zeros": 1,
        "ProfiledAddOne::_plus_scalar": 1,
    }
    assert "operator" not in got


def test_the_trace_holds_operator_spans(tmp_path):
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    profiler.set_state("run")
    mx.nd.sqrt(mx.nd.ones((2,)))
    profiler.dump()
    with open(tmp_path / "trace.json") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "operator"]
    assert [(e["name"], e["ph"]) for e in events] == [("_ones", "X"), ("sqrt", "X")]
    assert all(e["dur"] >= 0 for e in events)
