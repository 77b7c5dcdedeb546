"""Descriptions of what is trained: layers, models, and a training workload.

A :class:`Model` is a tuple of :class:`Layer` s, each with its parameter count and its
forward FLOPs per sample; totals are computed, never typed in. A :class:`Workload`
adds how the model is trained: batch per device, precision, the distributed training
algorithm and collective, fusion and grouping of gradients, and EASGD's period tau.

Examples
--------
>>> fc = Layer("fc", "fc", params=1010, forward_flops=2000.0, activation_elements=10)
>>> m = Model("toy", (fc,), input_shape=(100,), dataset="none", samples_per_epoch=1000)
>>> m.params, m.forward_flops
(1010, 2000.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import PRECISIONS
from dlscale.perfmodel.network.registry import ALLREDUCE_CHOICES
from dlscale.perfmodel.units import BYTES_PER_ELEMENT

__all__ = ["ALGORITHMS", "COLLECTIVES", "EASGD_FAMILY", "GROUPINGS", "MOMENTUM_ALGORITHMS",
           "SGD_FAMILY", "Layer", "Model", "Workload"]

#: Training algorithms, by their shared short names.
ALGORITHMS = (
    "sync-sgd",
    "easgd",
    "sync-easgd",
    "async-easgd",
    "async-measgd",
    "hogwild-easgd",
    "async-sgd",
    "async-msgd",
    "hogwild-sgd",
)

#: The EASGD family: a center variable, the elastic moving rate and the period ``tau``.
EASGD_FAMILY = ("easgd", "sync-easgd", "async-easgd", "async-measgd", "hogwild-easgd")
#: Algorithms whose workers keep a momentum velocity (with ``momentum > 0``).
MOMENTUM_ALGORITHMS = ("sync-sgd", "async-msgd", "async-measgd")
#: The asynchronous SGD baselines: the master applies every update (a worker's step is
#: forward + backward) and they exchange every step (``tau = 1``).
SGD_FAMILY = ("async-sgd", "async-msgd", "hogwild-sgd")

#: Allreduce algorithms, by their shared short names. ``"auto"``: per message size and
#: rank count the algorithm the cluster's software stack selects among its own
#: (:mod:`dlscale.perfmodel.machine.runtime`: MPICH's thresholds, or the least predicted time
#: of the library's algorithms where it tunes by measurement, as NCCL does).
COLLECTIVES = ALLREDUCE_CHOICES

#: How gradient tensors are batched into messages: Horovod tensor fusion with rank-0
#: negotiation, or graph-aware groups with decentralized (bit-vector allreduce)
#: orchestration, as in Laanait et al. 2019.
GROUPINGS = ("fusion", "graph-aware")

#: Layer kinds the catalogs use.
LAYER_KINDS = ("conv", "fc", "embedding", "attention", "norm", "pool", "act", "other")

#: Efficiency classes a layer can be tagged with (see :mod:`dlscale.perfmodel.compute.efficiency`); ``""``
#: means the default of its kind.
LAYER_CLASSES = ("gemm", "conv3x3", "conv", "depthwise", "norm", "eltwise")


@dataclass(frozen=True)
class Layer:
    """One layer of a network.

    Parameters
    ----------
    name : str
        Unique within its model.
    kind : str
        One of ``conv, fc, embedding, attention, norm, pool, act, other``.
    params : int
        Trainable parameters (weights and biases).
    forward_flops : float
        FLOPs of the forward pass for one sample (a multiply-add counts 2).
    activation_elements : int
        Output elements per sample (kept for the backward pass; sets memory and the
        bytes term of the roofline).
    sparse_gradient : bool
        The gradient is an IndexedSlices (rows of an embedding table), which Horovod
        allgathers instead of allreducing unless densified.
    algo : str
        Efficiency class (:data:`LAYER_CLASSES`, see :mod:`dlscale.perfmodel.compute.efficiency`): which
        algorithm family runs it, e.g. ``"conv3x3"`` for a Winograd-eligible
        convolution; ``""`` takes the default of ``kind``.
    """

    name: str
    kind: str
    params: int
    forward_flops: float
    activation_elements: int = 0
    sparse_gradient: bool = False
    algo: str = ""

    def __post_init__(self) -> None:
        if self.algo and self.algo not in LAYER_CLASSES:
            raise ConfigError(
                f"layer {self.name!r}.algo: must be one of {', '.join(LAYER_CLASSES)} or empty, "
                f"got {self.algo!r}"
            )
        if self.kind not in LAYER_KINDS:
            raise ConfigError(
                f"layer {self.name!r}.kind: must be one of {', '.join(LAYER_KINDS)}, "
                f"got {self.kind!r}"
            )
        if self.params < 0 or self.forward_flops < 0 or self.activation_elements < 0:
            raise ConfigError(f"layer {self.name!r}: params, flops and activations must be >= 0")


@dataclass(frozen=True)
class Model:
    """A neural network as an ordered tuple of layers (input to output)."""

    name: str
    layers: tuple[Layer, ...]
    input_shape: tuple[int, ...]
    dataset: str
    samples_per_epoch: int
    source: str = ""
    #: For sparse (embedding) layers: rows touched per sample (tokens per sample).
    sparse_rows_per_sample: float = 0.0
    #: The user's own compute measurement on one device (:mod:`dlscale.perfmodel.compute.measured`); None: the
    #: roofline alone.
    measured: MeasuredCompute | None = None

    def __post_init__(self) -> None:
        if not self.layers:
            raise ConfigError(f"model {self.name!r}.layers: must not be empty")
        names = [layer.name for layer in self.layers]
        if len(set(names)) != len(names):
            raise ConfigError(f"model {self.name!r}.layers: layer names must be unique")
        if self.samples_per_epoch <= 0:
            raise ConfigError(
                f"model {self.name!r}.samples_per_epoch: must be > 0, got {self.samples_per_epoch}"
            )
        if self.measured is not None:
            named = [("layers", i, row[0]) for i, row in enumerate(self.measured.layers)]
            named += [("backward_ready", i, r[0]) for i, r in enumerate(self.measured.backward_ready)]
            for field_name, i, layer_name in named:
                if layer_name not in names:
                    from dlscale.perfmodel.errors import closest

                    raise ConfigError(
                        f"model {self.name!r}.measured.{field_name}[{i}]: no layer named "
                        f"{layer_name!r} in the model{closest(layer_name, names)}"
                    )

    @property
    def params(self) -> int:
        """Total trainable parameters."""
        return sum(layer.params for layer in self.layers)

    @property
    def forward_flops(self) -> float:
        """Forward FLOPs per sample."""
        return float(sum(layer.forward_flops for layer in self.layers))

    @property
    def activation_elements(self) -> int:
        """Activation elements kept per sample for the backward pass."""
        return sum(layer.activation_elements for layer in self.layers)

    @property
    def dense_params(self) -> int:
        """Parameters whose gradients are dense."""
        return sum(layer.params for layer in self.layers if not layer.sparse_gradient)

    @property
    def sparse_params(self) -> int:
        """Parameters of layers with IndexedSlices gradients."""
        return sum(layer.params for layer in self.layers if layer.sparse_gradient)


@dataclass(frozen=True)
class Workload:
    """A model and how it is trained.

    Parameters
    ----------
    batch_per_device : int
        Samples per device per iteration (weak scaling keeps it; strong scaling
        divides ``global_batch`` instead).
    precision : {"fp32", "fp16", "fp64"}
        ``fp16`` is mixed precision: tensor-core math and fp16 gradients.
    algorithm, collective : str
        Names from :data:`ALGORITHMS` and :data:`COLLECTIVES`.
    fusion_threshold_bytes : float
        Horovod fusion buffer (bucket) size; gradients are sent in buckets of at
        most this many bytes.
    grouping : {"fusion", "graph-aware"}
        Horovod tensor fusion with rank-0 negotiation, or graph-aware grouping
        with decentralized orchestration.
    tau : int
        EASGD communication period (local steps between exchanges).
    scaling : {"weak", "strong"}
        Weak: fixed batch per device. Strong: fixed ``global_batch``.
    global_batch : int
        For strong scaling, the fixed global batch.
    ranks_per_node : int
        MPI ranks per node; 0 means one per device.
    sparse_as_dense : bool
        Densify embedding gradients and allreduce them (Cavdar et al.) instead of
        allgathering IndexedSlices.
    overlap : bool
        Overlap gradient communication with the rest of the backward pass.
    momentum : float
        Momentum of the momentum variants (MSGD, MEASGD).
    """

    name: str
    model: Model
    batch_per_device: int
    precision: str = "fp32"
    algorithm: str = "sync-sgd"
    collective: str = "auto"
    fusion_threshold_bytes: float = 64 * 1024 * 1024
    grouping: str = "fusion"
    tau: int = 1
    scaling: str = "weak"
    global_batch: int = 0
    ranks_per_node: int = 0
    sparse_as_dense: bool = True
    overlap: bool = True
    momentum: float = 0.9
    epochs: float = 90.0
    source: str = ""
    #: Time outside the step (:mod:`dlscale.perfmodel.training.outside`): ``"real"`` data is
    #: decoded on the host (a JPEG data set on a GPU node with ``host_cores``), ``"synthetic"``
    #: data is not (the TensorFlow benchmarks' "Training synthetic data").
    data: str = "real"
    #: Samples/s one node's data loader delivers, measured by the user (0: from the
    #: node's host cores and the cited decode rate per core).
    loader_rate: float = 0.0
    #: Framework dispatch cost per operator in seconds (-1: the cited value).
    dispatch_per_op_s: float = -1.0
    #: Evaluation passes over the validation set per training epoch, for time to train
    #: (-1: the cited value; 0: none).
    evals_per_epoch: float = -1.0
    #: Start-up seconds (framework, communicator, data set open) counted in time to
    #: train; the user's measurement (no cited default: 0).
    startup_s: float = 0.0

    def __post_init__(self) -> None:
        owner = f"workload {self.name!r}"
        if not (isinstance(self.batch_per_device, int) and self.batch_per_device > 0):
            raise ConfigError(
                f"{owner}.batch_per_device: must be a positive integer, got {self.batch_per_device!r}"
            )
        checks = (
            ("precision", self.precision, PRECISIONS),
            ("algorithm", self.algorithm, ALGORITHMS),
            ("collective", self.collective, COLLECTIVES),
            ("grouping", self.grouping, GROUPINGS),
            ("scaling", self.scaling, ("weak", "strong")),
        )
        for fieldname, value, valid in checks:
            if value not in valid:
                from dlscale.perfmodel.errors import closest

                raise ConfigError(
                    f"{owner}.{fieldname}: unknown value {value!r}; valid: {', '.join(valid)}"
                    f"{closest(str(value), valid)}"
                )
        if not (self.fusion_threshold_bytes >= 0 and math.isfinite(self.fusion_threshold_bytes)):
            raise ConfigError(f"{owner}.fusion_threshold_bytes: must be a finite number >= 0, "
                              f"got {self.fusion_threshold_bytes!r}")
        if not (isinstance(self.tau, int) and self.tau >= 1):
            raise ConfigError(f"{owner}.tau: must be an integer >= 1, got {self.tau!r}")
        if self.scaling == "strong" and self.global_batch <= 0:
            raise ConfigError(f"{owner}.global_batch: strong scaling needs global_batch > 0")
        if self.ranks_per_node < 0:
            raise ConfigError(f"{owner}.ranks_per_node: must be >= 0, got {self.ranks_per_node!r}")
        if not (0 <= self.momentum < 1):
            raise ConfigError(f"{owner}.momentum: must be in [0, 1), got {self.momentum!r}")
        if not (self.epochs > 0 and math.isfinite(self.epochs)):
            raise ConfigError(f"{owner}.epochs: must be a finite number > 0, got {self.epochs!r}")
        self._check_outside(owner)

    def _check_outside(self, owner: str) -> None:
        """The fields of the time outside the step: one line naming a bad one."""
        if self.data not in ("real", "synthetic"):
            raise ConfigError(f"{owner}.data: unknown value {self.data!r}; valid: real, synthetic")
        for fieldname, value in (("loader_rate", self.loader_rate),
                                 ("startup_s", self.startup_s)):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{owner}.{fieldname}: must be a finite number >= 0, "
                                  f"got {value!r}")
        if self.data == "synthetic" and self.loader_rate > 0:
            raise ConfigError(f"{owner}.loader_rate: {self.loader_rate:g} samples/s bounds a "
                              f"real data set's input pipeline; with data 'synthetic' there is "
                              f"no loader (set data 'real', or loader_rate 0)")
        for fieldname, value in (("dispatch_per_op_s", self.dispatch_per_op_s),
                                 ("evals_per_epoch", self.evals_per_epoch)):
            if not (math.isfinite(value) and (value >= 0 or value == -1.0)):
                raise ConfigError(f"{owner}.{fieldname}: must be a finite number >= 0 (or -1 "
                                  f"for the cited value), got {value!r}")

    @property
    def bytes_per_element(self) -> int:
        """Bytes of one gradient element on the wire (fp16 for mixed precision)."""
        return BYTES_PER_ELEMENT[self.precision]

    @property
    def gradient_bytes(self) -> float:
        """Bytes of one full dense gradient (all layers)."""
        return float(self.model.params * self.bytes_per_element)

    def layer_gradient_bytes(self) -> dict[str, float]:
        """Bytes of each layer's gradient on the wire, by layer name (layers with
        parameters only)."""
        return {layer.name: float(layer.params * self.bytes_per_element)
                for layer in self.model.layers if layer.params > 0}
