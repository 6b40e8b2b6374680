"""Symbol attributes as MXNet 1.9.1 stores and lists them: an operator's parameters, ``attr=``
and ``AttrScope`` attributes, the hidden keys (``lr_mult``, ``wd_mult``, ``ctx_group``...)
stored as ``__lr_mult__`` and listed under both names, and the errors for what MXNet refuses."""

import json

import mxnet_ref
import mxrs as mx
import pytest

GRAPH = """
data = mx.sym.Variable("data", attr={"mood": "angry"})
conv = mx.sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                          attr={"__mood__": "so so", "wd_mult": "0.5"}, lr_mult=2)
w = mx.sym.Variable("w", lr_mult=2, wd_mult=0.5, shape=(2, 3), dtype="float16",
                    init=mx.init.One(), stype="csr", attr={"a": "b", "__c__": "d"})
with mx.AttrScope(ctx_group="dev1", lr_mult="0.1", __tag__="t"):
    v = mx.sym.Variable("v")
    fc = mx.sym.FullyConnected(v, name="fc", num_hidden=3)
result = {
    "conv": conv.list_attr(),
    "w": w.list_attr(),
    "v": v.list_attr(),
    "fc": fc.list_attr(),
    "dict": conv.attr_dict(),
    "fc_dict": fc.attr_dict(),
    "get": [conv.attr("lr_mult"), conv.attr("__lr_mult__"), conv.attr("kernel"),
            conv.attr("wd_mult"), v.attr("ctx_group"), v.attr("__ctx_group__"),
            conv.attr("nothing")],
    "json": json.loads(conv.tojson())["nodes"][-1]["attrs"],
}
"""


def _mxrs_result():
    scope = {"mx": mx, "json": json}
    exec(GRAPH, scope)
    return scope["result"]


def test_attributes_are_listed_as_mxnet_lists_them(tmp_path):
    want, _ = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + GRAPH)
    got = _mxrs_result()
    assert got == want


def test_a_hidden_key_is_stored_once_and_listed_twice():
    got = _mxrs_result()
    assert got["conv"]["__lr_mult__"] == got["conv"]["lr_mult"] == "2"
    assert "lr_mult" not in got["json"] and got["json"]["__lr_mult__"] == "2"
    assert got["dict"]["conv_weight"]["__wd_mult__"] == "0.5"  # the weight takes the op's
    assert got["get"] == ["2", "2", "(1, 1)", "0.5", "dev1", "dev1", None]


def test_set_attr_stores_hidden_keys_hidden():
    s = mx.sym.Variable("x")
    s._set_attr(lr_mult="3", group="g")
    assert s.list_attr() == {"__lr_mult__": "3", "lr_mult": "3", "group": "g"}
    with pytest.raises(mx.MXNetError, match="must be a string"):
        s._set_attr(lr_mult=3)


def test_what_mxnet_refuses():
    data = mx.sym.Variable("data")
    with pytest.raises(mx.MXNetError, match="weight_lr_mult is deprecated"):
        mx.sym.FullyConnected(data, num_hidden=2, weight_lr_mult=0.1)
    with pytest.raises(mx.MXNetError, match="x_wd_mult is deprecated"):
        data._set_attr(x_wd_mult="1")
    with pytest.raises(DeprecationWarning, match="use attr_dict instead"):
        data.list_attr(recursive=True)
