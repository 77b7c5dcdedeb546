"""Cited values with a range: what a mechanism's figure is, how far sources spread it.

A :class:`CitedRange` is one constant of a mechanism (a decode rate per core, a
dispatch cost per operator, a workspace size): its central value, the low and high
values the sources give, its unit and where it comes from. Every mechanism that
uses one registers it here (:func:`register`), so that whoever builds a low/high
band over an answer reads every range from one place (:func:`cited_ranges`)
instead of finding the constants module by module.

``low <= central <= high`` always; ``low`` and ``high`` are the values of the
figure itself, not of the answer (a lower decode rate gives a *slower* step).

Examples
--------
>>> r = CitedRange("x_per_s", 2.0, 1.0, 4.0, "1/s", "a source, table 3")
>>> r.central, r.low, r.high
(2.0, 1.0, 4.0)
>>> CitedRange("bad", 5.0, 1.0, 4.0, "1/s", "s")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: bad: needs low <= central <= high, all finite and >= 0; got low 1, central 5, high 4
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlscale.perfmodel.errors import ConfigError

__all__ = ["ENDS", "CitedRange", "at_end", "cited_ranges", "register"]

#: Which end of a cited figure a function uses.
ENDS = ("central", "low", "high")


@dataclass(frozen=True)
class CitedRange:
    """A cited figure: central value and the low/high values its sources give.

    Attributes
    ----------
    name : str
        Identifier, unique over the registry (``"decode_images_per_core_s"``).
    central, low, high : float
        The value the model uses, and the lowest and highest the sources give.
    unit : str
        Unit of the three values.
    source : str
        Where each value comes from (document, table or page).
    """

    name: str
    central: float
    low: float
    high: float
    unit: str
    source: str

    def __post_init__(self) -> None:
        vals = (self.low, self.central, self.high)
        if not (all(math.isfinite(v) and v >= 0 for v in vals)
                and self.low <= self.central <= self.high):
            raise ConfigError(
                f"{self.name}: needs low <= central <= high, all finite and >= 0; got "
                f"low {self.low:g}, central {self.central:g}, high {self.high:g}")


_REGISTRY: dict[str, CitedRange] = {}


def register(*ranges: CitedRange) -> None:
    """Add ranges to the registry (the same object again is a no-op).

    Raises
    ------
    ConfigError
        A different range under a name already registered.
    """
    for r in ranges:
        old = _REGISTRY.get(r.name)
        if old is not None and old != r:
            raise ConfigError(f"cited range {r.name!r}: registered twice with different values")
        _REGISTRY[r.name] = r


def at_end(cited: CitedRange, end: str) -> float:
    """The value of ``cited`` at ``end`` (one of :data:`ENDS`).

    Examples
    --------
    >>> at_end(CitedRange("x", 2.0, 1.0, 4.0, "s", "src"), "high")
    4.0
    """
    if end not in ENDS:
        raise ValueError(f"end: must be one of {', '.join(ENDS)}, got {end!r}")
    return float(getattr(cited, end))


def cited_ranges() -> dict[str, CitedRange]:
    """Every range registered so far, by name (each mechanism's module registers its
    own when it is imported; this module imports none of them).

    Examples
    --------
    >>> import dlscale.perfmodel.compute.memory, dlscale.perfmodel.training.outside
    >>> from dlscale.perfmodel import cited   # the package's registry, however this file is loaded
    >>> sorted(cited.cited_ranges())[:2]
    ['cudnn_workspace_bytes', 'decode_images_per_core_s']
    """
    return dict(sorted(_REGISTRY.items()))
