"""Fitting models to measurements: point-to-point (``hockney``) and collectives.

``hockney``: one Hockney line (:func:`fit_hockney`), a piecewise Hockney model with
breaks found from the data (:func:`fit_piecewise_hockney`,
:func:`hockney_segment_at`), and LogGP (:func:`fit_loggp`). ``collectives``: a
collective algorithm's closed form with per-term efficiency factors fitted to
measured times, flat or per size segment (:func:`fit_collective`,
:func:`fit_collective_piecewise`). ``dlscale calibrate`` fits these to what it
measures; a profile stores the results.

Examples
--------
>>> from dlscale.perfmodel.fitting import fit_hockney
>>> round(fit_hockney([0, 1000], [1e-6, 2e-6]).beta_s_per_B, 15)
1e-09
"""

from dlscale.perfmodel.fitting.collectives import (
    CollectiveFit,
    CollectiveSegment,
    PiecewiseCollectiveFit,
    fit_collective,
    fit_collective_piecewise,
)
from dlscale.perfmodel.fitting.hockney import (
    HockneyFit,
    HockneySegment,
    LogGPFit,
    PiecewiseHockneyFit,
    fit_hockney,
    fit_loggp,
    fit_piecewise_hockney,
    hockney_segment_at,
)
from dlscale.perfmodel.fitting.hockney_merge import with_bandwidth

__all__ = [
    "CollectiveFit",
    "CollectiveSegment",
    "HockneyFit",
    "HockneySegment",
    "LogGPFit",
    "PiecewiseCollectiveFit",
    "PiecewiseHockneyFit",
    "fit_collective",
    "fit_collective_piecewise",
    "fit_hockney",
    "fit_loggp",
    "fit_piecewise_hockney",
    "hockney_segment_at",
    "with_bandwidth",
]
