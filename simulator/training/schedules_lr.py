"""Learning-rate schedules, and the collapsed ensemble of a cyclic schedule.

A schedule maps the iteration ``k`` (0-based; for asynchronous runs the mean number
of steps per worker) to a learning rate, given the base rate:

``constant``
    ``lr``.
``warmup:N``
    Linear ramp from ``lr / N`` to ``lr`` over the first ``N`` iterations, then
    ``lr`` (Goyal et al. 2017, gradual warm-up).
``step:EVERY:GAMMA``
    ``lr gamma^(k // EVERY)``.
``cyclic:PERIOD[:MIN_FRACTION]``
    Cosine annealing restarted every ``PERIOD`` iterations, from ``lr`` to
    ``lr min_fraction`` (Loshchilov and Hutter 2017; the cyclic schedule of
    snapshot ensembles, Huang et al. 2017).
``collapsed:PERIOD[:MIN_FRACTION]``
    The cyclic schedule, with a snapshot of the weights at the end of every cycle;
    the snapshots are averaged into one model (the Collapsed Ensemble of Codreanu et
    al. 2017). :meth:`Schedule.snapshot` says when to take one.

Examples
--------
>>> s = make_schedule("warmup:4")
>>> [s(k, 1.0) for k in range(5)]
[0.25, 0.5, 0.75, 1.0, 1.0]
>>> c = make_schedule("cyclic:4:0")
>>> [round(c(k, 1.0), 3) for k in range(5)]
[1.0, 0.854, 0.5, 0.146, 1.0]
>>> make_schedule("collapsed:4").snapshot(3), make_schedule("collapsed:4").snapshot(2)
(True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = ["SCHEDULES", "Schedule", "make_schedule"]

#: Schedule names accepted by :func:`make_schedule`.
SCHEDULES = ("constant", "warmup", "step", "cyclic", "collapsed")


@dataclass(frozen=True)
class Schedule:
    """A learning-rate schedule (see module docstring)."""

    kind: str = "constant"
    period: int = 0
    gamma: float = 1.0
    min_fraction: float = 0.0

    def __call__(self, k: int, lr: float) -> float:
        """Learning rate at iteration ``k`` for base rate ``lr``."""
        if self.kind == "warmup":
            return lr * min(1.0, (k + 1) / self.period)
        if self.kind == "step":
            return lr * self.gamma ** (k // self.period)
        if self.kind in ("cyclic", "collapsed"):
            x = (k % self.period) / self.period
            lo = lr * self.min_fraction
            return lo + 0.5 * (lr - lo) * (1 + math.cos(math.pi * x))
        return lr

    def snapshot(self, k: int) -> bool:
        """Whether iteration ``k`` ends a cycle whose weights join the collapsed ensemble."""
        return self.kind == "collapsed" and (k + 1) % self.period == 0


def _int(spec: str, value: str, what: str) -> int:
    try:
        v = int(value)
    except ValueError:
        v = 0
    if v < 1:
        raise ConfigError(f"lr schedule {spec!r}: {what} must be an integer >= 1, got {value!r}")
    return v


def make_schedule(spec: str | Schedule | None) -> Schedule:
    """A schedule from its spec string (see module docstring).

    Examples
    --------
    >>> make_schedule("step:10:0.1")(25, 1.0)
    0.010000000000000002
    >>> make_schedule("linear")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: lr schedule: unknown name 'linear'; valid: collapsed, constant, cyclic, step, warmup
    """
    if spec is None:
        return Schedule()
    if isinstance(spec, Schedule):
        return spec
    parts = str(spec).split(":")
    kind = parts[0]
    if kind not in SCHEDULES:
        raise unknown_name("lr schedule", kind, SCHEDULES)
    if kind == "constant":
        return Schedule()
    if len(parts) < 2:
        raise ConfigError(f"lr schedule {spec!r}: {kind} needs a period, e.g. '{kind}:10'")
    period = _int(spec, parts[1], "the period")
    if kind == "warmup":
        return Schedule(kind, period)
    if kind == "step":
        gamma = float(parts[2]) if len(parts) > 2 else 0.1
        if not 0 < gamma <= 1:
            raise ConfigError(f"lr schedule {spec!r}: gamma must be in (0, 1], got {gamma}")
        return Schedule(kind, period, gamma)
    lo = float(parts[2]) if len(parts) > 2 else 0.0
    if not 0 <= lo <= 1:
        raise ConfigError(f"lr schedule {spec!r}: min fraction must be in [0, 1], got {lo}")
    return Schedule(kind, period, 1.0, lo)
