"""Graphs placed on several contexts by ``AttrScope(ctx_group=...)`` and
``bind``/``simple_bind(group2ctx=...)``: where arguments, gradients, auxiliary states and
outputs live, that the numbers are those of one context (and MXNet 1.9.1's), and the errors
MXNet gives for unknown groups and arrays off the bound context. Also ``simple_bind``'s
storage types."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest

GROUPS = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}

NET = """
with mx.AttrScope(ctx_group="stage1"):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=4)
    act1 = mx.sym.Activation(fc1, name="relu1", act_type="relu")
with mx.AttrScope(ctx_group="stage2"):
    fc2 = mx.sym.FullyConnected(act1, name="fc2", num_hidden=3)
    bn = mx.sym.BatchNorm(fc2, name="bn", fix_gamma=False)
net = mx.sym.sigmoid(bn, name="out")  # no group: it runs where its input is
"""

RUN = """
ex = net.simple_bind(mx.cpu(0), group2ctx=groups, data=(2, 5))
rng = np.random.RandomState(0)
for name in net.list_arguments():
    a = ex.arg_dict[name]
    a[:] = mx.nd.array(rng.uniform(-1, 1, a.shape))
out = ex.forward(is_train=True)[0]
ex.backward(mx.nd.ones(out.shape, ctx=out.context))
arrays["out"] = out.asnumpy()
for name, g in ex.grad_dict.items():
    arrays["grad_" + name] = g.asnumpy()
for name, a in ex.aux_dict.items():
    arrays["aux_" + name] = a.asnumpy()
"""


def _net():
    scope = {"mx": mx}
    exec(NET, scope)
    return scope["net"]


def test_simple_bind_puts_each_group_on_its_context():
    net = _net()
    ex = net.simple_bind(mx.cpu(0), group2ctx=GROUPS, data=(2, 5))
    stage1 = {"data", "fc1_weight", "fc1_bias"}
    for name, a in ex.arg_dict.items():
        assert a.context == GROUPS["stage1" if name in stage1 else "stage2"], name
        assert ex.grad_dict[name].context == a.context, name
    assert {n: a.context for n, a in ex.aux_dict.items()} == {
        "bn_moving_mean": mx.cpu(2),
        "bn_moving_var": mx.cpu(2),
    }
    assert ex.forward()[0].context == mx.cpu(2)
    # a grad_req of 'null' leaves that argument without a gradient, on its context still
    reqs = {n: "null" if n == "data" else "write" for n in net.list_arguments()}
    ex = net.simple_bind(mx.cpu(0), group2ctx=GROUPS, grad_req=reqs, data=(2, 5))
    assert ex.arg_dict["data"].context == mx.cpu(1) and "data" not in ex.grad_dict


def test_placed_graph_computes_what_mxnet_computes(tmp_path):
    _, want = mxnet_ref.run(
        tmp_path,
        "import mxnet as mx\n"
        + NET
        + "groups = {'stage1': mx.cpu(1), 'stage2': mx.cpu(2)}\n"
        + RUN,
    )
    got = {}
    exec(NET + RUN, {"mx": mx, "np": np, "groups": GROUPS, "arrays": got})
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # and what the same graph computes on one context
    one = {}
    exec(NET + RUN, {"mx": mx, "np": np, "groups": None, "arrays": one})
    for k in want:
        np.testing.assert_allclose(got[k], one[k], rtol=1e-6, atol=1e-7, err_msg=k)


def test_bind_with_group2ctx_runs_arrays_given_on_several_contexts():
    net = _net()
    placed = net.simple_bind(mx.cpu(0), group2ctx=GROUPS, data=(2, 5))
    args = {n: mx.nd.ones(a.shape, ctx=a.context) for n, a in placed.arg_dict.items()}
    aux = {n: mx.nd.ones(a.shape, ctx=a.context) for n, a in placed.aux_dict.items()}
    ex = net.bind(mx.cpu(0), args, aux_states=aux, group2ctx=GROUPS)
    out = ex.forward()[0]
    assert out.context == mx.cpu(2) and out.shape == (2, 3)
    # the same values on one context give the same numbers
    flat = net.bind(
        mx.cpu(0),
        {n: a.as_in_context(mx.cpu(0)) for n, a in args.items()},
        aux_states={n: a.as_in_context(mx.cpu(0)) for n, a in aux.items()},
    )
    np.testing.assert_allclose(out.asnumpy(), flat.forward()[0].asnumpy(), rtol=1e-6)


def test_a_group_missing_from_group2ctx_is_an_error():
    with pytest.raises(mx.MXNetError, match="device assignment not found for group 'stage2'"):
        _net().simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1)}, data=(2, 5))
    with pytest.raises(mx.MXNetError, match="group2ctx maps group names"):
        _net().simple_bind(mx.cpu(0), group2ctx={"stage1": "cpu(1)"}, data=(2, 5))


def test_without_group2ctx_every_array_must_be_on_the_bound_context():
    a = mx.sym.Variable("a")
    net = a * 2
    ex = net.bind(mx.cpu(1), {"a": mx.nd.ones((2,), ctx=mx.cpu(1))})
    assert ex.forward()[0].context == mx.cpu(1)
    with pytest.raises(mx.MXNetError, match=r"Input array 'a' is in cpu\(1\) while binding"):
        net.bind(mx.cpu(0), {"a": mx.nd.ones((2,), ctx=mx.cpu(1))})


def test_reshape_keeps_each_array_on_its_context():
    net = _net()
    ex = net.simple_bind(mx.cpu(0), group2ctx=GROUPS, data=(2, 5))
    bigger = ex.reshape(data=(4, 5))
    assert bigger.arg_dict["data"].context == mx.cpu(1)
    assert bigger.arg_dict["data"].shape == (4, 5)
    assert bigger.forward()[0].context == mx.cpu(2)


def test_simple_bind_allocates_the_storage_types_variables_declare():
    with mx.AttrScope(ctx_group="stage1"):
        lhs = mx.sym.Variable("lhs", stype="csr")
        rhs = mx.sym.Variable("rhs", stype="row_sparse")
        dot = mx.sym.dot(lhs, rhs, name="dot")
    with mx.AttrScope(ctx_group="stage2"):
        net = mx.sym.SoftmaxOutput(dot, name="softmax")
    ex = net.simple_bind(mx.cpu(0), group2ctx=GROUPS, lhs=(4, 6), rhs=(6, 5))
    assert [(n, a.stype, a.context) for n, a in ex.arg_dict.items()] == [
        ("lhs", "csr", mx.cpu(1)),
        ("rhs", "row_sparse", mx.cpu(1)),
        ("softmax_label", "default", mx.cpu(2)),
    ]
    assert ex.forward()[0].context == mx.cpu(2)
    ex = net.simple_bind(mx.cpu(0), stype_dict={"lhs": "default"}, lhs=(4, 6), rhs=(6, 5))
    assert ex.arg_dict["lhs"].stype == "default" and ex.arg_dict["rhs"].stype == "row_sparse"
