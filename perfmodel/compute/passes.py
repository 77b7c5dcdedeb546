"""Extra passes over the data that a training normalisation makes.

The roofline (:mod:`dlscale.perfmodel.compute.roofline`) charges a layer one read of
its input and one write of its output forward, and reads of the output gradient and
the saved input and a write of the input gradient backward. A normalisation whose
statistics training computes over the data (batch norm over the batch and the
spatial positions, layer norm over the features; ``kind == "norm"`` with a learned
scale and shift, ``params > 0``) makes more passes in the frameworks' kernels:

- forward, PyTorch's CUDA batch norm (``aten/src/ATen/native/cuda/Normalization.cuh``)
  runs ``batch_norm_collect_statistics_kernel`` (reads the input for the mean and
  variance) and then ``batch_norm_transform_input_kernel`` (reads it again, writes
  the output): one extra read of the input; PyTorch's layer norm of the same years
  (``aten/src/ATen/native/cuda/layer_norm_kernel.cu``) the same pair,
  ``RowwiseMomentsCUDAKernel`` then ``LayerNormForwardCUDAKernel``;
- backward, ``batch_norm_backward_reduce_kernel`` (reads the output gradient and
  the input for the per-channel sums) before ``batch_norm_backward_elemt_kernel``
  (reads both again, writes the input gradient): one extra read of the output
  gradient and one of the input; layer norm's ``ComputeInternalGradientsCUDAKernel``
  before ``LayerNormBackwardCUDAKernel`` the same.

ReLU (forward: read, write; backward ``threshold_backward``: read the saved tensor
and the gradient, write one), pooling and the other elementwise layers make the
roofline's passes and get none extra. Not counted: the residual addition's second
input (the roofline reads one input per layer) and LRN's scale array (Caffe).

Where a framework fuses the statistics into a single pass (cuDNN's
``CUDNN_BATCHNORM_SPATIAL_PERSISTENT`` mode, which keeps the tensor on chip, or a
BN fused into its neighbours as Jung et al. 2019, arXiv 1807.01702, restructure it)
there is no extra pass: the range of :data:`NORM_EXTRA_PASSES` is 0 to 1. Its central
value follows a rule fixed before any validation: the frameworks' default, unfused
kernels (the persistent and fused variants are opt-in), i.e. 1.

Examples
--------
>>> from dlscale.perfmodel.training.workload import Layer, Model
>>> bn = Layer("bn", "norm", 8, 4.0, 16)
>>> lrn = Layer("lrn", "norm", 0, 11.0, 16)
>>> relu = Layer("relu", "act", 0, 1.0, 16)
>>> m = Model("m", (bn, lrn, relu), (16,), "none", 1)
>>> extra_passes(m).tolist()
[1.0, 0.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.training.workload import Model

__all__ = ["NORM_EXTRA_PASSES", "extra_passes"]

#: Extra passes a training normalisation makes over its input forward, and over its
#: input and output gradient backward, beyond the roofline's (module docstring).
NORM_EXTRA_PASSES = CitedRange(
    "norm_extra_passes", central=1.0, low=0.0, high=1.0, unit="passes",
    source="PyTorch aten/src/ATen/native/cuda/Normalization.cuh: "
           "batch_norm_collect_statistics_kernel + batch_norm_transform_input_kernel, "
           "batch_norm_backward_reduce_kernel + batch_norm_backward_elemt_kernel (1 extra "
           "pass; central: the default, unfused kernels); 0 where a single-pass persistent "
           "or fused kernel runs (cuDNN CUDNN_BATCHNORM_SPATIAL_PERSISTENT; Jung et al. "
           "2019, arXiv 1807.01702)")
register(NORM_EXTRA_PASSES)


def extra_passes(model: Model, end: str = "central") -> np.ndarray:
    """Extra passes per layer of ``model``: :data:`NORM_EXTRA_PASSES` on each training
    normalisation (``kind == "norm"`` with ``params > 0``), 0 elsewhere.

    Parameters
    ----------
    model : Model
    end : {"central", "low", "high"}
        Which end of the cited range.

    Returns
    -------
    ndarray
        Shape ``(L,)``, in model order.
    """
    passes = at_end(NORM_EXTRA_PASSES, end)
    return np.array([passes if (layer.kind == "norm" and layer.params > 0) else 0.0
                     for layer in model.layers])
