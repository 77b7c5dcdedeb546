"""Framework dispatch: no layer runs faster than the host can dispatch its operators.

Each operator costs host time to dispatch (Python, the framework's dispatcher, the
kernel launch). Frameworks issue kernels ahead of the device, so a layer cannot run
faster than its operators can be dispatched: ``layer time >= operators x``
:data:`DISPATCH` (or ``workload.dispatch_per_op_s``). Operators per layer: 1 forward;
backward 3 for a layer with parameters (data gradient, weight gradient, the
per-variable update of the optimizer), else 1.
"""

from __future__ import annotations

import numpy as np

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.training.workload import Model, Workload

__all__ = ["DISPATCH", "dispatch_floor", "dispatch_s_per_op", "operators_per_layer"]

#: Host seconds to dispatch one operator. "From PyTorch op to kernel launch"
#: (jiahuanglin.xyz, gpu_kernel_serving lesson 18, its table of layers: Python,
#: pybind11, autograd, ATen dispatcher, backend, driver): "~5-25 us of CPU-side work
#: per op" -> low 5 us, high 25 us, central their midpoint 15 us. A kernel launch alone
#: measured 4-6 us ("pegainfer (3): From Launch Overhead to CUDA Graph", susun-blog.com,
#: RTX 5070 Ti), inside the range.
DISPATCH = CitedRange(
    "dispatch_s_per_op", central=15e-6, low=5e-6, high=25e-6, unit="s per operator",
    source="jiahuanglin.xyz gpu_kernel_serving/18_pytorch_to_kernel: ~5-25 us CPU-side per "
           "op (central the midpoint); kernel launch alone 4-6 us (susun-blog.com pegainfer 3)")
register(DISPATCH)


def dispatch_s_per_op(workload: Workload, end: str = "central") -> float:
    """Dispatch seconds per operator: the workload's own figure, else :data:`DISPATCH`."""
    if workload.dispatch_per_op_s >= 0:
        return float(workload.dispatch_per_op_s)
    return at_end(DISPATCH, end)


def operators_per_layer(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Operators dispatched per layer, forward and backward (module docstring).

    Examples
    --------
    >>> from dlscale.perfmodel.training.workload import Layer, Model
    >>> m = Model("m", (Layer("c", "conv", 9, 1.0, 4), Layer("r", "act", 0, 1.0, 4)),
    ...           (4,), "none", 1)
    >>> [a.tolist() for a in operators_per_layer(m)]
    [[1.0, 1.0], [3.0, 1.0]]
    """
    fwd = np.ones(len(model.layers))
    bwd = np.array([3.0 if layer.params > 0 else 1.0 for layer in model.layers])
    return fwd, bwd


def dispatch_floor(model: Model, dispatch_s: float, forward_s: np.ndarray,
                   backward_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Layer times no shorter than their operators' dispatch.

    Parameters
    ----------
    model : Model
        Its layers.
    dispatch_s : float
        Seconds per operator (:func:`dispatch_s_per_op`; 0: no floor).
    forward_s, backward_s : ndarray
        Roofline times per layer (last axis: layers).

    Returns
    -------
    tuple of ndarray
        ``(forward_s, backward_s)`` with the floor applied.
    """
    if dispatch_s <= 0:
        return forward_s, backward_s
    fwd, bwd = operators_per_layer(model)
    return np.maximum(forward_s, fwd * dispatch_s), np.maximum(backward_s, bwd * dispatch_s)
