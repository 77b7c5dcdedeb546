"""A matrix product's time on a GPU from its shape: tile and wave quantization.

cuBLAS computes ``C (M x N) = A (M x K) B (K x N)`` by splitting ``C`` into tiles,
one thread block each, every block stepping through ``K`` (NVIDIA, "Matrix
Multiplication Background User's Guide", DU-09799-001, Sec. 2.1 "GPU
implementation"). Two effects of the shape follow (the same guide, Ch. 3
"Dimension quantization effects"):

- **tile quantization** (Sec. 3.1): a dimension that is not a multiple of the tile
  leaves the last row or column of tiles part empty, and the empty part costs what
  a full tile costs;
- **wave quantization** (Sec. 3.2): the tiles run in waves of one per SM (108 on an
  A100, whose figures the guide uses); a last wave that fills only some SMs takes
  as long as a full one.

The efficiency of a shape is the work it does over the work that its waves of
full tiles could have done: ``M N / (waves x SMs x T_m T_n)``. cuBLAS picks its
tile (and kernel) by heuristics; this module takes, among the large tiles that
the guide names as the efficient ones (Sec. 2.3 "Typical tile dimensions in
cuBLAS and performance": 256 x 128 and 128 x 256, then 128 x 128), the one whose
quantization wastes least, all at the same rate per full tile (an assumption:
smaller tiles reuse less data and run slower per tile, which this leaves out). A
product with few output tiles and a long ``K`` (a weight gradient: ``K`` is the
tokens) is split along ``K`` across thread blocks, as CUTLASS's and cuBLAS's
split-K kernels do ("parallelized reductions", CUTLASS ``media/docs/efficient_gemm.md``),
each split at least :data:`MIN_SPLIT_K` deep.

The time is the roofline of that rate and of the bytes the product must move at
least (its two inputs read once, its output written once, 2-byte values):
``max(2 M N K / (ceiling x efficiency), bytes / bandwidth)``; ``ceiling`` is the
device's measured best-shape matmul rate (:meth:`Device.for_gemms`), whose
shapes quantize perfectly. Where a fixed cost per output tile is charged (``k0``,
:mod:`dlscale.perfmodel.compute.gemm_reduction`), the rate is further times
:func:`reduction_factor`: ``K / (K + K0)``, over its value at the ceiling's own
source shape (:data:`CEILING_SOURCE_K`), so that shape keeps its measured rate.

Examples
--------
>>> shape_efficiency(8192, 8192, sms=108)      # 64 x 32 tiles of 128 x 256: 19 waves
0.9980...
>>> round(shape_efficiency(1792, 1792, sms=108), 3)   # 7 x 14 = 98 tiles on 108 SMs
0.907
"""

from __future__ import annotations

import math
from functools import lru_cache

__all__ = ["CEILING_SOURCE_K", "CUBLAS_TILES", "MIN_SPLIT_K", "gemm_time_s",
           "reduction_factor", "shape_efficiency"]

#: The large cuBLAS tiles (rows x columns of ``C``) of the Matrix Multiplication
#: Background guide, Sec. 2.3: 256 x 128 and 128 x 256 the most efficient, 128 x 128
#: next.
CUBLAS_TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128))

#: Shallowest ``K`` slice a split-K kernel gives one thread block (an assumption: a
#: few of the guide's 32- or 64-deep K steps, enough to amortize the block's start).
MIN_SPLIT_K = 256

#: Reduction depth of the shape the A100's ceiling was measured at: 8192 x 8192 x
#: 8192 (Horace He, thonking.ai 2024; catalog ``A100_POWER_CAPPED_GEMM_TFLOPS``).
CEILING_SOURCE_K = 8192


@lru_cache(maxsize=4096)
def shape_efficiency(m: int, n: int, k: int = 0, batch: int = 1, sms: int = 108,
                     k0: float = 0.0) -> float:
    """Share of its waves' tile capacity that a ``batch`` of ``m x n`` products uses.

    Parameters
    ----------
    m, n : int
        Rows and columns of each output.
    k : int, optional
        The reduction depth; where given, a product whose tiles do not fill one
        wave may split it (split-K) into slices of at least :data:`MIN_SPLIT_K`.
    batch : int, optional
        Independent products of the same shape in one launch (a batched GEMM).
    sms : int, optional
        Streaming multiprocessors (one tile each per wave).
    k0 : float, optional
        Reduction steps a fixed per-tile cost is worth: each tile (each split of a
        split-K tile) runs at :func:`reduction_factor` of its own depth (with ``k``
        given; 0: no such cost).

    Returns
    -------
    float
        In ``(0, 1]`` without ``k0``; with it, above 1 only past the ceiling's
        source depth.
    """
    if min(m, n, batch, sms) < 1:
        raise ValueError(f"gemm shape: m, n, batch and sms must be >= 1, got "
                         f"{(m, n, batch, sms)}")
    best = 0.0
    for tm, tn in CUBLAS_TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        splits = 1
        if k and tiles < sms:
            splits = max(1, min(sms // tiles, k // MIN_SPLIT_K))
        waves = math.ceil(tiles * splits / sms)
        depth = reduction_factor(math.ceil(k / splits), k0) if k and k0 else 1.0
        best = max(best, depth * m * n * batch * splits / (waves * sms * tm * tn))
    return best


def reduction_factor(k: int, k0: float) -> float:
    """``K / (K + K0)`` over its value at :data:`CEILING_SOURCE_K`: the share of the
    ceiling a product of reduction ``k`` reaches with a fixed per-tile cost worth
    ``k0`` steps (1 at the ceiling's source shape, and everywhere with ``k0`` 0).

    Examples
    --------
    >>> reduction_factor(8192, 250.0), reduction_factor(256, 0.0)
    (1.0, 1.0)
    >>> round(reduction_factor(256, 256.0), 3)       # K / (K + K0) = 0.5, rebased
    0.516
    """
    if k < 1 or not k0 >= 0:
        raise ValueError(f"reduction: k must be >= 1 and k0 >= 0, got k {k!r}, k0 {k0!r}")
    return (k / (k + k0)) * ((CEILING_SOURCE_K + k0) / CEILING_SOURCE_K)


def gemm_time_s(m: int, n: int, k: int, batch: int, rate_flops: float,
                bandwidth_Bps: float, sms: int, element_bytes: float = 2.0,
                k0: float = 0.0) -> float:
    """Seconds for ``batch`` products ``(m x k) (k x n)`` (see the module docstring).

    Parameters
    ----------
    m, n, k, batch : int
        Shape and count.
    rate_flops : float
        The device's best-shape matmul rate (FLOP/s).
    bandwidth_Bps : float
        Memory bandwidth the operands move at.
    sms : int
        Streaming multiprocessors.
    element_bytes : float, optional
        Bytes per value (2: fp16/bf16).
    k0 : float, optional
        Reduction steps a fixed per-tile cost is worth (:func:`reduction_factor`;
        0: none).

    Returns
    -------
    float

    Examples
    --------
    >>> t = gemm_time_s(8192, 8192, 8192, 1, 270e12, 1.8e12, 108)
    >>> round(2 * 8192**3 / t / 1e12, 1)        # TFLOP/s
    269.5
    """
    flops = 2.0 * m * n * k * batch
    moved = element_bytes * batch * (m * k + k * n + m * n)
    eff = shape_efficiency(m, n, k, batch, sms, k0)
    return max(flops / (rate_flops * eff), moved / bandwidth_Bps)
