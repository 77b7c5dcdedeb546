"""Validation shared by the public kernel wrappers.

Every public wrapper checks its arrays and scalars here *before* any work, so the
private ``@njit`` kernels can assume contiguous float32/float64 arrays of matching
shape.  Errors are plain ``TypeError`` (wrong kind or dtype) and ``ValueError``
(wrong shape, layout or value); each message names the argument, the value and what
is allowed.

Examples
--------
>>> import numpy as np
>>> flat = check_float_array("x", np.zeros((2, 3)))
>>> flat.shape
(6,)
>>> check_scalar("lr", -1.0, np.float64)
Traceback (most recent call last):
...
ValueError: lr: must be a finite number >= 0, got -1.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_float_array(name: str, a: Any, *, ndim: int | None = None, flat: bool = True) -> np.ndarray:
    """Check that ``a`` is a C-contiguous float32/float64 ndarray; return it.

    With ``flat=True`` (default) a 1-D view of the same memory is returned, so the
    kernels compile one signature per dtype whatever the tensor's shape.
    """
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: must be a numpy ndarray, got {type(a).__name__}")
    if a.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: dtype must be float32 or float64, got {a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name}: must be {ndim}-D, got shape {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name}: must be C-contiguous (use np.ascontiguousarray), got strides {a.strides}")
    if flat and ndim is None:
        return a.reshape(-1)
    return a


def check_writeable(name: str, a: np.ndarray) -> None:
    """Raise ValueError if an in-place target is read-only."""
    if not a.flags.writeable:
        raise ValueError(f"{name}: is updated in place and must be writeable")


def check_like(name: str, a: Any, ref_name: str, ref: np.ndarray) -> np.ndarray:
    """Check ``a`` like :func:`check_float_array` and require ``ref``'s shape and dtype."""
    flat = check_float_array(name, a)
    if a.shape != ref.shape:
        raise ValueError(f"{name}: shape {a.shape} does not match {ref_name} shape {ref.shape}")
    if a.dtype != ref.dtype:
        raise TypeError(f"{name}: dtype {a.dtype} does not match {ref_name} dtype {ref.dtype}")
    return flat


def check_scalar(name: str, value: Any, dtype: Any, *, low: float = 0.0,
                 high: float = math.inf, high_inclusive: bool = True) -> Any:
    """Check a finite real scalar with ``low <= value <= high``; return it cast to ``dtype``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a real number, got {type(value).__name__}")
    v = float(value)
    ok = math.isfinite(v) and v >= low and (v <= high if high_inclusive else v < high)
    if not ok:
        upper = "" if math.isinf(high) else (f" and <= {high:g}" if high_inclusive else f" and < {high:g}")
        raise ValueError(f"{name}: must be a finite number >= {low:g}{upper}, got {value}")
    return np.dtype(dtype).type(v)


def check_int(name: str, value: Any, *, low: int = 0) -> int:
    """Check an integer ``>= low``; return it as a Python int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name}: must be an integer >= {low}, got {value}")
    return int(value)


def check_index_array(name: str, a: Any) -> np.ndarray:
    """Check a 1-D integer array; return it as contiguous int64."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: must be a numpy ndarray, got {type(a).__name__}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: dtype must be an integer type, got {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name}: must be 1-D, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)
