"""Variables of a model and their placement on parameter-server tasks, as TensorFlow 1.x.

A catalog layer carries its trainable parameters as one count (weights and biases);
TensorFlow creates one variable per tensor, and places each variable, not each layer:

- a convolution or fully connected layer is a kernel and, where it has one, a bias
  (created in that order, as ``tf.layers.Conv2D.build`` / ``Dense.build`` do). The
  geometry helpers of :mod:`.catalog.layers` write ``forward_flops = (2 k + b) A`` with
  ``k`` weights per output element, ``b`` 1 with a bias and ``A`` the output elements,
  so the parity of ``forward_flops / A`` says whether there is a bias, and the bias has
  ``params / (k + 1)`` elements (one per output channel); a layer that does not follow
  that rule is one variable;
- a batch normalisation is its scale and its shift, ``params / 2`` each (``gamma``
  before ``beta``, as ``BatchNormalization.build`` creates them); its moving mean and
  variance are not trainable, not pushed, and are left out;
- any other layer with parameters is one variable.

Placement (``tensorflow/python/training/device_setter.py``, TensorFlow 1.x):

- ``"round-robin"``: ``replica_device_setter``'s default ``_RoundRobinStrategy``, "the
  next ps task index for placement in round-robin order", variable by variable in
  creation order, whatever its size; TensorFlow's benchmark script uses it for
  ``--variable_update=distributed_replicated`` (``tf_cnn_benchmarks/benchmark_cnn.py``:
  ``replica_device_setter(worker_device=..., cluster=...)``);
- ``"greedy"``: ``tf.contrib.training.GreedyLoadBalancingStrategy(num_tasks,
  byte_size_load_fn)``, "the least-loaded ps task for op placement" (``np.argmin`` of
  the loads so far: the lowest index among equals), the load being the variable's
  bytes; the benchmark script's ``--variable_update=parameter_server``
  (``variable_mgr.py``, ``VariableMgrDistributedFetchFromPS.get_devices``).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_model
>>> v = model_variables(get_model("resnet50"))
>>> len(v.elements), int(v.elements.sum()) == get_model("resnet50").params
(161, True)
>>> place(np.array([4.0, 1.0, 1.0, 1.0]), 2, "round-robin").tolist()
[0, 1, 0, 1]
>>> place(np.array([4.0, 1.0, 1.0, 1.0]), 2, "greedy").tolist()
[0, 1, 1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.runtime import PS_STRATEGIES
from dlscale.perfmodel.training.workload import Model

__all__ = ["Variables", "model_variables", "place"]


@dataclass(frozen=True)
class Variables:
    """Trainable variables in creation order (arrays of one entry per variable).

    Attributes
    ----------
    names : tuple of str
        ``layer/kernel``, ``layer/bias``, ``layer/gamma``, ``layer/beta`` or the layer's
        name.
    elements : ndarray of int64
        Elements of each variable.
    layer : ndarray of int64
        Index (model order) of the layer the variable belongs to: its gradient is
        ready when the backward pass has finished that layer.
    """

    names: tuple[str, ...]
    elements: np.ndarray
    layer: np.ndarray


def _split(kind: str, params: int, flops: float, act: int) -> tuple[tuple[str, int], ...]:
    """The variables of one layer: (suffix, elements) in creation order."""
    if kind == "norm" and params % 2 == 0:
        return (("gamma", params // 2), ("beta", params // 2))
    if kind in ("conv", "fc") and act > 0:
        q = flops / act
        whole = round(q)
        if q == whole and whole % 2 == 1:
            per = (whole + 1) // 2          # weights per output element + bias
            if params % per == 0:
                bias = params // per
                return (("kernel", params - bias), ("bias", bias))
        elif q == whole:
            return (("kernel", params),)
    return (("", params),)


def model_variables(model: Model) -> Variables:
    """The model's trainable variables (see the module docstring).

    Parameters
    ----------
    model : Model
        Its layers.

    Returns
    -------
    Variables
        Sparse layers included: the caller decides how they travel.
    """
    names: list[str] = []
    elements: list[int] = []
    layers: list[int] = []
    for i, layer in enumerate(model.layers):
        if layer.params <= 0:
            continue
        for suffix, n in _split(layer.kind, int(layer.params), float(layer.forward_flops),
                                int(layer.activation_elements)):
            names.append(f"{layer.name}/{suffix}" if suffix else layer.name)
            elements.append(n)
            layers.append(i)
    return Variables(tuple(names), np.array(elements, dtype=np.int64),
                     np.array(layers, dtype=np.int64))


def place(sizes_bytes: np.ndarray, servers: int, strategy: str) -> np.ndarray:
    """Server task of each variable (in creation order), as TensorFlow places them.

    Parameters
    ----------
    sizes_bytes : ndarray
        Bytes of each variable, in creation order.
    servers : int
        Parameter-server tasks (>= 1).
    strategy : {"round-robin", "greedy"}
        See the module docstring.

    Returns
    -------
    ndarray of int64
        The task index of each variable.
    """
    if strategy not in PS_STRATEGIES:
        raise ConfigError(f"ps_strategy: unknown value {strategy!r}; valid: "
                          f"{', '.join(PS_STRATEGIES)}")
    if servers < 1:
        raise ConfigError(f"ps_servers: must be >= 1 here, got {servers!r}")
    n = len(sizes_bytes)
    if strategy == "round-robin":
        return np.arange(n, dtype=np.int64) % servers
    loads = np.zeros(servers)
    out = np.empty(n, dtype=np.int64)
    for j, size in enumerate(np.asarray(sizes_bytes, dtype=float).tolist()):
        task = int(np.argmin(loads))     # the lowest index among the least loaded
        loads[task] += size
        out[j] = task
    return out
