"""Fusion buffers: pack gradient tensors into one contiguous buffer per group and back.

Grouping either follows Horovod's tensor fusion (tensors taken in order and added to
the current group while its size stays within ``threshold_bytes``; a tensor larger
than the threshold travels alone), or is given explicitly (graph-aware grouping,
published-results section 4), as a list of lists of tensor indices.

Examples
--------
>>> import numpy as np
>>> ts = [np.ones(2), np.full(3, 2.0), np.zeros(4)]
>>> plan = make_plan(ts, threshold_bytes=40)
>>> plan.groups
((0, 1), (2,))
>>> buf = pack_group(ts, plan, 0)
>>> buf.tolist()
[1.0, 1.0, 2.0, 2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlscale.kernels._checks import check_float_array, check_int, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["FusionPlan", "fusion_groups", "make_plan", "pack_group", "unpack_group"]


@njit()
def _copy_in(buf: np.ndarray, offset: int, src: np.ndarray) -> None:
    dst = buf[offset: offset + src.size]  # a view: range(size) loops vectorize
    for i in range(src.size):
        dst[i] = src[i]


@njit()
def _copy_out(dst: np.ndarray, buf: np.ndarray, offset: int) -> None:
    src = buf[offset: offset + dst.size]
    for i in range(dst.size):
        dst[i] = src[i]


def fusion_groups(sizes_bytes: Sequence[int], threshold_bytes: int) -> list[list[int]]:
    """Horovod-style greedy grouping of tensors (in order) into buffers of at most ``threshold_bytes``.

    Examples
    --------
    >>> fusion_groups([10, 20, 30, 100, 5], threshold_bytes=60)
    [[0, 1, 2], [3], [4]]
    """
    thr = check_int("threshold_bytes", threshold_bytes, low=1)
    groups: list[list[int]] = []
    cur: list[int] = []
    cur_bytes = 0
    for k, s in enumerate(sizes_bytes):
        s = check_int(f"sizes_bytes[{k}]", s)
        if cur and cur_bytes + s > thr:
            groups.append(cur)
            cur, cur_bytes = [], 0
        cur.append(k)
        cur_bytes += s
    if cur:
        groups.append(cur)
    return groups


@dataclass(frozen=True)
class FusionPlan:
    """Where each tensor lives in its group's fusion buffer.

    Attributes
    ----------
    groups : tuple of tuple of int
        Tensor indices of each group, in buffer order.
    offsets : tuple of int
        Element offset of every tensor inside its group's buffer (indexed by tensor).
    group_elements : tuple of int
        Elements of each group's buffer.
    dtype : numpy.dtype
        Element type shared by all tensors.
    """

    groups: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    group_elements: tuple[int, ...]
    dtype: np.dtype

    def group_bytes(self, g: int) -> int:
        """Bytes of group ``g``'s buffer."""
        return self.group_elements[g] * self.dtype.itemsize


def _tensors(tensors: Sequence[np.ndarray]) -> list[np.ndarray]:
    if len(tensors) == 0:
        raise ValueError("tensors: need at least one tensor")
    flats = [check_float_array(f"tensors[{k}]", t) for k, t in enumerate(tensors)]
    for k, t in enumerate(tensors):
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"tensors[{k}]: dtype {t.dtype} differs from tensors[0] dtype {tensors[0].dtype}")
    return flats


def make_plan(tensors: Sequence[np.ndarray], threshold_bytes: int | None = None,
              groups: Sequence[Sequence[int]] | None = None) -> FusionPlan:
    """Plan fusion buffers by size threshold (Horovod) or by a given grouping (graph-aware).

    Exactly one of ``threshold_bytes`` and ``groups`` is given; a given grouping must
    use every tensor index exactly once.
    """
    flats = _tensors(tensors)
    if (threshold_bytes is None) == (groups is None):
        raise ValueError("make_plan: give exactly one of threshold_bytes and groups")
    if groups is None:
        grp = fusion_groups([f.nbytes for f in flats], threshold_bytes)  # type: ignore[arg-type]
    else:
        grp = [[check_int("groups index", i) for i in g] for g in groups]
        used = sorted(i for g in grp for i in g)
        if used != list(range(len(flats))) or any(len(g) == 0 for g in grp):
            raise ValueError(f"groups: must be non-empty and use each of the {len(flats)} tensor indices "
                             f"exactly once, got {[list(g) for g in grp]}")
    offsets = [0] * len(flats)
    sizes = []
    for g in grp:
        off = 0
        for i in g:
            offsets[i] = off
            off += flats[i].size
        sizes.append(off)
    return FusionPlan(groups=tuple(tuple(g) for g in grp), offsets=tuple(offsets),
                      group_elements=tuple(sizes), dtype=flats[0].dtype)


def _group(plan: FusionPlan, group: int, flats: list[np.ndarray]) -> int:
    g = check_int("group", group)
    if g >= len(plan.groups):
        raise ValueError(f"group: must be < {len(plan.groups)}, got {g}")
    if len(flats) != len(plan.offsets):
        raise ValueError(f"tensors: plan has {len(plan.offsets)} tensors, got {len(flats)}")
    for i in plan.groups[g]:
        if flats[i].dtype != plan.dtype:
            raise TypeError(f"tensors[{i}]: dtype {flats[i].dtype} differs from the plan's {plan.dtype}")
    return g


def pack_group(tensors: Sequence[np.ndarray], plan: FusionPlan, group: int,
               out: np.ndarray | None = None) -> np.ndarray:
    """Copy the tensors of ``group`` into one contiguous buffer (``out`` if given) and return it."""
    flats = _tensors(tensors)
    g = _group(plan, group, flats)
    n = plan.group_elements[g]
    if out is None:
        out = np.empty(n, dtype=plan.dtype)
    o = check_float_array("out", out)
    if o.size != n or o.dtype != plan.dtype:
        raise ValueError(f"out: must hold {n} elements of {plan.dtype}, got {o.size} of {o.dtype}")
    check_writeable("out", out)
    for i in plan.groups[g]:
        _copy_in(o, plan.offsets[i], flats[i])
    return out


def unpack_group(buffer: np.ndarray, tensors: Sequence[np.ndarray], plan: FusionPlan, group: int) -> None:
    """Copy a (reduced) fusion buffer of ``group`` back into its tensors, in place.

    Examples
    --------
    >>> import numpy as np
    >>> ts = [np.zeros(2), np.zeros(1)]
    >>> plan = make_plan(ts, groups=[[1, 0]])
    >>> unpack_group(np.array([9.0, 1.0, 2.0]), ts, plan, 0)
    >>> ts[0].tolist(), ts[1].tolist()
    ([1.0, 2.0], [9.0])
    """
    flats = _tensors(tensors)
    g = _group(plan, group, flats)
    b = check_float_array("buffer", buffer)
    if b.size != plan.group_elements[g] or b.dtype != plan.dtype:
        raise ValueError(f"buffer: must hold {plan.group_elements[g]} elements of {plan.dtype}, "
                         f"got {b.size} of {b.dtype}")
    for i in plan.groups[g]:
        check_writeable(f"tensors[{i}]", tensors[i])
        _copy_out(flats[i], b, plan.offsets[i])
