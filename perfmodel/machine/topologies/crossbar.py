"""A single non-blocking switch (a small cluster or one server's box)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlscale.perfmodel.errors import ConfigError

__all__ = ["Crossbar"]


@dataclass(frozen=True)
class Crossbar:
    """A single non-blocking switch (a small cluster or one server's box)."""

    max_nodes: int
    family: str = field(default="crossbar", init=False)

    def __post_init__(self) -> None:
        if self.max_nodes <= 0:
            raise ConfigError(f"crossbar.max_nodes: must be > 0, got {self.max_nodes!r}")

    def with_link_efficiency(self, efficiency: float) -> Crossbar:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> Crossbar:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """No switch-to-switch level: a flow crosses its two host links only."""
        return {}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """Half the nodes' injection: the switch does not block."""
        return float(injection_Bps)

    def shape(self) -> str:
        """Nothing beyond the family's name."""
        return ""
