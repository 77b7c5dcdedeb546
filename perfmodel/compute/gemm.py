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
shapes quantize perfectly.

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

__all__ = ["CUBLAS_TILES", "MIN_SPLIT_K", "gemm_time_s", "shape_efficiency"]

#: The large cuBLAS tiles (rows x columns of ``C``) of the Matrix Multiplication
#: Background guide, Sec. 2.3: 256 x 128 and 128 x 256 the most efficient, 128 x 128
#: next.
CUBLAS_TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128))

#: Shallowest ``K`` slice a split-K kernel gives one thread block (an assumption: a
#: few of the guide's 32- or 64-deep K steps, enough to amortize the block's start).
MIN_SPLIT_K = 256


@lru_cache(maxsize=4096)
def shape_efficiency(m: int, n: int, k: int = 0, batch: int = 1, sms: int = 108) -> float:
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

    Returns
    -------
    float
        In ``(0, 1]``.
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
        best = max(best, m * n * batch * splits / (waves * sms * tm * tn))
    return best


def gemm_time_s(m: int, n: int, k: int, batch: int, rate_flops: float,
                bandwidth_Bps: float, sms: int, element_bytes: float = 2.0) -> float:
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
    eff = shape_efficiency(m, n, k, batch, sms)
    return max(flops / (rate_flops * eff), moved / bandwidth_Bps)
