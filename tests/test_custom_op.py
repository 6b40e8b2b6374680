"""Custom operators in Python (mx.operator): the same source run under mxrs and under Apache
MXNet 1.9.1 gives the same outputs and gradients, imperatively and in a bound symbol."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest

#: Registers "scaled_sigmoid" (one input, a string keyword) and "mul_add" (two inputs, two
#: outputs, an auxiliary state counting its forward passes).
OPS = """
class ScaledSigmoid(mx.operator.CustomOp):
    def __init__(self, scale):
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.scale / (1 + mx.nd.exp(-in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0] / self.scale
        self.assign(in_grad[0], req[0], out_grad[0] * self.scale * y * (1 - y))


@mx.operator.register("scaled_sigmoid")
class ScaledSigmoidProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)  # keywords arrive as strings

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return ScaledSigmoid(self.scale)


class MulAdd(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b)
        aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        self.assign(in_grad[0], req[0], out_grad[0] * b + out_grad[1])
        self.assign(in_grad[1], req[1], out_grad[0] * a + out_grad[1])


@mx.operator.register("mul_add")
class MulAddProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_outputs(self):
        return ["product", "total"]

    def list_auxiliary_states(self):
        return ["calls"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], [[1]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return MulAdd()
"""

RUN = """
x = mx.nd.array(inputs["x"])
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.Custom(x, op_type="scaled_sigmoid", scale=2.5)
y.backward(mx.nd.array(inputs["head"]))
arrays["sig.y"], arrays["sig.g"] = y.asnumpy(), x.grad.asnumpy()

a, b = mx.sym.var("a"), mx.sym.var("b")
sym = mx.sym.Custom(a, b, op_type="mul_add", name="ma")
arrays["names"] = np.array([",".join(sym.list_arguments()), ",".join(sym.list_outputs()),
                            ",".join(sym.list_auxiliary_states())])
ex = sym.simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
outs = ex.forward(is_train=True, a=mx.nd.array(inputs["x"]), b=mx.nd.array(inputs["head"]))
ex.backward([mx.nd.ones((2, 3)), mx.nd.array(inputs["x"])])
arrays["ma.p"], arrays["ma.t"] = outs[0].asnumpy(), outs[1].asnumpy()
arrays["ma.ga"], arrays["ma.gb"] = ex.grad_dict["a"].asnumpy(), ex.grad_dict["b"].asnumpy()
arrays["ma.calls"] = ex.aux_dict["ma_calls"].asnumpy()
"""


def test_custom_operators_match_mxnet(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    head = rng.standard_normal((2, 3)).astype(np.float32)
    _, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + OPS + RUN, x=x, head=head)
    scope = {"mx": mx, "np": np, "inputs": {"x": x, "head": head}, "arrays": {}}
    exec(OPS + RUN, scope)
    got = scope["arrays"]
    assert sorted(got) == sorted(want)
    assert list(got["names"]) == list(want["names"])
    for key in sorted(got):
        if key != "names":
            np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-7, err_msg=key)


def test_custom_operator_errors_name_the_operator():
    exec(OPS, {"mx": mx, "np": np})
    assert {"scaled_sigmoid", "mul_add"} <= set(mx.operator.get_all_registered_operators())
    with pytest.raises(mx.MXNetError, match="no custom operator 'nope' is registered"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="nope")
    with pytest.raises(mx.MXNetError, match=r"takes 2 inputs \['lhs', 'rhs'\]"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="mul_add")
    with pytest.raises(mx.MXNetError, match="op_type"):
        mx.sym.Custom(mx.sym.var("x"))
    # missing inputs of a symbol are named after the node, as MXNet names them
    sym = mx.sym.Custom(op_type="mul_add", name="m")
    assert sym.list_arguments() == ["m_lhs", "m_rhs"]
