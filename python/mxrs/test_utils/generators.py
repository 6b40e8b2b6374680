"""Checking random generators statistically (means, variances, chi-square over buckets) and
retrying stochastic tests, as MXNet 1.9.1's ``test_utils`` does."""

from __future__ import annotations

import numpy as np

from .. import ndarray as nd

__all__ = [
    "retry",
    "gen_buckets_probs_with_ppf",
    "mean_check",
    "var_check",
    "chi_square_check",
    "verify_generator",
]


def retry(n: int):
    """Decorator: run a stochastic test up to ``n`` times, failing only if every run raises
    ``AssertionError`` (the last one is re-raised).

    Examples
    --------
    >>> @retry(3)
    ... def test_sampler():
    ...     assert abs(mx.nd.random.normal(shape=1000).asnumpy().mean()) < 0.1
    """
    if n <= 0:
        raise ValueError(f"retry: n must be positive, got {n}")

    def decorate(f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    nd.waitall()
            return None

        return wrapper

    return decorate


def gen_buckets_probs_with_ppf(ppf, nbuckets: int):
    """Buckets of equal probability for :func:`chi_square_check` from a quantile function.

    Parameters
    ----------
    ppf : callable
        The distribution's quantile function (inverse CDF).
    nbuckets : int

    Returns
    -------
    buckets : list of (float, float)
        ``(ppf(i / n), ppf((i + 1) / n))``.
    probs : list of float
        ``1 / n`` each.
    """
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``generator(nsamples)`` lies within ``mu +- 3 sigma / sqrt(n)``."""
    mean = np.array(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the (unbiased) variance of ``generator(nsamples)`` lies within
    ``sigma**2 +- 3 sqrt(2 sigma**4 / (n - 1))``."""
    var = np.array(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma**4 / (nsamples - 1))
    return bool(sigma**2 - half < var < sigma**2 + half)


def chi_square_check(generator, buckets, probs, nsamples: int = 1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against bucket probabilities.

    Parameters
    ----------
    generator : callable
        ``generator(n)`` returns ``n`` independent draws.
    buckets : list
        Of ``(low, high)`` ranges for a continuous distribution (ascending, not overlapping;
        ``low <= x < high``, compared in float32 as MXNet does), or of the values a discrete
        one takes.
    probs : list of float
        Each bucket's probability.
    nsamples : int

    Returns
    -------
    p : float
        The test's p-value (higher: more consistent with ``probs``).
    obs_freq : numpy.ndarray
        Draws per bucket.
    expected_freq : numpy.ndarray
        ``int(nsamples * prob)`` per bucket (truncated, as MXNet's).
    """
    import scipy.stats as ss  # type: ignore[import-untyped]

    if not isinstance(buckets, list):
        raise TypeError("chi_square_check: buckets must be a list")
    if len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: {len(probs)} probs for {len(buckets)} buckets")
    samples = np.asarray(generator(nsamples))
    continuous = isinstance(buckets[0], list | tuple)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if continuous:
        edges = np.array([e for b in buckets for e in b], dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            if lo > hi or (i + 1 < len(buckets) and hi > buckets[i + 1][0]):
                raise ValueError(f"chi_square_check: bucket {i} {(lo, hi)} is out of order")
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            observed[i] = int((ids == i).sum())
    else:
        for i, value in enumerate(buckets):
            observed[i] = int((samples == value).sum())
    # Pearson's statistic over k buckets, k - 1 degrees of freedom; computed here rather than
    # by scipy's chisquare, which refuses expected counts whose total (truncated, as
    # MXNet's) differs from the draws'
    obs, exp = observed.astype(np.float64), expected.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(np.sum((obs - exp) ** 2 / exp))
    p = float(ss.chi2.sf(statistic, len(buckets) - 1))
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples: int = 1000000, nrepeat: int = 5,
                     success_rate: float = 0.2, alpha: float = 0.05):  # fmt: skip
    """Run :func:`chi_square_check` ``nrepeat`` times and require that at least
    ``nrepeat * success_rate`` of the p-values exceed ``alpha``.

    Returns
    -------
    list of float
        The p-values.

    Raises
    ------
    AssertionError
        When too few runs pass, with their p-values and frequencies.
    """
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in runs]
    if (np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            f"generator test fails: chi-square p={pvalues}, "
            f"obs_freq={[r[1].tolist() for r in runs]}, "
            f"expected_freq={[r[2].tolist() for r in runs]}; buckets={buckets}, probs={probs}"
        )
    return pvalues
