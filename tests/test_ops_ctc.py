"""``mx.nd.CTCLoss`` / ``mx.sym.CTCLoss`` against MXNet 1.9.1: both blank conventions, lengths,
gradients, and Gluon's CTCLoss composed on Symbols."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd
from mxrs.base import MXNetError

RNG = np.random.RandomState(4)
DATA = RNG.uniform(-1, 1, (6, 3, 5)).astype(np.float32)  # (T, N, C)
FIRST = np.array([[1, 2, 2, 0], [3, 0, 0, 0], [4, 1, 3, 2]], np.float32)  # 0 pads, blank 0
LAST = np.array([[0, 1, 1, -1], [2, -1, -1, -1], [3, 0, 2, 1]], np.float32)  # -1 pads
DLEN = np.array([6, 4, 5], np.float32)
LLEN = np.array([3, 1, 2], np.float32)

REF = """
for case, label, extra in (('first', inputs['first'], {}), ('last', inputs['last'], {}),
                           ('lengths', inputs['last'], {'use_data_lengths': True,
                                                        'use_label_lengths': True})):
    x = mx.nd.array(inputs['data']); x.attach_grad()
    args = [x, mx.nd.array(label)]
    if extra:
        args += [mx.nd.array(inputs['dlen']), mx.nd.array(inputs['llen'])]
    with mx.autograd.record():
        loss = mx.nd.CTCLoss(*args, blank_label='first' if case == 'first' else 'last', **extra)
    loss.backward()
    arrays[case] = loss.asnumpy()
    arrays[case + '_grad'] = x.grad.asnumpy()
data = mx.sym.var('data'); label = mx.sym.var('label')
loss = mx.gluon.loss.CTCLoss(layout='TNC')(data, label)
exe = mx.sym.make_loss(loss).simple_bind(mx.cpu(), data=(6, 3, 5), label=(3, 4))
exe.arg_dict['data'][:] = inputs['data']; exe.arg_dict['label'][:] = inputs['last']
arrays['sym'] = exe.forward(is_train=True)[0].asnumpy()
exe.backward()
arrays['sym_grad'] = exe.grad_dict['data'].asnumpy()
result = {'args': loss.list_arguments(), 'ops': [n['op'] for n in __import__('json').loads(
    loss.tojson())['nodes']]}
"""


def test_ctc_matches_mxnet(tmp_path):
    inputs = {"data": DATA, "first": FIRST, "last": LAST, "dlen": DLEN, "llen": LLEN}
    ref_result, ref = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + REF, **inputs)
    ns = {"mx": mx, "inputs": inputs, "arrays": {}, "result": None}
    exec(REF, ns)
    for k, v in ref.items():
        np.testing.assert_allclose(ns["arrays"][k], v, rtol=1e-4, atol=1e-5, err_msg=k)
    assert ns["result"] == ref_result
    # blank first is blank last with the classes rolled by one
    rolled = np.concatenate([DATA[..., 1:], DATA[..., :1]], axis=2)
    last = mx.nd.CTCLoss(mx.nd.array(rolled), mx.nd.array(LAST), blank_label="last")
    np.testing.assert_allclose(ref["first"], last.asnumpy(), rtol=1e-5)


def test_ctc_errors():
    x = mx.nd.array(DATA)
    with pytest.raises(MXNetError, match="blank_label must be 'first' or 'last'"):
        mx.nd.CTCLoss(x, mx.nd.array(FIRST), blank_label="middle")
    with pytest.raises(MXNetError, match="use_data_lengths is set but no data_lengths"):
        mx.nd.CTCLoss(x, mx.nd.array(FIRST), use_data_lengths=True)
    with pytest.raises(MXNetError, match=r"data must be \(T, N, C\)"):
        mx.nd.ctc_loss(mx.nd.ones((6, 5)), mx.nd.array(FIRST))
    with autograd.record():
        loss = mx.nd.ctc_loss(x, mx.nd.array(FIRST))
    assert loss.shape == (3,)
