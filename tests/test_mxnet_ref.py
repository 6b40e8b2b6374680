"""The MXNet 1.9.1 reference runner itself: inputs in, results out, failures loud."""

import mxnet_ref
import numpy as np
import pytest


def test_a_reference_script_gets_inputs_and_returns_results(tmp_path):
    result, arrays = mxnet_ref.run(
        tmp_path,
        """
        import mxnet as mx
        x = mx.nd.array(inputs["x"])
        arrays["y"] = (x * 2).asnumpy()
        result = {"version": mx.__version__, "n": int(x.size)}
        """,
        x=np.arange(6, dtype=np.float32).reshape(2, 3),
    )
    assert result == {"version": "1.9.1", "n": 6}
    np.testing.assert_array_equal(arrays["y"], np.arange(6, dtype=np.float32).reshape(2, 3) * 2)


def test_a_failing_reference_script_fails_the_test_with_its_error(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="ZeroDivisionError"):
        mxnet_ref.run(tmp_path, "1 / 0")
