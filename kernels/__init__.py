"""dlscale.kernels: numba kernels on real arrays (leaf layer: imports no other dlscale layer).

Public wrappers check shapes, dtypes (float32/float64), contiguity and scalar ranges,
raising ``TypeError``/``ValueError`` before any work, then call private ``@njit``
kernels compiled with numba's on-disk cache where it can be written (a second process
loads them from disk; :mod:`.jit`).

Modules: :mod:`.easgd` (EASGD family), :mod:`.sgd` (SGD baselines),
:mod:`.hogwild` (lock-free multi-threaded updates with real lost updates),
:mod:`.reduction_steps` and :mod:`.allreduce` (allreduce algorithms step by step on
in-process buffers),
:mod:`.sparse` (IndexedSlices densify / gather), :mod:`.fusion` (fusion buffers),
:mod:`.model` (softmax regression / one-hidden-layer MLP), :mod:`.cnn` (a small CNN),
:mod:`.data` (digits and synthetic data).

Examples
--------
>>> import numpy as np
>>> from dlscale.kernels import allreduce_inplace, sgd_update
>>> bufs = np.ones((3, 5))
>>> allreduce_inplace(bufs, "ring").total_bytes
160
>>> sgd_update(np.zeros(5), bufs[0], lr=0.5)[0]
np.float64(-1.5)
"""

from dlscale.kernels.allreduce import ALGORITHMS, AllreduceStats, allreduce_inplace
from dlscale.kernels.cnn import CNNShape, cnn_accuracy, cnn_init_params, cnn_loss_and_grad
from dlscale.kernels.data import Dataset, load_digits_split, synthetic_classification
from dlscale.kernels.easgd import (
    easgd_center_update_async,
    easgd_center_update_sync,
    easgd_elastic_exchange,
    easgd_worker_update,
    measgd_worker_update,
    nesterov_lookahead,
)
from dlscale.kernels.fusion import FusionPlan, fusion_groups, make_plan, pack_group, unpack_group
from dlscale.kernels.hogwild import (
    LostUpdates,
    hogwild_easgd_center_update,
    hogwild_lost_updates,
    hogwild_sgd_update,
)
from dlscale.kernels.model import ModelShape, accuracy, forward, init_params, loss_and_grad
from dlscale.kernels.reduction_steps import (
    chunk_bounds,
    doubling_step,
    halving_step,
    ring_allgather_step,
    ring_reduce_scatter_step,
    tree_broadcast_step,
    tree_reduce_step,
)
from dlscale.kernels.sgd import momentum_sgd_update, sgd_update
from dlscale.kernels.sparse import (
    dense_bytes,
    densify,
    indexed_slices_bytes,
    scatter_add,
    sparse_gather,
)

__all__ = [
    "ALGORITHMS",
    "AllreduceStats",
    "CNNShape",
    "Dataset",
    "FusionPlan",
    "LostUpdates",
    "ModelShape",
    "accuracy",
    "allreduce_inplace",
    "chunk_bounds",
    "cnn_accuracy",
    "cnn_init_params",
    "cnn_loss_and_grad",
    "dense_bytes",
    "densify",
    "doubling_step",
    "easgd_center_update_async",
    "easgd_center_update_sync",
    "easgd_elastic_exchange",
    "easgd_worker_update",
    "forward",
    "fusion_groups",
    "halving_step",
    "hogwild_easgd_center_update",
    "hogwild_lost_updates",
    "hogwild_sgd_update",
    "indexed_slices_bytes",
    "init_params",
    "load_digits_split",
    "loss_and_grad",
    "make_plan",
    "measgd_worker_update",
    "momentum_sgd_update",
    "nesterov_lookahead",
    "pack_group",
    "ring_allgather_step",
    "ring_reduce_scatter_step",
    "scatter_add",
    "sgd_update",
    "sparse_gather",
    "synthetic_classification",
    "tree_broadcast_step",
    "tree_reduce_step",
    "unpack_group",
]
