"""A GEMM's fixed cost per output tile, spread over its reduction: ``K / (K + K0)``.

A thread block of a tiled GEMM steps through ``K`` for its tile of ``C`` (NVIDIA,
"Matrix Multiplication Background User's Guide", DU-09799-001, Sec. 2.1), and pays
besides a cost that does not grow with ``K``: filling its software pipeline before
the first step and writing its tile of ``C`` after the last. Spread over the K loop
that cost is worth ``K0`` steps' time, so a product runs at ``K / (K + K0)`` of the
rate its tiles would reach with no such cost (the reading is this module's, not the
source's; the source gives the rates only).

The source, the one found that varies ``K`` alone (:data:`COOKBOOK`): EleutherAI's
cookbook (the code of Anthony et al. 2024, arXiv 2401.14489),
``benchmarks/sizing/sample_results/transformer.out`` and ``bmm.out``: fp16
``randn`` operands, CUDA events, the *slowest* of the timed iterations (``np.amax``
in ``benchmarks/sizing/utils.py`` of that era: a low reading of the typical rate, by
a margin the files do not give). The files do not name their GPU: an A100 is assumed
(its rates stay under the A100's 312 TFLOP/s, where the same bmm shapes in the later
``results/mm.out`` reach 353-375, above it), so ``K0`` is applied to the A100 only
(:data:`K0_DEVICES`): no source gives it on another GPU, and the ceiling it is
rebased on (:data:`~dlscale.perfmodel.compute.gemm.CEILING_SOURCE_K`) is the A100's
single-shape measurement, where the other devices' ceilings are best-of-search
figures of no one shape.

The fit (:func:`asymptote_tflops`, :func:`row_k0`): ``1 / rate = (1 + K0 / K) / R``
through the two deepest reductions (K 16384 and 51200) gives the rate with no such
cost, ``R``; each row's own ``K0`` is then ``K (R / rate - 1)``. Every cookbook shape
quantizes to at least 0.998 of its waves in the tile model
(:func:`~dlscale.perfmodel.compute.gemm.shape_efficiency`), so the fit is taken on
the rates as printed.

Examples
--------
>>> round(asymptote_tflops(COOKBOOK), 1)
256.6
>>> [round(k) for k in per_row_k0()]
[255, 380, 263, 251, 251, 132, 113, 352, 249]
>>> REDUCTION_K0.low, REDUCTION_K0.high        # doctest: +ELLIPSIS
(112.57..., 379.82...)
"""

from __future__ import annotations

import statistics
from typing import NamedTuple

from dlscale.perfmodel.cited import CitedRange, at_end, register

__all__ = ["COOKBOOK", "K0_DEVICES", "REDUCTION_K0", "GemmRate", "asymptote_tflops",
           "device_k0", "per_row_k0", "row_k0"]


class GemmRate(NamedTuple):
    """One published single-product rate: ``batch`` products ``(m x k) (k x n)``."""

    label: str
    m: int
    n: int
    k: int
    batch: int
    tflops: float
    file: str


#: The cookbook's rows at transformer shapes, transcribed as printed (TFLOP/s, 2
#: flops per multiply-add); ``benchmark_mm_b(b, h, n, label, s)`` multiplies ``s b x
#: h`` by ``h x n``, ``benchmark_bmm(b, m, n, k)`` ``b`` of ``m x n`` by ``n x k``
#: (``validation/gemm_measurements.py`` maps each and checks it against the printed
#: elapsed time).
COOKBOOK: tuple[GemmRate, ...] = (
    GemmRate("qkv_transform", 8192, 12288, 4096, 1, 241.616, "transformer.out"),
    GemmRate("attention_linear_projection", 8192, 4096, 4096, 1, 234.852, "transformer.out"),
    GemmRate("mlp_h_to_4h", 8192, 16384, 4096, 1, 241.128, "transformer.out"),
    GemmRate("mlp_4h_to_h", 8192, 4096, 16384, 1, 252.764, "transformer.out"),
    GemmRate("logit_block", 8192, 4096, 51200, 1, 255.380, "transformer.out"),
    GemmRate("bmm 128 x (1024 x 1024 x 1024)", 1024, 1024, 1024, 128, 227.295, "bmm.out"),
    GemmRate("bmm 128 x (1024 x 1024, K 2048)", 1024, 1024, 2048, 128, 243.258, "bmm.out"),
    GemmRate("attention_over_value (n = d 256)", 2048, 256, 2048, 64, 218.952,
             "transformer.out"),
    GemmRate("attention_score (K = d 256)", 2048, 2048, 256, 64, 130.182, "transformer.out"),
)

#: Catalog devices the term applies to (see the module docstring: the source's GPU,
#: assumed an A100).
K0_DEVICES = frozenset({"a100-sxm4-40gb", "a100-sxm4-80gb"})


def asymptote_tflops(rows: tuple[GemmRate, ...]) -> float:
    """The rate with no per-tile cost, ``R``: ``1 / rate = (1 + K0 / K) / R`` through
    the two rows of deepest reduction.

    Examples
    --------
    >>> rows = (GemmRate("a", 1, 1, 100, 1, 50.0, "f"), GemmRate("b", 1, 1, 300, 1, 75.0, "f"))
    >>> asymptote_tflops(rows)                   # R = 100, K0 = 100
    100.0
    """
    (k1, r1), (k2, r2) = sorted((x.k, x.tflops) for x in rows)[-2:]
    slope = (1 / r1 - 1 / r2) / (1 / k1 - 1 / k2)      # K0 / R
    return 1.0 / (1 / r2 - slope / k2)


def row_k0(k: int, tflops: float, asymptote: float) -> float:
    """The ``K0`` at which ``asymptote K / (K + K0)`` is one row's measured rate.

    Examples
    --------
    >>> row_k0(256, 128.0, 256.0)
    256.0
    """
    return k * (asymptote / tflops - 1.0)


def per_row_k0() -> list[float]:
    """Each :data:`COOKBOOK` row's ``K0`` at the common ``R`` (:func:`asymptote_tflops`)."""
    r = asymptote_tflops(COOKBOOK)
    return [row_k0(x.k, x.tflops, r) for x in COOKBOOK]


_K0S = per_row_k0()

#: The reduction steps a product's fixed per-tile cost is worth: low and high the
#: smallest and largest per-row K0 of the cookbook's rows; definition: central their
#: median (the rule fixed before any effect on a validation case was computed).
REDUCTION_K0 = CitedRange(
    "gemm_reduction_k0", central=statistics.median(_K0S), low=min(_K0S), high=max(_K0S),
    unit="reduction steps (elements of K) a GEMM's fixed cost per output tile is worth",
    source="EleutherAI cookbook (Anthony et al. 2024, arXiv 2401.14489) "
           "benchmarks/sizing/sample_results/transformer.out and bmm.out: fp16 rates at K "
           "256-51200, the slowest of the timed iterations (reads low); GPU not named, an "
           "A100 assumed; each row's K0 at the common R of the two deepest rows")
register(REDUCTION_K0)


def device_k0(device_name: str, side: str = "central") -> float:
    """``K0`` of :data:`REDUCTION_K0` at ``side`` for a device, 0 off :data:`K0_DEVICES`.

    Examples
    --------
    >>> device_k0("h100-sxm", "high"), round(device_k0("a100-sxm4-80gb", "low"), 1)
    (0.0, 112.6)
    """
    if device_name not in K0_DEVICES:
        return 0.0
    return at_end(REDUCTION_K0, side)
