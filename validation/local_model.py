"""Closed-form predictions of the real MPI training runs from a machine profile.

Iteration time of each algorithm of :mod:`dlscale.validation.mpi_training`, from
the profile only (nothing measured in the training runs is used):

- compute ``C``: the small model's forward+backward time (``model_fwd_bwd_s``,
  a median of single calls), times ``p / cores`` where the ``p`` ranks of one
  host outnumber its cores (they share the cores: each rank computes for
  ``cores / p`` of the time; a median single call does not show this, the calls
  are shorter than a scheduler time slice); a synchronous step waits for the
  slowest of ``p`` ranks: its median is the ``0.5^(1/p)`` quantile of the
  per-call times (the median of the largest of ``p`` independent draws,
  :func:`median_of_max_s`), read off the measured quantiles
  (``kernels['quantiles']['model_fwd_bwd_s']``) with no assumption about their
  shape (on a shared host the calls are bimodal: periods when another tenant
  shares the core make them about 1.5 times slower); a profile without
  quantiles falls back to ``C (1 + cv E[max of p standard normals])`` (``cv``
  the measured per-call robust coefficient of variation);
  where the ranks outnumber the cores and the profile measured the synchronous
  step on ``p`` ranks (:func:`~dlscale.validation.sync_step.sync_step`), ``C`` is
  instead that step's compute phase (the model's fwd+bwd then a barrier, less the
  barrier alone: processor sharing, straggler, the wake-up of the ranks asleep in
  the barrier and cache refill, all measured), and the step's collective adds
  one measured sleep granularity ``W`` (``p2p['intra-node']['sync_step']['sleep_s']``): throttled
  MPICH ranks sleep while they wait, and the collective that follows the compute
  (unlike the calibration's collectives, whose ranks enter together after a
  barrier) waits for ranks that have fallen asleep in it;
- ``sgd-ring``: ``+`` the fitted time of the project's ring allreduce where the
  profile measured it (``collectives.ring_allreduce``, fitted like MPI's
  allreduce against the ring form: the Python and ``mpi4py`` cost of each step
  is in the measurement), else ``+ ring_allreduce_s(n, p, alpha, beta, gamma)`` with the
  piecewise-Hockney ``alpha, beta`` of the ``n/p``-byte exchange (``Sendrecv``
  both ways, what each ring step does: the ring step of all ``p`` ranks at once
  where the profile measured it on ``p`` ranks, else the two-rank exchange, else
  the one-way ping-pong fit) and ``gamma = 1/reduce_Bps``, ``+ n / sgd_Bps``;
- ``sgd-allreduce``: ``+`` the fitted MPI allreduce time (:mod:`.collective_fit`)
  ``+ n / sgd_Bps``;
- ``sync-easgd``: ``+`` the fitted allreduce ``+ 2 n / easgd_Bps`` (worker and
  center updates);
- every update-kernel call also costs the measured fixed ``x_kernel_call_s``
  (argument checks and dispatch), which the 4 MiB rate figures leave out;
- ``async-easgd``: exact mean-value analysis (Reiser and Lavenberg 1980) of a
  closed network: ``p - 1`` workers and one first-come-first-served master. The
  workers are asynchronous: nobody waits for the slowest rank, so their compute
  is the median single call ``C`` (times ``p / cores`` where the ranks share the
  cores), never the synchronous straggler term nor the measured synchronous
  step. Where the profile timed the exchange itself
  (``p2p['intra-node']['easgd_exchange']``, :mod:`.easgd_exchange`: the
  worker's send plus its receive of the center ``X``, of which the master's
  center update and send ``S``), the master's service time is ``S`` and the
  worker's think time ``Z = C + n / easgd_Bps + (X - S)`` (compute, elastic
  step, the exchange outside the master); else (a profile written before issue
  16, or one timed at another message size, which the prediction says in
  ``exchange``) the exchange is composed from the ping-pong fit: ``Z = C +
  n / easgd_Bps + 2 T(n)`` and ``S = n / easgd_Bps + 2 o`` (center update plus
  posting the send and completing the receive, LogGP ``o`` per message of the
  messages it handles); ``+ W`` in ``Z`` where the ranks outnumber the cores (the
  worker sleeps waiting for the center).

Examples
--------
>>> round(expected_max_normal(2), 4), expected_max_normal(1)
(0.5642, 0.0)
>>> round(mva_cycle_s(workers=3, think_s=1.0, service_s=0.5), 4)
1.9
>>> q = [i / 1000 for i in range(1001)]  # times 0..1 s, evenly spread
>>> median_of_max_s(q, 1), round(median_of_max_s(q, 2), 4)
(0.5, 0.7071)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import integrate, stats

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting import hockney_segment_at
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.perfmodel.network.collectives import ring_allreduce_s
from dlscale.validation.collective_fit import predict_allreduce

__all__ = ["expected_max_normal", "median_of_max_s", "mva_cycle_s", "p2p_time_s",
           "predict_training"]


def expected_max_normal(p: int) -> float:
    """``E[max]`` of ``p`` independent standard normal draws (0 for ``p = 1``)."""
    if p <= 1:
        return 0.0

    def f(x: float) -> float:
        return x * p * stats.norm.cdf(x) ** (p - 1) * stats.norm.pdf(x)

    return float(integrate.quad(f, -12, 12)[0])


def median_of_max_s(quantiles: list[float], p: int) -> float:
    """Median of the largest of ``p`` independent draws from a distribution given
    by its quantiles at evenly spaced probabilities 0..1: the ``0.5^(1/p)``
    quantile, interpolated."""
    probs = np.linspace(0.0, 1.0, len(quantiles))
    return float(np.interp(0.5 ** (1.0 / max(p, 1)), probs, quantiles))


def mva_cycle_s(workers: int, think_s: float, service_s: float) -> float:
    """Mean cycle time of ``workers`` clients of one FCFS server (exact MVA)."""
    queue = 0.0
    resp = service_s
    for n in range(1, workers + 1):
        resp = service_s * (1.0 + queue)
        throughput = n / (think_s + resp)
        queue = throughput * resp
    return think_s + resp


def _segment(entry: dict[str, Any], n_bytes: float) -> tuple[float, float]:
    segs = entry.get("segments") or [{"min_bytes": 0, "alpha_s": entry["latency_s"],
                                      "beta_s_per_B": 1.0 / entry["bandwidth_Bps"]}]
    alpha, beta = hockney_segment_at(segs, n_bytes)
    return float(alpha), float(beta)


def p2p_time_s(profile: MachineProfile, n_bytes: float, regime: str = "intra-node") -> float:
    """One-way time of an ``n_bytes`` message from the profile's piecewise Hockney fit."""
    if regime not in profile.p2p:
        raise ConfigError(f"profile.p2p: no {regime!r} measurements")
    a, b = _segment(profile.p2p[regime], n_bytes)
    return a + n_bytes * b


def _kernel(profile: MachineProfile, name: str) -> float:
    value = profile.kernels.get(name)
    if not value:
        raise ConfigError(f"profile.kernels.{name}: missing; re-run `dlscale calibrate` with kernels")
    return float(value)


def _async_easgd(profile: MachineProfile, p: int, n: float, call: float, compute: float,
                 wake: float) -> dict[str, Any]:
    """The Async EASGD cycle of one worker (see the module docstring)."""
    upd = call + n / _kernel(profile, "easgd_Bps")
    intra = profile.p2p.get("intra-node", {})
    ex = intra.get("easgd_exchange")
    if ex and int(ex["message_bytes"]) == int(n):
        x = float(ex["exchange_s"])
        service = min(float(ex["service_s"]), x)
        think = compute + upd + (x - service) + wake
        how = "measured"
    else:
        o = float(intra.get("loggp", {}).get("o_s", 0.0))
        think = compute + upd + 2 * p2p_time_s(profile, n) + wake
        service = upd + 2 * o
        how = ("composed from the ping-pong fit: the profile has no easgd_exchange "
               "(written before issue 16)" if not ex else
               f"composed from the ping-pong fit: the profile's easgd_exchange was timed at "
               f"{int(ex['message_bytes'])} B, the run sends {int(n)} B")
    cycle = mva_cycle_s(max(p - 1, 1), think, service)
    return {"iteration_s": cycle, "compute_s": compute, "comm_s": cycle - compute - upd,
            "exchange": how}


def predict_training(profile: MachineProfile, algorithm: str, p: int,
                     message_bytes: float) -> dict[str, Any]:
    """Predicted ``iteration_s`` (and its parts) of one training run of ``p`` ranks.

    For ``async-easgd`` also ``exchange``: ``"measured"`` where the profile's timed
    exchange was used, else why it was composed from the ping-pong fit.
    """
    C = C_alone = _kernel(profile, "model_fwd_bwd_s")
    cores = int(profile.provenance.get("cores") or 0)  # 0: not recorded
    cv = float(profile.kernels.get("noise", {}).get("model_fwd_bwd_s", 0.0))
    pct = profile.kernels.get("quantiles", {}).get("model_fwd_bwd_s")
    wake = 0.0
    sync = profile.p2p.get("intra-node", {}).get("sync_step") or {}
    shared = cores > 0 and len(profile.provenance.get("hosts", [])) <= 1 and p > cores
    share = p / cores if shared else 1.0
    if shared and sync.get("ranks") == p:  # measured: sharing, straggler, wake-ups, cache refill
        C = slowest = float(sync["compute_s"])
        wake = float(sync["sleep_s"])
    else:
        C *= share
        slowest = (share * median_of_max_s(pct, p) if pct
                   else C * (1.0 + cv * expected_max_normal(p)))
    n = float(message_bytes)
    # each update-kernel call: a fixed cost measured in calibration (0 in profiles
    # written before it was measured) plus its bytes at the measured rate
    call = float(profile.kernels.get("x_kernel_call_s", 0.0))
    if algorithm == "async-easgd":  # asynchronous: no straggler, no synchronous step
        return _async_easgd(profile, p, n, call, C_alone * share, wake)
    compute = slowest
    ring_fit = profile.collectives.get("ring_allreduce", {}).get("fit")
    if algorithm == "sgd-ring" and ring_fit:
        comm = float(np.asarray(predict_allreduce(ring_fit, n, p)))
        upd = call + n / _kernel(profile, "sgd_Bps")
    elif algorithm == "sgd-ring":
        intra = profile.p2p["intra-node"]
        step = intra.get("exchange", intra)
        if intra.get("ring_exchange", {}).get("ranks") == p:
            step = intra["ring_exchange"]
        a, b = _segment(step, math.ceil(n / p))
        comm = float(ring_allreduce_s(n, p, a, b, profile.gamma_s_per_B))
        upd = call + n / _kernel(profile, "sgd_Bps")
    elif algorithm in ("sgd-allreduce", "sync-easgd"):
        fit = profile.collectives.get("allreduce", {}).get("fit")
        if not fit:
            raise ConfigError("profile.collectives.allreduce.fit: missing; calibrate with allreduce")
        comm = float(np.asarray(predict_allreduce(fit, n, p)))
        upd = call + n / _kernel(profile, "sgd_Bps") if algorithm == "sgd-allreduce" else \
            2 * (call + n / _kernel(profile, "easgd_Bps"))
    else:
        raise ConfigError(f"algorithm: no prediction for {algorithm!r}")
    comm += wake
    return {"iteration_s": compute + comm + upd, "compute_s": compute, "comm_s": comm}
