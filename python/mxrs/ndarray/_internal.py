"""``mx.nd._internal``: the underscore names MXNet gives some operators that have no public
spelling (``_sample_unique_zipfian``), and the internal names of the sampling and density
operators and of the AdamW updates, for code written against MXNet's ``_internal`` module."""

from __future__ import annotations

from . import optimizer_ops as _opt
from . import random_pdf as _pdf
from . import random_sample as _sample

_sample_unique_zipfian = _sample.sample_unique_zipfian
_sample_uniform = _sample.sample_uniform
_sample_normal = _sample.sample_normal
_sample_gamma = _sample.sample_gamma
_sample_exponential = _sample.sample_exponential
_sample_poisson = _sample.sample_poisson
_sample_negative_binomial = _sample.sample_negative_binomial
_sample_generalized_negative_binomial = _sample.sample_generalized_negative_binomial
_sample_multinomial = _sample.sample_multinomial
_random_pdf_uniform = _pdf.random_pdf_uniform
_random_pdf_normal = _pdf.random_pdf_normal
_random_pdf_gamma = _pdf.random_pdf_gamma
_random_pdf_exponential = _pdf.random_pdf_exponential
_random_pdf_poisson = _pdf.random_pdf_poisson
_random_pdf_negative_binomial = _pdf.random_pdf_negative_binomial
_random_pdf_generalized_negative_binomial = _pdf.random_pdf_generalized_negative_binomial
_random_pdf_dirichlet = _pdf.random_pdf_dirichlet
_adamw_update = _opt.adamw_update
_mp_adamw_update = _opt.mp_adamw_update
_multi_adamw_update = _opt._multi_adamw_update
_multi_mp_adamw_update = _opt._multi_mp_adamw_update
