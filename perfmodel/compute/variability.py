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
(summarizepaper.com/en/arxiv-id/2208.11035v3, api.emergentmind.com/papers/2208.11035):
over Summit, Vortex, Frontera/Longhorn and Corona (V100 and MI60, "more than 90% of
the GPUs in these clusters"), "8% (max 22%) average performance variation even though
the GPU architecture and vendor SKU are identical within each cluster, with outliers
up to 1.5X slower than the median GPU". (The SC'22 proceedings page of an earlier
version gives "32% (max 72%)" over four clusters; the later arXiv figure is the one
used.) The body, where the variation is defined, was not read, so the 8% spread is
turned into a standard deviation under the two readings it admits:

- the box plot's whiskers (Q1 - 1.5 IQR to Q3 + 1.5 IQR, outliers apart, the usual
  way such spreads are drawn): ``2 x 2.698 sigma`` for a normal spread, so
  ``sigma = 0.08 / 5.396 = 1.48%``;
- the fastest to the slowest of all GPUs measured: the expected range of ``n``
  normal draws, ``2 E[max of n]``, ``8.14 sigma`` for Summit's ~25,000 GPUs and
  ``5.94 sigma`` for a cluster of 400, so ``sigma = 0.98%`` to ``1.35%``.

The band takes the largest, ``sigma = 1.48%`` (:data:`DEVICE_SPREAD`), at its slow end;
the fast end and the central answer keep every device at one rate (``sigma = 0``): the
source's figure is a whole cluster's spread, and which GPUs a run gets (a hand-picked
set, one node, a cluster of another generation: the source measured V100 and MI60, the
P100 and K80 clusters of 2017 are assumed alike) is not known to the model. The
source's largest cluster average (22%) is left out of the band: it is one cluster of
the four, not the spread a run is expected to meet. At the slow end the expected
slowest of 8, 64 and 512 GPUs computes 2.1%, 3.5% and 4.6% longer than the mean.

A cluster whose ``noise`` is set (``--noise``, a measured sample) keeps it at every
end: that is the user's measurement of this very effect. CPUs and Xeon Phi get no
band from this mechanism (the source measured GPUs only).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> cluster_for_band(get_cluster("dgx1-p100"), "high").noise
'lognormal:0.014826...'
>>> cluster_for_band(get_cluster("dgx1-p100"), "low").noise
'none'
>>> cluster_for_band(get_cluster("stampede2-knl"), "high").noise
'none'
"""

from __future__ import annotations

import dataclasses

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["DEVICE_SPREAD", "SPREAD_AVERAGE", "WHISKER_SIGMAS", "cluster_for_band"]

#: Average performance variation across GPUs of one cluster and SKU: "8% (max 22%)
#: average performance variation" (Sinha et al., SC'22, arXiv 2208.11035v3 abstract).
SPREAD_AVERAGE = 0.08

#: A normal spread's box-plot whiskers span ``2 (q3 + 1.5 (q3 - q1))`` standard
#: deviations, ``q3 = 0.6745`` (the standard normal's upper quartile): 5.396.
WHISKER_SIGMAS = 2.0 * (0.6744897501960817 + 1.5 * 2.0 * 0.6744897501960817)

#: Log-standard deviation of one GPU's compute rate about its cluster's mean: central
#: and fast end 0 (every device at one rate, as the model has always assumed); slow end
#: the source's 8% average under the whisker reading, 0.08 / 5.396 = 1.48% (the reading
#: of the fastest-to-slowest range gives 0.98-1.35%, inside).
DEVICE_SPREAD = CitedRange(
    "gpu_device_spread", central=0.0, low=0.0, high=SPREAD_AVERAGE / WHISKER_SIGMAS,
    unit="log-standard deviation of a GPU's compute time about the cluster's mean",
    source="Sinha et al., SC'22 (arXiv 2208.11035v3) abstract: '8% (max 22%) average "
           "performance variation' across the GPUs of one cluster and SKU; read as the "
           "box plot's whisker span of a normal spread (5.396 sigma)")
register(DEVICE_SPREAD)


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
        The same object where the spread is 0 at ``end``, the device is not a GPU, or
        the cluster's noise is already set; else a copy whose ``noise`` is the
        lognormal of the spread (the slowest of its ranks then sets every step).
    """
    if end not in ("low", "central", "high"):
        raise ValueError(f"end: must be low, central or high, got {end!r}")
    sigma = at_end(DEVICE_SPREAD, end)
    if sigma <= 0 or cluster.node.device.kind != "gpu" or cluster.noise != "none":
        return cluster
    return dataclasses.replace(cluster, noise=f"lognormal:{sigma!r}")
