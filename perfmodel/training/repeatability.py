"""A measured figure's own repeatability: the same setup measured twice reads differently.

A published training rate is one measurement. The same machine, software and
workload measured again gives another value, so a prediction of the rate, however
good, can only be expected to land within the spread of such repeated measurements.
The band (:func:`.ranges.predict_range`) therefore widens its rate, time per
iteration and scaling efficiency by :data:`MEASUREMENT`, the deviation of one
measurement from the mean of two measurements of one setup that a source publishes:

- TensorFlow's benchmark page (tensorflow/docs ``site/en/r1/guide/performance/benchmarks.md``,
  test date May 2017) measures one K80 of a p2.8xlarge twice, with the same TensorFlow
  (``b1e174e``) and benchmark (``9165a70``) hashes and synthetic data: once in "Details
  for Amazon EC2 (NVIDIA Tesla K80)" and once as the 1-GPU row of "Details for Amazon
  EC2 Distributed". Images/s: InceptionV3 batch 64 30.8 and 29.7, ResNet-50 batch 64
  51.5 and 52.4, ResNet-152 batch 32 19.7 and 19.4, InceptionV3 batch 32 29.9 and 29.2,
  ResNet-50 batch 32 49.0 and 48.4. The largest deviation from a pair's mean is
  InceptionV3's, ``1.1 / 60.5 = 1.82 %`` (the others 0.6-1.2 %). The two sections set
  ``variable_update`` differently (the single-server InceptionV3 row keeps its
  variables on the CPU), so the spread may hold a systematic part; it is read as the
  page's repeatability, not split.

A rate ``r`` measured as ``r (1 + e)`` with ``|e| <= m`` lies in ``[r (1 - m), r (1 + m)]``,
its time per iteration in ``[t / (1 + m), t / (1 - m)]``. An efficiency divides two
measurements (the scaled run and its baseline), each with its own ``e`` (the source
does not say that runs on the same GPUs share theirs), so it lies in
``[E (1 - m) / (1 + m), E (1 + m) / (1 - m)]``; an efficiency of exactly 1 is the
baseline against itself (a definition, not a ratio of two runs) and keeps its value.
The central answer does not move.

Examples
--------
>>> round(MEASUREMENT.high - 1, 4)
0.0182
>>> import numpy as np
>>> lo, hi = widen("samples_per_s", np.array([100.0]), np.array([110.0]))
>>> round(float(lo[0]), 2), round(float(hi[0]), 2)
(98.18, 112.0)
>>> widen("efficiency", np.array([1.0, 0.9]), np.array([1.0, 0.95]))[1].round(4)
array([1.    , 0.9852])
"""

from __future__ import annotations

import numpy as np

from dlscale.perfmodel.cited import CitedRange, register

__all__ = ["MEASUREMENT", "WIDENED", "widen"]

#: One measurement of a training rate against the mean of two measurements of the same
#: setup: low 29.7 / 30.25 and high 30.8 / 30.25 (InceptionV3, batch 64, one K80 of a
#: p2.8xlarge, TensorFlow b1e174e / benchmarks 9165a70, synthetic data, measured in two
#: sections of tensorflow/docs site/en/r1/guide/performance/benchmarks.md, May 2017);
#: the other four pairs read (ResNet-50, ResNet-152, InceptionV3 batch 32) lie inside.
MEASUREMENT = CitedRange(
    "measurement_repeatability", central=1.0, low=29.7 / 30.25, high=30.8 / 30.25,
    unit="x the mean of repeated measurements",
    source="tensorflow/docs site/en/r1/guide/performance/benchmarks.md (May 2017): one "
           "p2.8xlarge K80, InceptionV3 batch 64, 30.8 (EC2 section) and 29.7 images/s "
           "(EC2 Distributed section, 1 GPU); four more pairs inside")
register(MEASUREMENT)

#: The answers the band widens, and how: a rate by the factor, a time by its inverse,
#: an efficiency by the ratio of two independent factors.
WIDENED = {"samples_per_s": "rate", "iteration_s": "time", "efficiency": "ratio"}


def widen(key: str, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of answer ``key`` widened by a measurement's repeatability.

    Parameters
    ----------
    key : str
        The answer (a key of :data:`WIDENED`; any other is returned unchanged).
    low, high : ndarray
        The band over the model's corners.

    Returns
    -------
    (ndarray, ndarray)
        The widened low and high (an efficiency of exactly 1 at both ends is kept).
    """
    how = WIDENED.get(key)
    lo_k, hi_k = MEASUREMENT.low, MEASUREMENT.high
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if how == "rate":
        return low * lo_k, high * hi_k
    if how == "time":
        return low / hi_k, high / lo_k
    if how == "ratio":
        keep = (low == 1.0) & (high == 1.0)
        return (np.where(keep, low, low * lo_k / hi_k),
                np.where(keep, high, high * hi_k / lo_k))
    return low, high
