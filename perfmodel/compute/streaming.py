"""The bandwidth memory-bound kernels reach: one rule for every path.

A kernel that streams its operands (an elementwise layer, a normalisation, an
optimizer step, a GEMM's operands where they set its time) does not move bytes at the
datasheet's memory bandwidth. The rule, the same on the CNN roofline
(:mod:`dlscale.perfmodel.compute.roofline`) and on the transformer path
(:mod:`dlscale.perfmodel.training.parallel_time`):

``achievable = training_memory_bandwidth_Bps * f``, with ``f`` the device's own
measured streaming share (``Device.stream_fraction``: a STREAM / BabelStream triad
figure over the datasheet figure, cited in the catalog; 1 where the catalog's
bandwidth already is a STREAM figure, as on KNL) where it has one, else
:data:`HBM_ACHIEVABLE_FRACTION`.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Device
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)
>>> round(achievable_bandwidth_Bps(gpu) / 1e9, 1)          # the A100 share, 1.80 / 2.04
882.4
>>> from dataclasses import replace
>>> achievable_bandwidth_Bps(replace(gpu, stream_fraction=0.75)) / 1e9
750.0
"""

from __future__ import annotations

from dlscale.perfmodel.machine.hardware import Device

__all__ = ["HBM_ACHIEVABLE_FRACTION", "achievable_bandwidth_Bps"]

#: Share of the HBM's peak bandwidth that a streaming kernel reaches: an A100 SXM4
#: 80 GB read kernel measured 1.80 of the datasheet's 2.04 TB/s, Nsight Compute
#: agreeing at 88% of peak, and "the maximum memory bandwidth achieved by any kernel
#: was around 90%" in the GTC talk it cites (NVIDIA developer forum, "Trouble to
#: reach peak bandwidth of A100"). Applied to every device without a measured
#: streaming figure of its own (an assumption beyond the A100).
HBM_ACHIEVABLE_FRACTION = 1.80 / 2.04


def achievable_bandwidth_Bps(dev: Device) -> float:
    """Bytes per second a streaming kernel moves on ``dev`` (module docstring).

    Parameters
    ----------
    dev : Device

    Returns
    -------
    float
        The training memory's rate times the device's measured streaming share, or
        :data:`HBM_ACHIEVABLE_FRACTION` where it has none.
    """
    share = dev.stream_fraction if dev.stream_fraction > 0 else HBM_ACHIEVABLE_FRACTION
    return dev.training_memory_bandwidth_Bps * share
