"""Time outside the training step: input pipeline, framework dispatch, evaluation, start-up.

Three mechanisms that real runs pay and the roofline step does not:

- **Input pipeline.** Real image data is decoded and augmented (JPEG decode, random
  resized crop, flip) on the host cores while the devices train, so one node's step
  cannot be shorter than the time its loader takes to prepare the node's samples:
  ``iteration >= samples per node / loader rate``. The loader rate is the user's
  measurement (``workload.loader_rate``) or ``host_cores x`` :data:`DECODE_RATE` for a
  GPU node whose host cores are described (``node.host_cores``); on CPU nodes (KNL,
  Xeon) the decode shares the training cores and no cited per-core figure exists for
  them, so only a measured ``loader_rate`` bounds them. The samples must also be read:
  where the node's storage read path is described (``node.storage_read_Bps``), the
  loader is no faster than it can feed
  (:mod:`dlscale.perfmodel.training.storage`; the row's limit ``"storage"``).
  ``workload.data = "synthetic"`` (benchmarks that feed generated tensors) has no
  loader bound.
- **Framework dispatch** (:mod:`dlscale.perfmodel.compute.dispatch`, where the
  roofline applies it). Each operator costs host time to dispatch (Python, the
  framework's dispatcher, the kernel launch). Frameworks issue kernels ahead of the
  device, so a layer cannot run faster than its operators can be dispatched:
  ``layer time >= operators x`` :data:`DISPATCH` (or ``workload.dispatch_per_op_s``).
  Operators per layer: 1 forward; backward 3 for a layer with parameters (data
  gradient, weight gradient, the per-variable update of the optimizer), else 1.
- **Evaluation and start-up**, for time-to-train figures only: every
  ``evals_per_epoch`` (:data:`EVALS_PER_EPOCH`) a forward pass over the validation set
  (:data:`VALIDATION_SAMPLES`), spread over the ranks, and the user's measured
  ``startup_s`` (no cited default was found: 0).

Each cited figure is a :class:`~dlscale.perfmodel.cited.CitedRange` (central, low,
high), registered for the ranges of every answer.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> c, w = get_cluster("dgx1-v100"), get_workload("resnet50")
>>> loader_rate_per_node(c, w)            # 40 host cores x 196 images/s
7840.0
>>> import dataclasses
>>> loader_rate_per_node(c, dataclasses.replace(w, data="synthetic"))
inf
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.compute.dispatch import DISPATCH, dispatch_s_per_op
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.storage import storage_rate_per_node
from dlscale.perfmodel.training.workload import Workload

if TYPE_CHECKING:  # training imports this module
    from dlscale.perfmodel.training.rank_layout import IterationTimes

__all__ = [
    "DECODED_DATASETS",
    "DECODE_RATE",
    "EVALS_PER_EPOCH",
    "VALIDATION_SAMPLES",
    "evaluation_s",
    "loader_bound",
    "loader_rate_per_node",
    "loader_s",
    "time_to_train_s",
    "with_loader",
]


#: Images/s one host core decodes and augments for ImageNet training. Both figures
#: are measured on the same host, an NVIDIA DGX-1 (2 x 20-core Xeon E5-2698 v4, 40
#: cores): tensorpack/benchmarks, ImageNet/README.md: "With tensorpack.dataflow (pure
#: python loader): Augmentations=[GoogleNetResize, Lighting, Flip]: reach 5.6k
#: image/s on a DGX1" -> 140/core (low); "With tf.data: Augmentations=[GoogleNetResize,
#: Flip]: 11k image/s on a DGX1" -> 275/core (high). GoogleNetResize is the random
#: resized crop. Central: their geometric mean, 196 (no source favours either loader).
DECODE_RATE = CitedRange(
    "decode_images_per_core_s", central=196.0, low=140.0, high=275.0,
    unit="images/s per host core",
    source="tensorpack/benchmarks ImageNet/README.md: 5.6k images/s (Python dataflow, "
           "GoogleNetResize+Lighting+Flip) and 11k images/s (tf.data, GoogleNetResize+Flip) "
           "on a DGX-1 (40 cores); central the geometric mean")

#: Evaluation passes per training epoch. Central and high: one after every epoch
#: (pytorch/examples imagenet/main.py calls validate() after each train epoch); low:
#: one every 4 epochs (the MLPerf ResNet-50 reference's ``epochs_between_evals``).
EVALS_PER_EPOCH = CitedRange(
    "evals_per_epoch", central=1.0, low=0.25, high=1.0, unit="passes per epoch",
    source="pytorch/examples imagenet/main.py (validate every epoch); MLPerf ResNet-50 "
           "reference (every 4 epochs)")
register(DECODE_RATE, EVALS_PER_EPOCH)

#: Data sets whose samples the host decodes from JPEG (ILSVRC-2012).
DECODED_DATASETS = ("imagenet-1k",)

#: Validation samples per data set: ILSVRC-2012 has 50,000 validation images
#: (Russakovsky et al., IJCV 2015, Table 2).
VALIDATION_SAMPLES: dict[str, int] = {"imagenet-1k": 50_000}


def loader_rate_per_node(cluster: Cluster, workload: Workload, end: str = "central") -> float:
    """Samples/s one node's input pipeline delivers (``inf``: no bound): the lesser of
    its host cores' decode rate and what its storage can feed
    (:func:`~dlscale.perfmodel.training.storage.storage_rate_per_node`).

    Parameters
    ----------
    cluster : Cluster
        Its node's host cores, device kind and storage read path.
    workload : Workload
        Its data (real or synthetic), data set and measured ``loader_rate`` (a measured
        rate is the whole pipeline's, storage included, and replaces both bounds).
    end : {"central", "low", "high"}
        Which end of :data:`DECODE_RATE` and of the file system's delivered share (a
        measured rate is the same at every end).
    """
    return loader_bound(cluster, workload, end)[0]


def loader_bound(cluster: Cluster, workload: Workload, end: str = "central"
                 ) -> tuple[float, str]:
    """:func:`loader_rate_per_node` and what sets it: ``"storage"`` where the node's
    storage is the lesser bound, else ``"input-pipeline"``.

    Parameters
    ----------
    cluster, workload, end
        As for :func:`loader_rate_per_node`.

    Examples
    --------
    >>> import dataclasses
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> c, w = get_cluster("dgx1-v100"), get_workload("resnet50")
    >>> loader_bound(c, w)                          # 40 cores decode 7,840 images/s
    (7840.0, 'input-pipeline')
    >>> slow = dataclasses.replace(c.node, storage_read_Bps=125e6)    # NFS over 1 GbE
    >>> rate, what = loader_bound(dataclasses.replace(c, node=slow), w)
    >>> round(rate), what
    (814, 'storage')
    """
    if workload.data == "synthetic":
        return math.inf, "input-pipeline"
    if workload.loader_rate > 0:
        return float(workload.loader_rate), "input-pipeline"
    node = cluster.node
    decode = math.inf
    if (workload.model.dataset in DECODED_DATASETS and node.host_cores > 0
            and node.device.kind == "gpu"):
        fit = cluster.runtime.fitted_value("input-pipeline") if end == "central" else None
        decode = node.host_cores * (at_end(DECODE_RATE, end) if fit is None else fit)
    store = storage_rate_per_node(cluster, workload, end)
    return (store, "storage") if store < decode else (decode, "input-pipeline")


def loader_s(cluster: Cluster, workload: Workload, samples_per_node: ArrayLike,
             end: str = "central") -> np.ndarray:
    """Seconds one node's loader takes to prepare one iteration's samples (0: no bound).

    Parameters
    ----------
    cluster, workload
        As for :func:`loader_rate_per_node`.
    samples_per_node : array_like
        Samples one node trains per iteration (over the node counts).
    end : {"central", "low", "high"}
    """
    rate = loader_rate_per_node(cluster, workload, end)
    s = np.asarray(samples_per_node, dtype=float)
    return np.zeros_like(s) if math.isinf(rate) else s / rate


def with_loader(cluster: Cluster, workload: Workload, samples_per_node: ArrayLike,
                times: IterationTimes, end: str = "central") -> IterationTimes:
    """``times`` (an :class:`~dlscale.perfmodel.training.rank_layout.IterationTimes`) with the
    iteration no shorter than the loader's (:func:`loader_s`); where the loader is the
    longer, the row's ``limit`` is ``"input-pipeline"``, or ``"storage"`` where the
    node's storage is what holds the loader back.
    """
    import dataclasses

    load = loader_s(cluster, workload, samples_per_node, end)
    if not np.any(load > times.iteration_s):
        return times
    it = np.maximum(times.iteration_s, load)
    limit = times.limit if times.limit is not None else np.full(it.shape, "", dtype=object)
    limit = np.where(load > times.iteration_s, loader_bound(cluster, workload, end)[1],
                     limit).astype(object)
    return dataclasses.replace(times, iteration_s=it,
                               samples_per_s=times.samples_per_s * times.iteration_s / it,
                               limit=limit)


def evaluation_s(workload: Workload, forward_s_per_sample: float, ranks: int,
                 end: str = "central") -> float:
    """Seconds of evaluation passes over a whole training run.

    Parameters
    ----------
    workload : Workload
        Its epochs, data set and ``evals_per_epoch``.
    forward_s_per_sample : float
        One rank's forward seconds per sample.
    ranks : int
        Ranks that share the validation set.
    end : {"central", "low", "high"}
    """
    val = VALIDATION_SAMPLES.get(workload.model.dataset, 0)
    per_epoch = (workload.evals_per_epoch if workload.evals_per_epoch >= 0
                 else at_end(EVALS_PER_EPOCH, end))
    return float(workload.epochs * per_epoch * val / max(ranks, 1) * forward_s_per_sample)


def time_to_train_s(cluster: Cluster, workload: Workload, row: dict[str, Any],
                    end: str = "central") -> float:
    """Seconds to train ``workload.epochs``: the steps, evaluation and start-up.

    Parameters
    ----------
    cluster : Cluster
        The machine (its device runs the evaluation's forward passes).
    workload : Workload
        Epochs, data set, evaluation and start-up fields.
    row : dict
        A prediction row: ``samples_per_s``, ``ranks``, ``global_batch``.
    end : {"central", "low", "high"}
    """
    rate = float(row.get("samples_per_s") or 0.0)
    if rate <= 0:
        return math.inf
    train = workload.epochs * workload.model.samples_per_epoch / rate
    ranks = int(row.get("ranks") or 1)
    batch = float(row.get("global_batch") or workload.batch_per_device) / ranks
    return (train + evaluation_s(workload, _forward_s(cluster, workload, batch, end), ranks, end)
            + workload.startup_s)


def _forward_s(cluster: Cluster, workload: Workload, batch: float, end: str) -> float:
    """One rank's forward seconds per sample at ``batch`` samples (kept for the very
    cluster and workload objects asked: a curve's rows ask the same few batches, each
    row its ends; issue 27 item 4: a roofline per row and end before)."""
    from dlscale.perfmodel.compute.roofline import layer_times

    key = (id(cluster), id(workload), batch, end)
    hit = _FORWARD.get(key)
    if hit is not None and hit[0] is cluster and hit[1] is workload:
        return hit[2]
    rpn = workload.ranks_per_node or cluster.node.devices_per_node
    share = cluster.node.devices_per_node / rpn
    fwd = float(np.sum(layer_times(workload.model, cluster.node.device, workload.precision,
                                   batch, share, dispatch_s=dispatch_s_per_op(workload, end)
                                   ).forward_s)) / batch
    _FORWARD[key] = (cluster, workload, fwd)       # the objects held: their ids stay theirs
    if len(_FORWARD) > 256:
        _FORWARD.popitem(last=False)
    return fwd


_FORWARD: OrderedDict[tuple[int, int, float, str], tuple[Cluster, Workload, float]] = \
    OrderedDict()


def workload_for_band(cluster: Cluster, workload: Workload, band: str) -> Workload:
    """The workload with this module's figures set to one end of the answer's band.

    ``"slow"``: dispatch at :data:`DISPATCH` high, decode at :data:`DECODE_RATE` low and
    the file system's share at its low (the loader's rate at that end, storage
    included, becomes the corner's ``loader_rate``), evaluation at
    :data:`EVALS_PER_EPOCH` high; ``"fast"``: the other ends;
    ``"central"``: the workload as given. A figure the user gave (a measured
    ``loader_rate``, ``dispatch_per_op_s``, ``evals_per_epoch``) is kept at every band.
    Predicting with the returned workload gives that end of the band for time outside
    the step (the ranges of every answer use it).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> c, w = get_cluster("dgx1-v100"), get_workload("resnet50")
    >>> slow = workload_for_band(c, w, "slow")
    >>> slow.loader_rate, slow.dispatch_per_op_s
    (5600.0, 2.5e-05)
    """
    import dataclasses

    if band not in ("slow", "central", "fast"):
        raise ValueError(f"band: must be slow, central or fast, got {band!r}")
    if band == "central":
        return workload
    slow = band == "slow"
    decode_end, other_end = ("low", "high") if slow else ("high", "low")
    changes: dict[str, Any] = {}
    rate = loader_rate_per_node(cluster, workload, decode_end)
    if workload.loader_rate == 0 and math.isfinite(rate):
        changes["loader_rate"] = rate
    if workload.dispatch_per_op_s < 0:
        changes["dispatch_per_op_s"] = at_end(DISPATCH, other_end)
    if workload.evals_per_epoch < 0:
        changes["evals_per_epoch"] = at_end(EVALS_PER_EPOCH, other_end)
    return dataclasses.replace(workload, **changes)
