"""The user's own compute measurements as inputs of the model.

A :class:`MeasuredCompute` attached to a model (``Model.measured``) replaces the
roofline's compute estimate by what was measured on one device, at one batch:

- a throughput (``samples_per_s`` at ``batch``: ``--measured-samples-per-s X@B``);
- forward and backward seconds per iteration (from a profiler trace, :mod:`dlscale.perfmodel.compute.traces`);
- per-layer forward and backward seconds (``layers``: ``(name, forward_s, backward_s)``).

:func:`dlscale.perfmodel.compute.roofline.layer_times` then scales the roofline's per-layer
times so that one device at the measured batch takes exactly the measured time, and
keeps the roofline's shape for everything else: how the time splits over layers
(which sets when each gradient bucket is ready, hence the overlap), how it changes
with the batch (strong scaling, ``--batch``) and with the share of a device a rank
has. Named layers take their own measured times; the layers a measurement does not
name are scaled by the ratio over the named ones.

Examples
--------
>>> m = parse_rate("1075@256")
>>> m.samples_per_s, m.batch
(1075.0, 256)
>>> round(m.iteration_s, 6)
0.23814
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlscale.perfmodel.errors import ConfigError

__all__ = ["MeasuredCompute", "parse_rate"]


@dataclass(frozen=True)
class MeasuredCompute:
    """Compute measured on one device at one batch (see the module docstring).

    Parameters
    ----------
    batch : int
        Samples per device of the measured iterations.
    samples_per_s : float
        Measured single-device throughput (0: not given); it includes the weight update.
    forward_s, backward_s : float
        Measured forward and backward seconds per iteration (0: not given).
    layers : tuple of (str, float, float)
        ``(layer name, forward_s, backward_s)`` per measured layer.
    source : str
        Where the figures come from (shown in the output header).
    backward_ready : tuple of (str, float)
        ``(layer name, seconds)``: when that layer's gradient was ready, after the
        first named one (a Horovod timeline's negotiation starts,
        :mod:`dlscale.perfmodel.compute.horovod`); sets how the backward time splits over the layers, hence
        when each gradient bucket can start its allreduce.
    beside_communication : bool
        The compute was measured in a multi-rank run with communication running beside
        it (a profiler trace holding NCCL kernels or collective ops): it already holds
        the slowdown of compute beside communication, which the model then does not
        charge again (:func:`dlscale.perfmodel.compute.overlap.compute_slowdown`).
    """

    batch: int
    samples_per_s: float = 0.0
    forward_s: float = 0.0
    backward_s: float = 0.0
    layers: tuple[tuple[str, float, float], ...] = ()
    source: str = ""
    backward_ready: tuple[tuple[str, float], ...] = ()
    beside_communication: bool = False

    def __post_init__(self) -> None:
        owner = "measured"
        if not (isinstance(self.batch, int) and not isinstance(self.batch, bool) and self.batch > 0):
            raise ConfigError(f"{owner}.batch: must be a positive integer, got {self.batch!r}")
        for name in ("samples_per_s", "forward_s", "backward_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"{owner}.{name}: must be a finite number >= 0, got {value!r}")
        if (self.forward_s > 0) != (self.backward_s > 0):
            raise ConfigError(f"{owner}: forward_s and backward_s must be given together, got "
                              f"forward_s={self.forward_s!r}, backward_s={self.backward_s!r}")
        seen = set()
        for i, row in enumerate(self.layers):
            ok = (len(row) == 3 and isinstance(row[0], str)
                  and all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
                          for v in row[1:]))
            if not ok or row[1] + row[2] <= 0:
                raise ConfigError(f"{owner}.layers[{i}]: must be [name, forward_s, backward_s] "
                                  f"with times >= 0 and not both 0, got {list(row)!r}")
            if row[0] in seen:
                raise ConfigError(f"{owner}.layers[{i}]: layer {row[0]!r} given twice")
            seen.add(row[0])
        for i, ready in enumerate(self.backward_ready):
            if not (len(ready) == 2 and isinstance(ready[0], str)
                    and isinstance(ready[1], (int, float)) and math.isfinite(ready[1])
                    and ready[1] >= 0):
                raise ConfigError(f"{owner}.backward_ready[{i}]: must be [layer name, seconds "
                                  f">= 0], got {list(ready)!r}")
        if not isinstance(self.beside_communication, bool):
            raise ConfigError(f"{owner}.beside_communication: must be true or false, got "
                              f"{self.beside_communication!r}")
        if len({r[0] for r in self.backward_ready}) != len(self.backward_ready):
            raise ConfigError(f"{owner}.backward_ready: a layer is given twice")
        if not (self.samples_per_s > 0 or self.forward_s > 0 or self.layers
                or len(self.backward_ready) >= 2):
            raise ConfigError(f"{owner}: give samples_per_s, forward_s and backward_s, layers, "
                              f"or backward_ready for two layers or more "
                              f"(batch {self.batch} alone measures nothing)")

    @property
    def holds_times(self) -> bool:
        """Whether compute times were measured (a throughput, forward and backward
        seconds, or per-layer times); False where only the backward pass's readiness
        was, whose totals stay the model's."""
        return self.samples_per_s > 0 or self.forward_s > 0 or bool(self.layers)

    @property
    def iteration_s(self) -> float:
        """Seconds of one measured iteration, where a throughput was given (else 0)."""
        return self.batch / self.samples_per_s if self.samples_per_s > 0 else 0.0

    def describe(self) -> str:
        """One line for output headers."""
        if self.forward_s > 0:
            what = f"forward {self.forward_s * 1e3:.4g} ms + backward {self.backward_s * 1e3:.4g} ms"
            if self.layers:
                what += f" ({len(self.layers)} layers named)"
        elif self.layers:
            what = f"{len(self.layers)} layers' times"
        elif self.samples_per_s > 0:
            what = f"{self.samples_per_s:g} samples/s"
        else:
            what = "the roofline's compute"
        ready = (f"; backward split by when {len(self.backward_ready)} layers' gradients were "
                 f"ready" if self.backward_ready else "")
        src = f" ({self.source})" if self.source else ""
        beside = ("; measured beside communication (a multi-rank run: its slowdown is "
                  "not charged again)" if self.beside_communication else "")
        return f"measured compute: {what} at batch {self.batch}{ready}{beside}{src}"


def parse_rate(text: str, where: str = "--measured-samples-per-s") -> MeasuredCompute:
    """``"X@B"``: ``X`` samples/s measured on one device at ``B`` samples per device.

    Examples
    --------
    >>> parse_rate("219")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --measured-samples-per-s: expected RATE@BATCH (e.g. 219@64: 219 samples/s on one device at batch 64), got '219'
    >>> parse_rate("-5@64")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --measured-samples-per-s: the rate must be a finite number > 0, got '-5'
    """
    rate_text, at, batch_text = str(text).partition("@")
    if not at:
        raise ConfigError(f"{where}: expected RATE@BATCH (e.g. 219@64: 219 samples/s on one "
                          f"device at batch 64), got {text!r}")
    try:
        rate = float(rate_text)
    except ValueError:
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0):
        raise ConfigError(f"{where}: the rate must be a finite number > 0, got {rate_text!r}")
    try:
        batch = int(batch_text)
    except ValueError:
        batch = 0
    if batch <= 0:
        raise ConfigError(f"{where}: the batch must be a positive integer, got {batch_text!r}")
    return MeasuredCompute(batch=batch, samples_per_s=rate, source=f"{where} {text}")
