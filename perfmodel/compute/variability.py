"""Device-to-device performance variability: a synchronous step waits for the slowest GPU.

GPUs of one model and SKU do not compute at one rate: manufacturing spread and each
chip's power management make some slower than others under the same load. In
synchronous data parallelism every step waits for the slowest of the ``P`` devices, so
the step's compute is the expected largest of ``P`` per-device factors, which grows
with ``P`` (for a normal spread of standard deviation ``sigma`` about
``sigma sqrt(2 ln P)``). The machinery is the cluster's noise model
(:mod:`dlscale.perfmodel.machine.noise`: a mean-one lognormal factor per rank, and
:func:`~dlscale.perfmodel.machine.noise.expected_max_factor` in the closed form).

The source: Sinha, Guliani, Jain, Tran, Sinclair, Venkataraman, "Not All GPUs Are
Created Equal: Characterizing Variability in Large-Scale, Accelerator-Rich Systems",
SC'22 (arXiv 2208.11035v3), abstract, read through its arXiv listing
(summarizepaper.com/en/arxiv-id/2208.11035v3, api.emergentmind.com/papers/2208.11035,
tomesphere.com/paper/2208.11035): over Summit, Vortex, Frontera/Longhorn and Corona
(V100 and MI60, "more than 90% of the GPUs in these clusters"), "8% (max 22%) average
performance variation even though the GPU architecture and vendor SKU are identical
within each cluster, with outliers up to 1.5X slower than the median GPU". (The SC'22
proceedings page of an earlier version gives "32% (max 72%)" over four clusters; the
later arXiv figure is the one used.)

What "variation" is: the paper's artifact (github.com/hal-uw/gpu_variability_sc22_artifact)
computes each GPU's performance as the mean duration of its kernel instances
(``aggregate_scripts/gpu-aggregator.py``, ``perf``: "Average performance (duration) of
all kernel instances in ms") or its mean iteration time, normalised to the median GPU
(``plot_script/plot_aggregated.py``: ``mean_iter_dur_median_normalized``, box plots with
``showfliers=False``), and the variation as the span of the box plot's Tukey fences over
the median (the same file, its closing block, commented out in the stored version)::

    iqr = q3 - q1
    range = q3 + 1.5 * iqr - (q1 - 1.5 * iqr)
    percent_variability = range/q2 * 100

that is ``4 IQR / median``, over all the GPUs of one cluster and application, outliers
counted in the quartiles and outside the span. For a lognormal per-GPU time of
log-standard deviation ``sigma`` (median 1, quartiles ``exp(-/+ 0.6745 sigma)``) the
span is ``8 sinh(0.6745 sigma)``, so ``sigma = asinh(v / 8) / 0.6745``
(:func:`sigma_of_variation`): the 8% average gives ``sigma = 1.48%``, the 22% maximum
``4.08%``. (No per-cluster table or data file is in the artifact: one PageRank trace of
one GPU; the spread over clusters and applications is the abstract's average and
maximum.)

The central answer takes the average's 1.48% (:data:`DEVICE_SPREAD`) for every GPU
cluster whose ``noise`` is not described (``Cluster.noise`` empty, the presets and any
file without a ``noise`` key: :func:`cluster_noise`), in ``predict`` (the expected
largest factor over the ranks) and ``simulate`` (a factor drawn per rank and iteration)
alike; the band's slow end takes the largest cluster average, 4.08%, its fast end 0 (the
source gives no smallest cluster average; a run on a hand-picked set of GPUs may see
none). The default lives in this mechanism, not in the catalog: the hand-written machine
files of the trials and the users' files describe no noise and get it too, and the band
can tell the default (empty) from a user's setting. At the central value the expected
slowest of 8, 64 and 512 GPUs computes 2.1%, 3.5% and 4.6% longer than the mean.

A cluster whose ``noise`` is set (``--noise``, a measured sample, ``none``) keeps it at
every end: that is the user's measurement of this very effect. CPUs and Xeon Phi get
none (the source measured GPUs only).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> cluster_noise(get_cluster("dgx1-p100"))
'lognormal:0.014825...'
>>> cluster_for_band(get_cluster("dgx1-p100"), "high").noise
'lognormal:0.04076...'
>>> cluster_for_band(get_cluster("dgx1-p100"), "low").noise
'none'
>>> cluster_noise(get_cluster("stampede2-knl"))
'none'
"""

from __future__ import annotations

import dataclasses
import functools
import math

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.noise import Lognormal, NoNoise, expected_max_factor, make_noise

__all__ = ["DEVICE_SPREAD", "SPREAD_AVERAGE", "SPREAD_MAX", "block_slowest_factor",
           "cluster_for_band", "cluster_noise", "sigma_of_variation", "slowest_factor"]

#: Average performance variation across GPUs of one cluster and SKU, and the largest
#: cluster average: "8% (max 22%) average performance variation" (Sinha et al., SC'22,
#: arXiv 2208.11035v3 abstract).
SPREAD_AVERAGE = 0.08
SPREAD_MAX = 0.22

#: definition: the standard normal's upper quartile, Phi^-1(0.75).
_Q3 = 0.6744897501960817


def sigma_of_variation(variation: float) -> float:
    """Log-standard deviation of a lognormal whose Tukey-fence span over its median is
    ``variation`` (the artifact's ``percent_variability / 100``).

    The fences are ``q1 - 1.5 IQR`` and ``q3 + 1.5 IQR``, so the span is ``4 IQR``;
    a lognormal of median 1 has ``IQR = 2 sinh(0.6745 sigma)``.

    Parameters
    ----------
    variation : float
        The span over the median (0.08 for 8%), >= 0.

    Returns
    -------
    float

    Examples
    --------
    >>> round(sigma_of_variation(0.08), 6), round(sigma_of_variation(0.22), 6)
    (0.014826, 0.040766)
    """
    return math.asinh(variation / 8.0) / _Q3


#: Log-standard deviation of one GPU's compute time about its cluster's mean: central
#: the source's 8% average (1.48%), slow end its largest cluster average 22% (4.08%),
#: fast end 0 (every device at one rate).
DEVICE_SPREAD = CitedRange(
    "gpu_device_spread", central=sigma_of_variation(SPREAD_AVERAGE), low=0.0,
    high=sigma_of_variation(SPREAD_MAX),
    unit="log-standard deviation of a GPU's compute time about the cluster's mean",
    source="Sinha et al., SC'22 (arXiv 2208.11035v3) abstract: '8% (max 22%) average "
           "performance variation' across the GPUs of one cluster and SKU; variation = "
           "(q3 + 1.5 IQR - (q1 - 1.5 IQR)) / median (artifact hal-uw/"
           "gpu_variability_sc22_artifact, plot_script/plot_aggregated.py), "
           "8 sinh(0.6745 sigma) for a lognormal")
register(DEVICE_SPREAD)


def _spec(sigma: float) -> str:
    """The noise spec of a spread ``sigma`` (``none`` at 0)."""
    return f"lognormal:{sigma!r}" if sigma > 0 else "none"


def cluster_noise(cluster: Cluster) -> str:
    """The noise spec ``cluster`` computes with at the central values.

    Parameters
    ----------
    cluster : Cluster
        A machine.

    Returns
    -------
    str
        ``cluster.noise`` where it is set; else, for a GPU cluster, the lognormal of
        :data:`DEVICE_SPREAD`'s central value, and ``none`` for any other device.
    """
    if cluster.noise:
        return cluster.noise
    return _spec(DEVICE_SPREAD.central) if cluster.node.device.kind == "gpu" else "none"


def cluster_for_band(cluster: Cluster, end: str) -> Cluster:
    """``cluster`` with its GPUs' rate spread at ``end`` of :data:`DEVICE_SPREAD`.

    Parameters
    ----------
    cluster : Cluster
        The machine at its central values.
    end : {"low", "central", "high"}
        Which end of the range.

    Returns
    -------
    Cluster
        The same object where ``end`` is central, the device is not a GPU, or the
        cluster's noise is set; else a copy whose ``noise`` is the spread's at ``end``
        (the lognormal, or ``none`` at 0).
    """
    if end not in ("low", "central", "high"):
        raise ValueError(f"end: must be low, central or high, got {end!r}")
    if end == "central" or cluster.node.device.kind != "gpu" or cluster.noise:
        return cluster
    return dataclasses.replace(cluster, noise=_spec(at_end(DEVICE_SPREAD, end)))


@functools.lru_cache(maxsize=4096)   # numerical: cache size, no effect on results
def _slowest(spec: str, ranks: int) -> float:
    return float(expected_max_factor(spec, ranks))


def slowest_factor(cluster: Cluster, ranks: int) -> float:
    """Expected compute factor of the slowest of ``ranks`` devices of ``cluster``: the
    noise model's expected maximum (:func:`~dlscale.perfmodel.machine.noise.
    expected_max_factor`, the data-parallel path's) of :func:`cluster_noise`, one
    integral per noise and rank count (cached: the layout search asks it per layout).

    Parameters
    ----------
    cluster : Cluster
        The machine (its ``noise``, else the GPUs' central spread).
    ranks : int
        Devices that wait for each other.

    Returns
    -------
    float
        1.0 without noise or on one device.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> round(slowest_factor(get_cluster("dgx1-p100"), 8), 4)
    1.0213
    >>> slowest_factor(get_cluster("stampede2-knl"), 64)
    1.0
    """
    return _slowest(cluster_noise(cluster), int(ranks))


@functools.lru_cache(maxsize=4096)   # numerical: cache size, no effect on results
def _block_slowest(spec: str, ranks: int, steps: int) -> float:
    noise = make_noise(spec)
    if steps <= 1 or isinstance(noise, NoNoise):
        return float(noise.expected_max(ranks))
    # the variance of one mean-one factor: e^(sigma^2) - 1 for the lognormal, the
    # sample's own for an empirical one (normalised to mean one)
    var = (math.expm1(noise.sigma ** 2) if isinstance(noise, Lognormal)
           else float(noise.sample.var()))
    # Fenton-Wilkinson: the mean of ``steps`` independent factors as the mean-one
    # lognormal of the same variance, var / steps
    return float(Lognormal(math.sqrt(math.log1p(var / steps))).expected_max(ranks))


def block_slowest_factor(cluster: Cluster, ranks: int, steps: int) -> float:
    """Expected compute factor, per step, of the slowest of ``ranks`` devices over a
    block of ``steps`` steps: ``E[max_r (1 / steps) sum_k f_rk]`` for factors ``f``
    independent per rank and step (the simulator draws one per rank and step), the
    wait of a synchronous exchange every ``steps`` local steps (Sync EASGD).

    One step is :func:`slowest_factor` exactly. Over more steps the block's mean factor
    is taken as the mean-one lognormal of its variance, ``var(f) / steps``
    (Fenton-Wilkinson's moment match for a sum of lognormals; for an empirical sample,
    its variance), whose expected maximum over the ranks is the noise model's integral.

    Parameters
    ----------
    cluster : Cluster
        The machine (its ``noise``, else the GPUs' central spread).
    ranks : int
        Devices that wait for each other at the exchange.
    steps : int
        Local steps between two exchanges, >= 1.

    Returns
    -------
    float
        1.0 without noise or on one device; falls towards 1 as ``steps`` grows.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("dgx1-p100")
    >>> block_slowest_factor(c, 8, 1) == slowest_factor(c, 8)
    True
    >>> round(block_slowest_factor(c, 8, 4), 4)
    1.0106
    """
    if int(steps) < 1:
        raise ValueError(f"steps: must be an integer >= 1, got {steps!r}")
    return _block_slowest(cluster_noise(cluster), int(ranks), int(steps))
