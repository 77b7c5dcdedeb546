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

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from dlscale.kernels.fusion import (
        FusionPlan,
        fusion_groups,
        make_plan,
        pack_group,
        unpack_group,
    )
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

#: Each public name -> the module of the package that defines it. A name is imported
#: on first use (PEP 562 ``__getattr__``), so that a module that needs one kernel, or
#: only :mod:`.jit` (the simulator's fast mode), does not load and decorate them all.
_SOURCES = {
    "ALGORITHMS": "allreduce",
    "AllreduceStats": "allreduce",
    "allreduce_inplace": "allreduce",
    "CNNShape": "cnn",
    "cnn_accuracy": "cnn",
    "cnn_init_params": "cnn",
    "cnn_loss_and_grad": "cnn",
    "Dataset": "data",
    "load_digits_split": "data",
    "synthetic_classification": "data",
    "easgd_center_update_async": "easgd",
    "easgd_center_update_sync": "easgd",
    "easgd_elastic_exchange": "easgd",
    "easgd_worker_update": "easgd",
    "measgd_worker_update": "easgd",
    "nesterov_lookahead": "easgd",
    "FusionPlan": "fusion",
    "fusion_groups": "fusion",
    "make_plan": "fusion",
    "pack_group": "fusion",
    "unpack_group": "fusion",
    "LostUpdates": "hogwild",
    "hogwild_easgd_center_update": "hogwild",
    "hogwild_lost_updates": "hogwild",
    "hogwild_sgd_update": "hogwild",
    "ModelShape": "model",
    "accuracy": "model",
    "forward": "model",
    "init_params": "model",
    "loss_and_grad": "model",
    "chunk_bounds": "reduction_steps",
    "doubling_step": "reduction_steps",
    "halving_step": "reduction_steps",
    "ring_allgather_step": "reduction_steps",
    "ring_reduce_scatter_step": "reduction_steps",
    "tree_broadcast_step": "reduction_steps",
    "tree_reduce_step": "reduction_steps",
    "momentum_sgd_update": "sgd",
    "sgd_update": "sgd",
    "dense_bytes": "sparse",
    "densify": "sparse",
    "indexed_slices_bytes": "sparse",
    "scatter_add": "sparse",
    "sparse_gather": "sparse",
}
#: The package's modules (``dlscale.kernels.data`` and the like, as attributes).
_MODULES = frozenset({*_SOURCES.values(), "jit", "_checks"})

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


def __getattr__(name: str) -> object:
    """A public name, or a module of the package, imported on first use."""
    module = _SOURCES.get(name)
    if module is None:
        if name not in _MODULES:
            raise AttributeError(f"module 'dlscale.kernels' has no attribute {name!r}")
        return importlib.import_module(f"dlscale.kernels.{name}")
    value = getattr(importlib.import_module(f"dlscale.kernels.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SOURCES})

