"""gluon.nn GELU, InstanceNorm, GroupNorm and ReflectionPad2D, and their operators
(``nd.LeakyReLU(act_type='gelu')``, ``nd.InstanceNorm``, ``nd.GroupNorm``, ``nd.pad``).

The expected values were computed with Apache MXNet 1.9.1 on the same inputs and are written
here as constants, so the tests do not need MXNet.
"""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon
from mxrs.base import MXNetError
from mxrs.gluon import nn
from mxrs.test_utils import assert_almost_equal, check_numeric_gradient

X = np.sin(np.arange(24).reshape(2, 4, 3) * 1.7) * 2 + np.arange(24).reshape(2, 4, 3) * 0.1
X4 = np.sin(np.arange(48).reshape(2, 4, 2, 3) * 0.7) + np.arange(48).reshape(2, 4, 2, 3) * 0.05
XG = np.array([-3, -1.5, -0.5, 0, 0.3, 1, 2.5, 4.0])
P4 = np.arange(24).reshape(1, 2, 3, 4) ** 1.3 / 10
P5 = np.arange(24).reshape(1, 2, 2, 2, 3)
GN_GAMMA, GN_BETA = np.array([1.5, -0.5]), np.array([0.2, 0.3])
IN_GAMMA, IN_BETA = np.array([1.5, -0.5, 2.0, 0.7]), np.array([0.2, 0.3, -0.1, 0.0])

# ---- MXNet 1.9.1's results (head gradient: cos(0.9 * arange(size)) in the output's shape) ----

GN_Y = np.array(
    [
        [
            [-0.4879865, 1.8326387, -0.8345016],
            [-2.2163496, 1.0583621, 1.8478373],
            [0.7788708, 0.6786491, -0.4832712],
            [-0.1695142, 0.8256754, 0.1695902],
        ],
        [
            [1.8511577, -0.3909771, -2.1135466],
            [0.8116052, 2.0195251, -0.9777644],
            [0.896293, -0.1176035, 0.0093192],
            [0.9167487, 0.4822311, -0.3869884],
        ],
    ]
)

GN_DX = np.array(
    [
        [
            [1.3209828e00, 5.8750486e-01, 5.8597326e-04],
            [-5.6760299e-01, -9.9971366e-01, -3.4175694e-01],
            [-2.3398480e-01, -3.7180471e-01, -2.1032219e-01],
            [1.1033380e-01, 3.5351571e-01, 3.5226217e-01],
        ],
        [
            [-9.4648123e-02, 4.3760702e-01, 5.3407609e-01],
            [5.7463193e-01, -1.3701564e-01, -1.3146514e00],
            [3.7208092e-01, 8.2977742e-02, -1.8342786e-01],
            [-2.4096663e-01, -1.2998657e-01, 9.9322394e-02],
        ],
    ]
)

GN_DGAMMA = np.array([-0.2761541, -0.451302])

GN_DBETA = np.array([0.252655, 1.104205])

IN_Y = np.array(
    [
        [
            [-0.6332165, 2.305196, -1.0719794],
            [0.9950041, 0.0646446, -0.1596486],
            [-1.6852138, -1.335367, 2.7205808],
            [0.7533421, -0.9323094, 0.1789673],
        ],
        [
            [2.111496, 0.0399914, -1.5514876],
            [0.2213244, -0.2690044, 0.9476802],
            [-2.908963, 1.5858163, 1.0231458],
            [-0.7481617, -0.1870999, 0.9352614],
        ],
    ]
)

IN_DX = np.array(
    [
        [
            [8.8794756e-01, -1.1508000e-01, -7.7286762e-01],
            [-2.0051703e-02, 1.0340638e-01, -8.3354726e-02],
            [-2.4212611e-01, 2.6308644e-01, -2.0960569e-02],
            [1.1468208e-01, 5.9025705e-02, -1.7370784e-01],
        ],
        [
            [-4.7278702e-02, 1.0823566e-01, -6.0956895e-02],
            [-3.1705827e-01, 1.8915351e-01, 1.2790473e-01],
            [-9.4809130e-02, -6.5861630e-01, 7.5342548e-01],
            [-1.2599081e-03, 2.0417571e-03, -7.8184903e-04],
        ],
    ]
)

IN_DGAMMA = np.array([-0.9741255, 1.6277578, 1.1961045, -0.8675376])

IN_DBETA = np.array([2.8471088, -2.5944541, 1.8440379, -0.7398329])

GELU_Y = np.array(
    [-0.0040499, -0.1002109, -0.1542688, 0.0, 0.1853734, 0.8413447, 2.4844759, 3.9998732]
)

GELU_DX = np.array(
    [-0.0119456, -0.0792361, -0.0301054, -0.4520361, -0.6567211, -0.2283583, 0.6585643, 1.0003622]
)

GELU16_Y = np.array([-0.0040512, -0.1002197, -0.1542969, 0.0, 0.1854248, 0.8413086, 2.484375, 4.0])

GN16_Y = np.array(
    [
        [
            [-0.4875488, 1.8330078, -0.8330078],
            [-2.2167969, 1.0585938, 1.8486328],
            [0.7788086, 0.6787109, -0.4831543],
            [-0.1694336, 0.8251953, 0.1696777],
        ],
        [
            [1.8505859, -0.3908691, -2.1132812],
            [0.8125, 2.0195312, -0.9765625],
            [0.8964844, -0.1179199, 0.0090332],
            [0.9169922, 0.4824219, -0.3864746],
        ],
    ]
)

PAD4_REFLECT = np.array(
    [
        [
            [
                [1.0270619, 0.8103283, 0.6062866, 0.8103283, 1.0270619, 1.254953, 1.0270619],
                [0.2462289, 0.1, 0.0, 0.1, 0.2462289, 0.4171168, 0.2462289],
                [1.0270619, 0.8103283, 0.6062866, 0.8103283, 1.0270619, 1.254953, 1.0270619],
                [1.9952623, 1.7398639, 1.4928528, 1.7398639, 1.9952623, 2.25845, 1.9952623],
                [1.0270619, 0.8103283, 0.6062866, 0.8103283, 1.0270619, 1.254953, 1.0270619],
                [0.2462289, 0.1, 0.0, 0.1, 0.2462289, 0.4171168, 0.2462289],
            ],
            [
                [4.2840471, 3.9772565, 3.6758347, 3.9772565, 4.2840471, 4.5959964, 4.2840471],
                [3.0900567, 2.8062501, 2.528923, 2.8062501, 3.0900567, 3.3800151, 3.0900567],
                [4.2840471, 3.9772565, 3.6758347, 3.9772565, 4.2840471, 4.5959964, 4.2840471],
                [5.5609565, 5.2346191, 4.9129119, 5.2346191, 5.5609565, 5.8917756, 5.5609565],
                [4.2840471, 3.9772565, 3.6758347, 3.9772565, 4.2840471, 4.5959964, 4.2840471],
                [3.0900567, 2.8062501, 2.528923, 2.8062501, 3.0900567, 3.3800151, 3.0900567],
            ],
        ]
    ]
)

PAD4_EDGE = np.array(
    [
        [
            [
                [0.0, 0.0, 0.0, 0.1, 0.2462289, 0.4171168, 0.4171168],
                [0.0, 0.0, 0.0, 0.1, 0.2462289, 0.4171168, 0.4171168],
                [0.6062866, 0.6062866, 0.6062866, 0.8103283, 1.0270619, 1.254953, 1.254953],
                [1.4928528, 1.4928528, 1.4928528, 1.7398639, 1.9952623, 2.25845, 2.25845],
                [1.4928528, 1.4928528, 1.4928528, 1.7398639, 1.9952623, 2.25845, 2.25845],
                [1.4928528, 1.4928528, 1.4928528, 1.7398639, 1.9952623, 2.25845, 2.25845],
            ],
            [
                [2.528923, 2.528923, 2.528923, 2.8062501, 3.0900567, 3.3800151, 3.3800151],
                [2.528923, 2.528923, 2.528923, 2.8062501, 3.0900567, 3.3800151, 3.3800151],
                [3.6758347, 3.6758347, 3.6758347, 3.9772565, 4.2840471, 4.5959964, 4.5959964],
                [4.9129119, 4.9129119, 4.9129119, 5.2346191, 5.5609565, 5.8917756, 5.8917756],
                [4.9129119, 4.9129119, 4.9129119, 5.2346191, 5.5609565, 5.8917756, 5.8917756],
                [4.9129119, 4.9129119, 4.9129119, 5.2346191, 5.5609565, 5.8917756, 5.8917756],
            ],
        ]
    ]
)

PAD4_CONSTANT = np.array(
    [
        [
            [
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
                [-1.5, -1.5, 0.0, 0.1, 0.2462289, 0.4171168, -1.5],
                [-1.5, -1.5, 0.6062866, 0.8103283, 1.0270619, 1.254953, -1.5],
                [-1.5, -1.5, 1.4928528, 1.7398639, 1.9952623, 2.25845, -1.5],
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
            ],
            [
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
                [-1.5, -1.5, 2.528923, 2.8062501, 3.0900567, 3.3800151, -1.5],
                [-1.5, -1.5, 3.6758347, 3.9772565, 4.2840471, 4.5959964, -1.5],
                [-1.5, -1.5, 4.9129119, 5.2346191, 5.5609565, 5.8917756, -1.5],
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
                [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5],
            ],
        ]
    ]
)

PAD5_REFLECT = np.array(
    [
        [
            [
                [
                    [8.0, 7.0, 6.0, 7.0, 8.0, 7.0],
                    [11.0, 10.0, 9.0, 10.0, 11.0, 10.0],
                    [8.0, 7.0, 6.0, 7.0, 8.0, 7.0],
                ],
                [
                    [2.0, 1.0, 0.0, 1.0, 2.0, 1.0],
                    [5.0, 4.0, 3.0, 4.0, 5.0, 4.0],
                    [2.0, 1.0, 0.0, 1.0, 2.0, 1.0],
                ],
                [
                    [8.0, 7.0, 6.0, 7.0, 8.0, 7.0],
                    [11.0, 10.0, 9.0, 10.0, 11.0, 10.0],
                    [8.0, 7.0, 6.0, 7.0, 8.0, 7.0],
                ],
                [
                    [2.0, 1.0, 0.0, 1.0, 2.0, 1.0],
                    [5.0, 4.0, 3.0, 4.0, 5.0, 4.0],
                    [2.0, 1.0, 0.0, 1.0, 2.0, 1.0],
                ],
            ],
            [
                [
                    [20.0, 19.0, 18.0, 19.0, 20.0, 19.0],
                    [23.0, 22.0, 21.0, 22.0, 23.0, 22.0],
                    [20.0, 19.0, 18.0, 19.0, 20.0, 19.0],
                ],
                [
                    [14.0, 13.0, 12.0, 13.0, 14.0, 13.0],
                    [17.0, 16.0, 15.0, 16.0, 17.0, 16.0],
                    [14.0, 13.0, 12.0, 13.0, 14.0, 13.0],
                ],
                [
                    [20.0, 19.0, 18.0, 19.0, 20.0, 19.0],
                    [23.0, 22.0, 21.0, 22.0, 23.0, 22.0],
                    [20.0, 19.0, 18.0, 19.0, 20.0, 19.0],
                ],
                [
                    [14.0, 13.0, 12.0, 13.0, 14.0, 13.0],
                    [17.0, 16.0, 15.0, 16.0, 17.0, 16.0],
                    [14.0, 13.0, 12.0, 13.0, 14.0, 13.0],
                ],
            ],
        ]
    ]
)

PAD5_EDGE = np.array(
    [
        [
            [
                [
                    [0.0, 0.0, 0.0, 1.0, 2.0, 2.0],
                    [3.0, 3.0, 3.0, 4.0, 5.0, 5.0],
                    [3.0, 3.0, 3.0, 4.0, 5.0, 5.0],
                ],
                [
                    [0.0, 0.0, 0.0, 1.0, 2.0, 2.0],
                    [3.0, 3.0, 3.0, 4.0, 5.0, 5.0],
                    [3.0, 3.0, 3.0, 4.0, 5.0, 5.0],
                ],
                [
                    [6.0, 6.0, 6.0, 7.0, 8.0, 8.0],
                    [9.0, 9.0, 9.0, 10.0, 11.0, 11.0],
                    [9.0, 9.0, 9.0, 10.0, 11.0, 11.0],
                ],
                [
                    [6.0, 6.0, 6.0, 7.0, 8.0, 8.0],
                    [9.0, 9.0, 9.0, 10.0, 11.0, 11.0],
                    [9.0, 9.0, 9.0, 10.0, 11.0, 11.0],
                ],
            ],
            [
                [
                    [12.0, 12.0, 12.0, 13.0, 14.0, 14.0],
                    [15.0, 15.0, 15.0, 16.0, 17.0, 17.0],
                    [15.0, 15.0, 15.0, 16.0, 17.0, 17.0],
                ],
                [
                    [12.0, 12.0, 12.0, 13.0, 14.0, 14.0],
                    [15.0, 15.0, 15.0, 16.0, 17.0, 17.0],
                    [15.0, 15.0, 15.0, 16.0, 17.0, 17.0],
                ],
                [
                    [18.0, 18.0, 18.0, 19.0, 20.0, 20.0],
                    [21.0, 21.0, 21.0, 22.0, 23.0, 23.0],
                    [21.0, 21.0, 21.0, 22.0, 23.0, 23.0],
                ],
                [
                    [18.0, 18.0, 18.0, 19.0, 20.0, 20.0],
                    [21.0, 21.0, 21.0, 22.0, 23.0, 23.0],
                    [21.0, 21.0, 21.0, 22.0, 23.0, 23.0],
                ],
            ],
        ]
    ]
)

PAD5_CONSTANT = np.array(
    [
        [
            [
                [
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 0.0, 1.0, 2.0, 3.0],
                    [3.0, 3.0, 3.0, 4.0, 5.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 6.0, 7.0, 8.0, 3.0],
                    [3.0, 3.0, 9.0, 10.0, 11.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
            ],
            [
                [
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 12.0, 13.0, 14.0, 3.0],
                    [3.0, 3.0, 15.0, 16.0, 17.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 18.0, 19.0, 20.0, 3.0],
                    [3.0, 3.0, 21.0, 22.0, 23.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
                [
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
                ],
            ],
        ]
    ]
)

IN_AXIS3_Y = np.array(
    [
        [
            [[-0.9548837, 0.2467362, 1.0271622], [0.9741969, -0.0830251, -1.3766509]],
            [[-2.0431244, -2.5007727, -1.6410658], [-0.0661023, 1.2051219, 1.9445627]],
            [[1.8145722, 0.816009, -0.4965658], [-1.2018155, -1.5620492, -0.7025682]],
            [[0.8226701, 2.1631229, 2.8613973], [2.6544874, 1.7148561, 0.3837292]],
        ],
        [
            [[-2.2090962, -2.2603292, -1.7925804], [-0.1669107, 0.8343608, 1.2331789]],
            [[1.5904233, 0.4150604, -0.9142907], [-1.3787379, -1.4833522, -0.9901285]],
            [[0.709258, 1.6256739, 2.015552], [2.417577, 1.15784, -0.161784]],
            [[-0.5479044, -0.7059046, -0.1873867], [1.5853906, 2.416651, 2.7974389]],
        ],
    ]
)

GN_LAYER4_Y = np.array(
    [
        [
            [[-1.1795504, 0.3429361, 1.2009457], [1.0425156, -0.0062697, -1.4005778]],
            [[-1.0264127, -1.0991241, -0.6199477], [0.2138392, 1.0381811, 1.4934641]],
            [[1.7152381, 0.8890144, -0.1926102], [-0.9809113, -1.0651196, -0.3656115]],
            [[-1.097585, 0.4037529, 1.2158463], [1.0082241, -0.0699963, -1.4602419]],
        ],
        [
            [[-1.0545148, -1.0996721, -0.6003975], [0.2363939, 1.0450476, 1.4731432]],
            [[1.7288153, 0.8654, -0.2313323], [-1.0049309, -1.0509202, -0.3070309]],
            [[-1.012949, 0.4627413, 1.2267491], [0.9710116, -0.1329329, -1.5146194]],
            [[-1.0819471, -1.0998065, -0.5808479], [0.2585911, 1.0514468, 1.4525628]],
        ],
    ]
)

RP_Y = np.array(
    [
        [
            [
                [0.5349882, 1.0132093, 0.5349882, -0.1007832, 0.5349882],
                [0.6942177, 0.0, 0.6942177, 1.0854497, 0.6942177],
                [0.5349882, 1.0132093, 0.5349882, -0.1007832, 0.5349882],
                [0.6942177, 0.0, 0.6942177, 1.0854497, 0.6942177],
            ],
            [
                [1.1569866, 0.4668139, 1.1569866, 1.5381682, 1.1569866],
                [-0.6324526, -0.5715758, -0.6324526, -0.2312666, -0.6324526],
                [1.1569866, 0.4668139, 1.1569866, 1.5381682, 1.1569866],
                [-0.6324526, -0.5715758, -0.6324526, -0.2312666, -0.6324526],
            ],
        ]
    ]
)


PAD_WIDTH_4 = (0, 0, 0, 0, 1, 2, 2, 1)
PAD_WIDTH_5 = (0, 0, 0, 0, 1, 1, 0, 1, 2, 1)
FLOATS = ["float16", "float32", "float64"]


def _head(shape, dtype="float32"):
    return mx.nd.array(np.cos(np.arange(int(np.prod(shape))) * 0.9).reshape(shape), dtype=dtype)


def _run(f, arrays, dtype="float32"):
    """Forward ``f`` on ``arrays`` (NumPy) recording, backprop the cosine head; return NumPy
    output and input gradients."""
    xs = [mx.nd.array(a, dtype=dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = f(*xs)
    y.backward(_head(y.shape, dtype))
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


def _gelu(x):
    return mx.nd.LeakyReLU(x, act_type="gelu")


def _group_norm(x, gamma, beta):
    return mx.nd.GroupNorm(x, gamma, beta, num_groups=2, eps=1e-5)


def _instance_norm(x, gamma, beta):
    return mx.nd.InstanceNorm(x, gamma, beta, eps=1e-3)


# ---- GELU ----


def test_gelu_matches_mxnet():
    y, dx = _run(_gelu, [XG])
    assert y.dtype == np.float32
    assert_almost_equal(y, GELU_Y, rtol=1e-5, atol=1e-6)
    assert_almost_equal(dx, GELU_DX, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu_dtypes(dtype):
    y = _gelu(mx.nd.array(XG, dtype=dtype)).asnumpy()
    assert y.dtype == np.dtype(dtype)
    expected = GELU16_Y if dtype == "float16" else GELU_Y
    tol = 1e-3 if dtype == "float16" else 1e-6
    assert_almost_equal(y.astype(np.float64), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_numeric_gradient(dtype):
    eps, tol = (1e-2, 1e-2) if dtype == "float32" else (1e-4, 1e-5)
    check_numeric_gradient(_gelu, [XG], numeric_eps=eps, rtol=tol, atol=tol, dtype=dtype)


def test_gelu_layer():
    layer = nn.GELU()
    layer.initialize()
    assert_almost_equal(layer(mx.nd.array(XG)).asnumpy(), GELU_Y, rtol=1e-5, atol=1e-6)
    assert not layer.collect_params()
    assert repr(layer) == "GELU(\n\n)"


def test_unknown_leaky_relu_act_type_still_raises():
    with pytest.raises(MXNetError, match="act_type"):
        mx.nd.LeakyReLU(mx.nd.array(XG), act_type="gelu_tanh")


# ---- GroupNorm ----


def test_group_norm_matches_mxnet():
    y, dx, dgamma, dbeta = _run(_group_norm, [X, GN_GAMMA, GN_BETA])
    assert_almost_equal(y, GN_Y, rtol=1e-5, atol=1e-5)
    assert_almost_equal(dx, GN_DX, rtol=1e-4, atol=1e-5)
    assert_almost_equal(dgamma, GN_DGAMMA, rtol=1e-4, atol=1e-5)
    assert_almost_equal(dbeta, GN_DBETA, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm_dtypes(dtype):
    y, dx, dgamma, dbeta = _run(_group_norm, [X, GN_GAMMA, GN_BETA], dtype)
    for a in (y, dx, dgamma, dbeta):
        assert a.dtype == np.dtype(dtype)
    expected = GN16_Y if dtype == "float16" else GN_Y
    tol = 4e-3 if dtype == "float16" else 1e-5
    assert_almost_equal(y.astype(np.float64), expected, rtol=tol, atol=tol)
    tol = 1e-2 if dtype == "float16" else 1e-4
    assert_almost_equal(dx.astype(np.float64), GN_DX, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 6, 2, 2), (1, 4, 2, 1, 2)])
def test_group_norm_numeric_gradient(dtype, shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(2), rng.standard_normal(2)
    eps, tol = (1e-2, 2e-2) if dtype == "float32" else (1e-4, 1e-5)
    check_numeric_gradient(
        _group_norm, [x, gamma, beta], numeric_eps=eps, rtol=tol, atol=tol, dtype=dtype
    )


def test_group_norm_one_group_is_layer_norm_over_sample():
    x = mx.nd.array(X4)
    y = mx.nd.GroupNorm(x, mx.nd.ones((1,)), mx.nd.zeros((1,))).asnumpy()
    flat = X4.reshape(2, -1)
    ref = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    assert_almost_equal(y, ref.reshape(X4.shape), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "groups", "gshape", "match"),
    [
        ((2, 4), 2, (2,), "rank >= 3"),
        ((4,), 1, (1,), "rank >= 3"),
        ((2, 5, 3), 2, (2,), "divisible by num_groups"),
        ((2, 4, 3), 0, (1,), "divisible by num_groups"),
        ((2, 4, 3), 2, (4,), r"gamma must have shape \(2,\)"),
    ],
)
def test_group_norm_bad_input(shape, groups, gshape, match):
    with pytest.raises(MXNetError, match=match):
        mx.nd.GroupNorm(mx.nd.ones(shape), mx.nd.ones(gshape), mx.nd.zeros(gshape), groups)


def test_group_norm_output_mean_var_is_refused():
    with pytest.raises(MXNetError, match="output_mean_var"):
        mx.nd.GroupNorm(mx.nd.ones((2, 2, 2)), mx.nd.ones((1,)), mx.nd.zeros((1,)), 1, 1e-5, True)


def test_group_norm_layer():
    layer = nn.GroupNorm(num_groups=4)
    assert repr(layer) == "GroupNorm(eps=1e-05, num_groups=4, center=True, scale=True)"
    layer.initialize()
    assert layer.gamma.shape == (4,) and layer.beta.shape == (4,)
    assert layer.gamma.grad_req == "write" and layer.beta.grad_req == "write"
    assert_almost_equal(layer(mx.nd.array(X4)).asnumpy(), GN_LAYER4_Y, rtol=1e-5, atol=1e-5)
    frozen = nn.GroupNorm(2, epsilon=1e-3, center=False, scale=False, prefix="gn_")
    assert frozen.gamma.grad_req == "null" and frozen.beta.grad_req == "null"
    assert sorted(frozen.collect_params()) == ["gn_beta", "gn_gamma"]
    assert "eps=0.001, num_groups=2, center=False, scale=False" in repr(frozen)


def test_group_norm_layer_bad_channels():
    layer = nn.GroupNorm(num_groups=3)
    layer.initialize()
    with pytest.raises(MXNetError, match="divisible"):
        layer(mx.nd.array(X4))


# ---- InstanceNorm ----


def test_instance_norm_matches_mxnet():
    y, dx, dgamma, dbeta = _run(_instance_norm, [X, IN_GAMMA, IN_BETA])
    assert_almost_equal(y, IN_Y, rtol=1e-5, atol=1e-5)
    assert_almost_equal(dx, IN_DX, rtol=1e-4, atol=1e-5)
    assert_almost_equal(dgamma, IN_DGAMMA, rtol=1e-4, atol=1e-5)
    assert_almost_equal(dbeta, IN_DBETA, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 4, 2, 3), (1, 4, 2, 2, 2)])
def test_instance_norm_numeric_gradient(shape):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(4), rng.standard_normal(4)
    check_numeric_gradient(
        _instance_norm, [x, gamma, beta], numeric_eps=1e-2, rtol=2e-2, atol=2e-2, dtype="float32"
    )


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_instance_norm_is_float32_only(dtype):
    x, g, b = (mx.nd.ones(s, dtype=dtype) for s in ((2, 4, 3), (4,), (4,)))
    with pytest.raises(MXNetError, match="float32"):
        mx.nd.InstanceNorm(x, g, b)


@pytest.mark.parametrize(
    ("shape", "gshape", "match"),
    [((2, 4), (4,), "rank >= 3"), ((2, 4, 3), (3,), r"gamma must have shape \(4,\)")],
)
def test_instance_norm_bad_input(shape, gshape, match):
    with pytest.raises(MXNetError, match=match):
        mx.nd.InstanceNorm(mx.nd.ones(shape), mx.nd.ones(gshape), mx.nd.zeros(gshape))


def test_instance_norm_layer_defers_in_channels():
    layer = nn.InstanceNorm()
    assert repr(layer) == "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)"
    assert layer.gamma.grad_req == "null" and layer.beta.grad_req == "write"
    layer.initialize()
    x = mx.nd.array(X)
    y = layer(x).asnumpy()
    assert layer.gamma.shape == (4,)
    assert repr(layer).endswith("in_channels=4)")
    ref = (X - X.mean(2, keepdims=True)) / np.sqrt(X.var(2, keepdims=True) + 1e-5)
    assert_almost_equal(y, ref, rtol=1e-4, atol=1e-5)


def test_instance_norm_layer_other_axis():
    layer = nn.InstanceNorm(
        axis=3,
        scale=True,
        gamma_initializer=mx.init.Constant(1.5),
        beta_initializer=mx.init.Constant(0.25),
        in_channels=3,
    )
    layer.initialize()
    assert layer.gamma.grad_req == "write"
    assert_almost_equal(layer(mx.nd.array(X4)).asnumpy(), IN_AXIS3_Y, rtol=1e-5, atol=1e-5)


# ---- pad and ReflectionPad2D ----


@pytest.mark.parametrize("mode", ["reflect", "edge", "constant"])
def test_pad_4d_matches_mxnet(mode):
    y = mx.nd.pad(mx.nd.array(P4), mode=mode, pad_width=PAD_WIDTH_4, constant_value=-1.5)
    expected = {"reflect": PAD4_REFLECT, "edge": PAD4_EDGE, "constant": PAD4_CONSTANT}[mode]
    assert_almost_equal(y.asnumpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "edge", "constant"])
def test_pad_5d_matches_mxnet(mode):
    y = mx.nd.pad(mx.nd.array(P5), mode, PAD_WIDTH_5, 3)
    expected = {"reflect": PAD5_REFLECT, "edge": PAD5_EDGE, "constant": PAD5_CONSTANT}[mode]
    assert_almost_equal(y.asnumpy(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["reflect", "edge", "constant"])
def test_pad_gradient_matches_mxnet(mode):
    x = mx.nd.array(np.arange(12).reshape(1, 1, 3, 4))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.pad(x, mode=mode, pad_width=(0, 0, 0, 0, 2, 1, 1, 3))
    y.backward(mx.nd.array(np.arange(y.size).reshape(y.shape)))
    expected = {
        "reflect": [[40, 56, 40, 20], [168, 240, 168, 84], [80, 112, 80, 40]],
        "edge": [[51, 30, 33, 162], [49, 26, 27, 118], [146, 76, 78, 332]],
        "constant": [[17, 18, 19, 20], [25, 26, 27, 28], [33, 34, 35, 36]],
    }[mode]
    assert_almost_equal(x.grad.asnumpy(), np.array([[expected]]), rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["reflect", "edge", "constant"])
@pytest.mark.parametrize(
    ("shape", "width"),
    [((1, 2, 3, 4), PAD_WIDTH_4), ((1, 1, 2, 3, 3), (0, 0, 0, 0, 1, 0, 2, 2, 0, 1))],
)
def test_pad_numeric_gradient(mode, shape, width):
    x = np.random.default_rng(7).standard_normal(shape)

    def f(a):
        return mx.nd.pad(a, mode=mode, pad_width=width, constant_value=0.5)

    check_numeric_gradient(f, [x])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reflect", "edge", "constant"])
def test_pad_dtypes(dtype, mode):
    x = mx.nd.array(P5, dtype=dtype)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.pad(x, mode=mode, pad_width=PAD_WIDTH_5, constant_value=3)
    y.backward(mx.nd.ones(y.shape, dtype=dtype))
    expected = {"reflect": PAD5_REFLECT, "edge": PAD5_EDGE, "constant": PAD5_CONSTANT}[mode]
    assert y.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
    assert_almost_equal(y.asnumpy().astype(np.float64), expected, rtol=0, atol=0)
    assert float(x.grad.asnumpy().astype(np.float64).sum()) == y.size - (
        0 if mode != "constant" else y.size - P5.size
    )


def test_pad_out_and_alias():
    out = mx.nd.zeros((1, 2, 6, 7))
    res = mx.nd.Pad(mx.nd.array(P4), mode="edge", pad_width=PAD_WIDTH_4, out=out)
    assert res is out
    assert_almost_equal(out.asnumpy(), PAD4_EDGE, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("shape", "mode", "width", "match"),
    [
        ((1, 1, 3), "constant", (0, 0, 0, 0, 1, 1), "4-d or 5-d"),
        ((1, 1, 1, 1, 1, 3), "constant", (0,) * 12, "4-d or 5-d"),
        ((1, 1, 3, 3), "constant", (0, 0, 0, 0, 1, 1), "2 values per axis, 8"),
        ((1, 1, 3, 3, 3), "edge", (0, 0, 0, 0, 1, 1, 1, 1), "2 values per axis, 10"),
        ((1, 1, 3, 3), "constant", (0, 0, 1, 0, 1, 1, 1, 1), "first two axes"),
        ((1, 1, 3, 3), "edge", (0, 0, 0, 0, -1, 1, 1, 1), "negative"),
        ((1, 1, 3, 3), "reflect", (0, 0, 0, 0, 1, 3, 1, 1), "smaller than the size"),
        ((1, 1, 3, 3), "wrap", (0, 0, 0, 0, 1, 1, 1, 1), "unknown mode"),
    ],
)
def test_pad_bad_input(shape, mode, width, match):
    with pytest.raises(MXNetError, match=match):
        mx.nd.pad(mx.nd.ones(shape), mode=mode, pad_width=width)


def test_reflection_pad_layer():
    layer = nn.ReflectionPad2D(1)
    assert not layer.collect_params()
    assert_almost_equal(layer(mx.nd.array(X4[:1, :2])).asnumpy(), RP_Y, rtol=1e-6, atol=1e-6)
    wide = nn.ReflectionPad2D((0, 0, 0, 0, 0, 1, 2, 0))
    assert wide(mx.nd.array(X4)).shape == (2, 4, 3, 5)
    assert nn.ReflectionPad2D(np.int64(1))(mx.nd.array(X4)).shape == (2, 4, 4, 5)


def test_reflection_pad_layer_bad_padding():
    with pytest.raises(MXNetError, match="8 values"):
        nn.ReflectionPad2D((1, 1, 1, 1))
    with pytest.raises(MXNetError, match="smaller than the size"):
        nn.ReflectionPad2D(2)(mx.nd.array(X4))


# ---- in a network, with a Trainer step ----


@pytest.mark.parametrize("hybridize", [False, True])
def test_layers_train_in_hybrid_sequential(hybridize):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(
            nn.ReflectionPad2D(1),
            nn.Conv2D(4, kernel_size=3),
            nn.InstanceNorm(scale=True),
            nn.GELU(),
            nn.GroupNorm(num_groups=2),
            nn.Flatten(),
            nn.Dense(3),
        )
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = mx.nd.array(np.random.default_rng(11).standard_normal((2, 3, 5, 5)))
    label = mx.nd.array([0, 2])
    net(x)
    params = net.collect_params()
    before = {name: p.data().asnumpy().copy() for name, p in params.items()}
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.5})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x), label)
    loss.backward()
    trainer.step(2)
    changed = {n for n, p in params.items() if not np.array_equal(p.data().asnumpy(), before[n])}
    in_gamma = [n for n in params if "instancenorm" in n and n.endswith("gamma")]
    gn = [n for n in params if "groupnorm" in n]
    assert in_gamma and len(gn) == 2
    assert set(in_gamma) | set(gn) <= changed
    assert params[gn[0]].shape == (2,)
    assert len(changed) == len(params)
