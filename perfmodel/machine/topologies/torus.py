"""The n-dimensional torus with one node per router (BlueGene, Tofu style)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dlscale.perfmodel.errors import ConfigError

__all__ = ["Torus"]


@dataclass(frozen=True)
class Torus:
    """An n-dimensional torus with one node per router (BlueGene, Tofu style)."""

    dims: tuple[int, ...]
    family: str = field(default="torus", init=False)

    def __post_init__(self) -> None:
        if not self.dims or any(d <= 0 for d in self.dims):
            raise ConfigError(f"torus.dims: must be positive integers, got {self.dims!r}")

    @property
    def max_nodes(self) -> int:
        return math.prod(self.dims)

    def with_link_efficiency(self, efficiency: float) -> Torus:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> Torus:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """One level, ``torus``: the router-to-router links run the network's link."""
        return {"torus": link_Bps}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The links cut across the largest dimension (two per ring with wrap-around)."""
        k = max(self.dims)
        rings = math.prod(self.dims) // k
        return float(min(injection_Bps, (2 if k > 2 else 1) * rings * link_Bps))

    def shape(self) -> str:
        """``", 4x4x8"``."""
        return ", " + "x".join(str(d) for d in self.dims)
