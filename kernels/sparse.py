"""Sparse (IndexedSlices-style) gradients: densify by scatter-add, gather by concatenation.

An embedding-table gradient arrives as ``(indices, values)``: ``values[k]`` is the
gradient of row ``indices[k]`` of a ``(n_rows, dim)`` table; an index may repeat.
Two ways to reduce it across ranks (Cavdar et al. 2019, published-results section 2):

* densify: scatter-add into a dense ``(n_rows, dim)`` table, then allreduce it
  (:func:`densify`, :func:`dense_bytes`);
* sparse gather: concatenate every rank's ``(indices, values)`` (an allgather), and
  each rank applies the concatenation (:func:`sparse_gather`,
  :func:`indexed_slices_bytes`).

Examples
--------
>>> import numpy as np
>>> densify(np.array([1, 1]), np.array([[1.0], [2.0]]), n_rows=3).ravel().tolist()
[0.0, 3.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlscale.kernels._checks import check_float_array, check_index_array, check_int, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["dense_bytes", "densify", "indexed_slices_bytes", "scatter_add", "sparse_gather"]


@njit()
def _scatter_add(dense: np.ndarray, indices: np.ndarray, values: np.ndarray) -> None:
    dim = dense.shape[1]
    for k in range(indices.size):
        row = indices[k]
        for j in range(dim):
            dense[row, j] += values[k, j]


@njit()
def _copy_rows(out: np.ndarray, offset: int, values: np.ndarray) -> None:
    for k in range(values.shape[0]):
        for j in range(values.shape[1]):
            out[offset + k, j] = values[k, j]


def _slices(indices: np.ndarray, values: np.ndarray, n_rows: int | None,
            prefix: str = "") -> tuple[np.ndarray, np.ndarray]:
    idx = check_index_array(prefix + "indices", indices)
    val = check_float_array(prefix + "values", values, ndim=2)
    if val.shape[0] != idx.size:
        raise ValueError(f"{prefix}values: has {val.shape[0]} rows but {prefix}indices has {idx.size} entries")
    if idx.size and idx.min() < 0:
        raise ValueError(f"{prefix}indices: must be >= 0, got {int(idx.min())}")
    if n_rows is not None and idx.size and idx.max() >= n_rows:
        raise ValueError(f"{prefix}indices: must be < n_rows={n_rows}, got {int(idx.max())}")
    return idx, val


def scatter_add(dense: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Add ``values[k]`` into ``dense[indices[k]]`` for every ``k`` (repeats accumulate), in place.

    Examples
    --------
    >>> import numpy as np
    >>> scatter_add(np.zeros((2, 2)), np.array([0, 0]), np.ones((2, 2))).tolist()
    [[2.0, 2.0], [0.0, 0.0]]
    """
    d = check_float_array("dense", dense, ndim=2)
    check_writeable("dense", dense)
    idx, val = _slices(indices, values, d.shape[0])
    if val.shape[1] != d.shape[1] or val.dtype != d.dtype:
        raise ValueError(f"values: shape[1]/dtype {val.shape[1]}/{val.dtype} must match dense {d.shape[1]}/{d.dtype}")
    _scatter_add(d, idx, val)
    return dense


def densify(indices: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Return the dense ``(n_rows, dim)`` table of an IndexedSlices gradient.

    Examples
    --------
    >>> import numpy as np
    >>> densify(np.array([2]), np.ones((1, 2), dtype=np.float32), 3).dtype
    dtype('float32')
    """
    n_rows = check_int("n_rows", n_rows, low=0)
    idx, val = _slices(indices, values, n_rows)
    dense = np.zeros((n_rows, val.shape[1]), dtype=val.dtype)
    _scatter_add(dense, idx, val)
    return dense


def sparse_gather(slices: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the ``(indices, values)`` of every rank, as an allgather delivers them.

    Examples
    --------
    >>> import numpy as np
    >>> i, v = sparse_gather([(np.array([0]), np.ones((1, 2))), (np.array([3, 0]), np.zeros((2, 2)))])
    >>> i.tolist(), v.shape
    ([0, 3, 0], (3, 2))
    """
    if len(slices) == 0:
        raise ValueError("slices: need at least one (indices, values) pair")
    checked = [_slices(i, v, None, prefix=f"slices[{k}].") for k, (i, v) in enumerate(slices)]
    dim, dtype = checked[0][1].shape[1], checked[0][1].dtype
    for k, (_, v) in enumerate(checked):
        if v.shape[1] != dim or v.dtype != dtype:
            raise ValueError(f"slices[{k}].values: shape[1]/dtype {v.shape[1]}/{v.dtype} differ from "
                             f"slices[0] {dim}/{dtype}")
    total = sum(i.size for i, _ in checked)
    out_i = np.empty(total, dtype=np.int64)
    out_v = np.empty((total, dim), dtype=dtype)
    off = 0
    for i, v in checked:
        out_i[off: off + i.size] = i
        _copy_rows(out_v, off, v)
        off += i.size
    return out_i, out_v


def dense_bytes(n_rows: int, dim: int, itemsize: int) -> int:
    """Bytes of the dense table, ``n_rows * dim * itemsize``.

    >>> dense_bytes(1000, 64, 4)
    256000
    """
    return check_int("n_rows", n_rows) * check_int("dim", dim) * check_int("itemsize", itemsize, low=1)


def indexed_slices_bytes(n_slices: int, dim: int, itemsize: int, index_itemsize: int = 8) -> int:
    """Bytes of ``n_slices`` rows of values plus their indices.

    >>> indexed_slices_bytes(10, 64, 4)
    2640
    """
    return check_int("n_slices", n_slices) * (check_int("dim", dim) * check_int("itemsize", itemsize, low=1)
                                              + check_int("index_itemsize", index_itemsize, low=1))
