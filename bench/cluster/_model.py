"""A small model of one data-parallel step on the emulated cluster, calibrated on measured jobs.

A step is computation ``C`` plus whatever communication it cannot hide::

    t_comm = D / (eta * rate) + alpha * m
    T      = C + max(0, t_comm - hide * C)

- ``D``: bytes over the busiest link direction in one step (:func:`link_bytes`: every worker
  pushes each server's share of the gradients, every server answers every worker's pull, and
  nothing leaves a host between a worker and a server on it), with the gradients' size on the
  wire after compression;
- ``m``: requests per worker and step, one push and one pull per key and server holding a part
  of it (arrays above 1,000,000 elements are cut over every server, as both libraries do);
- ``eta`` (the share of the link rate a library achieves) and ``alpha`` (seconds per request)
  are fitted per library on the probe jobs, which have no computation and no overlap, so that
  there ``T = t_comm``;
- ``hide``, the share of ``C`` that communication can overlap, is fitted per series on its
  training jobs (the smallest value within 0.5% of the best fit, so that the projection does not
  lean on overlap the measurements did not need).

Images/s are ``W * batch / T``; the ideal is ``W * batch / C``. Projections to more hosts use
the same fitted numbers: they assume each host keeps the efficiency measured here, which on this
machine was measured with every host sharing 2 cores.
"""

from __future__ import annotations

import statistics

import numpy as np

BIGARRAY_BOUND = 1_000_000
#: Bytes on the wire per fp32 byte, (push, pull), by compression: fp16/bf16 halve the pushed
#: gradients, 2bit sends 2 bits per element; the sweep's servers run SGD, so its pulls carry
#: fp32 weights (without an optimizer on the servers fp16/bf16 would halve the pulls too).
WIRE = {"none": (1.0, 1.0), "fp16": (0.5, 1.0), "bf16": (0.5, 1.0), "2bit": (1 / 16, 1.0)}
PROJECT = (1, 2, 4, 8, 16, 32, 64)


def link_bytes(
    hosts: int, servers: list[int], workers: list[int], push: float, pull: float
) -> float:
    """Bytes over the busiest link direction per step, for ``push`` bytes of gradients and
    ``pull`` bytes of weights per worker, spread evenly over the servers (placed by host)."""
    share = 1.0 / len(servers)
    busiest = 0.0
    for h in range(hosts):
        here_w = sum(1 for w in workers if w == h)
        here_s = sum(1 for s in servers if s == h)
        away_w, away_s = len(workers) - here_w, len(servers) - here_s
        out = here_w * away_s * share * push + here_s * away_w * share * pull
        into = here_w * away_s * share * pull + here_s * away_w * share * push
        busiest = max(busiest, out, into)
    return busiest


def requests(key_elems: list[int], servers: int) -> int:
    """Pushes and pulls per worker and step, one per key and server holding a part of it."""
    return 2 * sum(servers if n > BIGARRAY_BOUND else 1 for n in key_elems)


def features(job: dict) -> tuple[float, int]:
    """(D, m) of a recorded job."""
    r = job["worker_results"][0]
    push, pull = WIRE[r.get("compression", "none")]
    d = link_bytes(
        job["hosts"], job["servers"], job["workers"], push * r["bytes"], pull * r["bytes"]
    )
    return d, requests(r["key_elems"], len(job["servers"]))


def fit_comm(probes: list[dict]) -> dict | None:
    """``eta`` and ``alpha`` of one library from its shaped probe jobs (None without any)."""
    rows = [(features(j), j["step_s"], j["rate_mbit"]) for j in probes if j["rate_mbit"]]
    if not rows:
        return None
    rate = rows[0][2] * 1e6 / 8  # bytes/s
    a = np.array([[d, m] for (d, m), _, _ in rows], dtype=float)
    t = np.array([s for _, s, _ in rows], dtype=float)
    # least squares of relative error, both coefficients non-negative and eta at most 1 (a
    # link cannot beat its rate); when the free fit breaks a bound, that bound is held
    w = 1.0 / t
    fits = [(float(np.sum(((a[:, 0] / rate - t) * w) ** 2)), np.array([1.0 / rate, 0.0]))]
    for fixed in (None, (0, 1.0 / rate), (1, 0.0)):
        coef, free = np.zeros(2), [0, 1]
        target = t.copy()
        if fixed is not None:
            col, value = fixed
            coef[col] = value
            free.remove(col)
            target = t - a[:, col] * value
        coef[free] = np.linalg.lstsq(a[:, free] * w[:, None], target * w, rcond=None)[0]
        if (coef < 0).any() or coef[0] * rate < 1.0 - 1e-9:
            continue
        fits.append((float(np.sum(((a @ coef - t) * w) ** 2)), coef))
    inv_eta, alpha = min(fits, key=lambda f: f[0])[1]
    return {"eta": 1.0 / (inv_eta * rate), "alpha": float(alpha)}


def t_comm(comm: dict, rate_mbit: float, d: float, m: int) -> float:
    """Communication seconds per step for ``d`` link bytes and ``m`` requests."""
    return d / (comm["eta"] * rate_mbit * 1e6 / 8) + comm["alpha"] * m


def step_time(c: float, tc: float, hide: float) -> float:
    """Step seconds for computation ``c``, communication ``tc`` and overlap share ``hide``."""
    return c + max(0.0, tc - hide * c)


def fit_hide(points: list[tuple[float, float, float]]) -> float:
    """The overlap share that best fits (C, t_comm, measured T) points (relative error)."""
    grid = np.linspace(0.0, 1.0, 201)
    errs = [sum(((step_time(c, tc, h) - t) / t) ** 2 for c, tc, t in points) for h in grid]
    best = min(errs)
    return float(next(h for h, e in zip(grid, errs, strict=True) if e <= best * 1.005 + 1e-12))


def calibrate(probe: list[dict], jobs: list[dict], series_lib: dict[str, str]) -> dict:
    """Fit the model and evaluate it on every measured configuration.

    Returns {"comm": {lib: {eta, alpha}}, "series": {series: {"hide", "points": [...],
    "projection": {hosts: images/s}, "ideal": {hosts: images/s}}}}, where each point is
    (layout, hosts, measured images/s, modelled images/s, relative error).
    """
    ok = [j for j in jobs if j["ok"]]
    comm = {
        lib: fit_comm([j for j in probe if j["ok"] and j["lib"] == lib])
        for lib in sorted({j["lib"] for j in ok})
    }
    out: dict = {"comm": comm, "series": {}}
    for series in dict.fromkeys(j["series"] for j in ok):
        cm = comm.get(series_lib[series])
        mine = [j for j in ok if j["series"] == series]
        if cm is None or not mine:
            continue
        groups: dict[str, list[dict]] = {}
        for j in mine:
            groups.setdefault(j["layout"], []).append(j)
        pts = []
        for lay, js in groups.items():
            d, m = features(js[0])
            tc = t_comm(cm, js[0]["rate_mbit"], d, m)
            pts.append(
                (lay, js[0], js[0]["compute_s"], tc, statistics.median(j["step_s"] for j in js))
            )
        hide = fit_hide([(c, tc, t) for _, _, c, tc, t in pts])
        r0 = mine[0]["worker_results"][0]
        batch, c, rate = r0["batch"], mine[0]["compute_s"], mine[0]["rate_mbit"]
        points = []
        for lay, j, c_, tc, t in pts:
            w = len(j["workers"])
            model = w * batch / step_time(c_, tc, hide)
            meas = w * batch / t
            points.append(
                {
                    "layout": lay,
                    "hosts": j["hosts"],
                    "measured": meas,
                    "model": model,
                    "error": model / meas - 1,
                }
            )
        push, pull = WIRE[r0.get("compression", "none")]
        proj, ideal = {}, {}
        for n in PROJECT:
            every = list(range(n))
            d = link_bytes(n, every, every, push * r0["bytes"], pull * r0["bytes"])
            tc = t_comm(cm, rate, d, requests(r0["key_elems"], n))
            proj[n] = n * batch / step_time(c, tc, hide)
            ideal[n] = n * batch / c
        out["series"][series] = {"hide": hide, "points": points, "projection": proj, "ideal": ideal}
    return out
