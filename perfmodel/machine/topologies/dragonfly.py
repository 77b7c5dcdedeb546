"""The dragonfly (Kim et al., ISCA 2008), as Cray Aries builds it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from dlscale.perfmodel.errors import ConfigError

__all__ = ["Dragonfly", "dragonfly_parallel_link"]


@dataclass(frozen=True)
class Dragonfly:
    """A dragonfly (Kim et al. 2008), as Cray Aries builds it.

    ``global_bandwidth_Bps`` and ``local_bandwidth_Bps`` are per link; ``None`` takes
    the network's link bandwidth.
    """

    groups: int
    routers_per_group: int
    terminals_per_router: int
    global_links_per_router: int
    max_nodes: int
    local_bandwidth_Bps: float | None = None
    global_bandwidth_Bps: float | None = None
    routing: str = "minimal"
    family: str = field(default="dragonfly", init=False)

    def __post_init__(self) -> None:
        for name in ("groups", "routers_per_group", "terminals_per_router",
                     "global_links_per_router", "max_nodes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"dragonfly.{name}: must be > 0, got {getattr(self, name)!r}")
        if self.routing not in ("minimal", "valiant"):
            raise ConfigError(
                f"dragonfly.routing: must be 'minimal' or 'valiant', got {self.routing!r}"
            )

    def with_link_efficiency(self, efficiency: float) -> Dragonfly:
        """The same dragonfly with its own local and global link bandwidths scaled."""
        local, glob = self.local_bandwidth_Bps, self.global_bandwidth_Bps
        return dataclasses.replace(
            self, local_bandwidth_Bps=None if local is None else local * efficiency,
            global_bandwidth_Bps=None if glob is None else glob * efficiency)

    def without_speeds(self) -> Dragonfly:
        """The same dragonfly without its own link speeds (loads do not depend on them)."""
        return dataclasses.replace(self, local_bandwidth_Bps=None, global_bandwidth_Bps=None)

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """Local (in-group) and global links; ``None`` takes the network's link."""
        return {"local": self.local_bandwidth_Bps or link_Bps,
                "global": self.global_bandwidth_Bps or link_Bps}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The global links between two halves of the groups, at most the injection."""
        g = self.groups
        if g < 2:
            return float(injection_Bps)
        per_pair = self.routers_per_group * self.global_links_per_router // (g - 1)
        crossing = (g // 2) * (g - g // 2) * per_pair
        return float(min(injection_Bps, crossing * (self.global_bandwidth_Bps or link_Bps)))

    def shape(self) -> str:
        """``", G groups x A routers, H global links per router"``."""
        return (f", {self.groups} groups x {self.routers_per_group} routers, "
                f"{self.global_links_per_router} global links per router")


def dragonfly_parallel_link(src_host: np.ndarray, dst_host: np.ndarray,
                            links_per_pair: int) -> np.ndarray:
    """Which of the parallel global links of a group pair a flow takes (a hash).

    Parameters
    ----------
    src_host, dst_host : ndarray of int
        Hosts of each flow.
    links_per_pair : int
        Parallel global links between two groups.

    Examples
    --------
    >>> dragonfly_parallel_link(np.array([0, 1]), np.array([5, 5]), 4).tolist()
    [1, 0]
    """
    return np.asarray((src_host * 7919 + dst_host) % max(links_per_pair, 1))
