"""The fat tree (folded Clos, an XGFT): its description and D-mod-k routing rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import MAX_RAILS, check_count

__all__ = ["FatTree", "dmodk_choice", "xgft_params"]


@dataclass(frozen=True)
class FatTree:
    """A multi-level fat tree (folded Clos).

    Parameters
    ----------
    levels : int
        Switch levels (1 = a single switch).
    nodes_per_leaf : int
        Nodes attached to one leaf (level-1) switch.
    down_up : tuple of (int, int)
        Per level from the leaves up, ``(down ports, up ports)`` of a switch; the
        ratio is the oversubscription (taper) of that level. Stampede2's leaf is
        ``(28, 20)``. Length ``levels - 1``.
    max_nodes : int
        Nodes the installed tree holds.
    rails : int
        Independent planes (Summit's dual-rail EDR is 2).
    """

    levels: int
    nodes_per_leaf: int
    down_up: tuple[tuple[int, int], ...]
    max_nodes: int
    rails: int = 1
    family: str = field(default="fat-tree", init=False)

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ConfigError(f"fat-tree.levels: must be >= 1, got {self.levels!r}")
        if len(self.down_up) != self.levels - 1:
            raise ConfigError(
                f"fat-tree.down_up: needs {self.levels - 1} (down, up) pairs for "
                f"{self.levels} levels, got {len(self.down_up)}"
            )
        for i, (down, up) in enumerate(self.down_up):
            if down <= 0 or up <= 0:
                raise ConfigError(f"fat-tree.down_up[{i}]: ports must be > 0, got {(down, up)}")
        if self.nodes_per_leaf <= 0 or self.max_nodes <= 0 or self.rails <= 0:
            raise ConfigError("fat-tree: nodes_per_leaf, max_nodes and rails must be > 0")
        check_count(self.rails, MAX_RAILS, "fat-tree.rails",
                    "network planes per node; a DGX H100 has 8 compute NICs")

    def oversubscription(self, level: int) -> float:
        """Taper ``down/up`` of switch ``level`` (1 = leaf); 1.0 is non-blocking."""
        down, up = self.down_up[level - 1]
        return down / up

    def with_link_efficiency(self, efficiency: float) -> FatTree:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> FatTree:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """``{"L1-L2": link_Bps, ...}``: every switch-to-switch level runs the network's link."""
        return {f"L{i - 1}-L{i}": link_Bps for i in range(2, self.levels + 1)}

    def tapers(self) -> list[tuple[int, int]]:
        """``(down, up)`` links of each switch level from the leaves up (the taper is
        their ratio).

        Examples
        --------
        >>> FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2).tapers()
        [(18, 18), (18, 18)]
        """
        m = [self.nodes_per_leaf] + [self.down_up[i][0] for i in range(1, self.levels - 1)]
        return [(m[i], self.down_up[i][1]) for i in range(self.levels - 1)]

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The least, over the levels, of the capacity from one half up (XGFT cut)."""
        n = self.max_nodes
        m, w = xgft_params(self, n)
        cuts = [injection_Bps] + [n / 2 * math.prod(w[:i + 1]) / math.prod(m[:i]) * link_Bps
                                  for i in range(1, len(m))]
        return float(min(cuts))

    def shape(self) -> str:
        """``", 2 levels[, 2 rails]; taper 28:20 at L1"``."""
        shape = f", {self.levels} levels" + (f", {self.rails} rails" if self.rails > 1 else "")
        levels = self.tapers()
        if levels:
            shape += "; taper " + ", ".join(f"{d}:{u} at L{i}"
                                            for i, (d, u) in enumerate(levels, 1))
        return shape


def xgft_params(tree: FatTree, nodes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XGFT ``(m, w)`` of the first ``nodes`` nodes of a :class:`FatTree`.

    ``m[i]``: children of a level-``i+1`` switch; ``w[i]``: parents of a level-``i``
    element (``w[0]``: rails). Levels above the lowest subtree that holds all nodes
    are dropped.

    Parameters
    ----------
    tree : FatTree
        The fat tree.
    nodes : int
        Nodes in use.

    Examples
    --------
    >>> xgft_params(FatTree(2, 28, ((28, 20),), 6000), 100)
    ((28, 4), (1, 20))
    >>> xgft_params(FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2), 4608)
    ((18, 18, 15), (2, 18, 18))
    """
    m = [tree.nodes_per_leaf] + [tree.down_up[i][0] for i in range(1, tree.levels - 1)]
    w = [tree.rails] + [tree.down_up[i][1] for i in range(tree.levels - 1)]
    h = tree.levels
    while h > 1 and nodes <= math.prod(m[: h - 1]):
        h -= 1
    m = m[: h - 1]
    m.append(-(-nodes // math.prod(m)) if m else nodes)
    return tuple(m), tuple(w[:h])


def dmodk_choice(dst: np.ndarray, w: tuple[int, ...], level: int) -> np.ndarray:
    """Index, among the parents, of the level-``level`` switch a flow to ``dst`` climbs to.

    D-mod-k (Zahavi 2010): ``B_1`` is the rail, ``B_i = B_{i-1} + ((dst // prod(w[1:i-1]))
    mod w[i-1]) prod(w[:i-1])``; this returns ``B_level`` for rail 0.

    Parameters
    ----------
    dst : ndarray of int
        Destination host of each flow.
    w : tuple of int
        XGFT parents per level (:func:`xgft_params`).
    level : int
        The level climbed to.

    Examples
    --------
    >>> dmodk_choice(np.arange(6), (1, 3, 2), 3).tolist()
    [0, 1, 2, 3, 4, 5]
    """
    b = np.zeros_like(dst)
    wp, W = 1, w[0]
    for i in range(2, level + 1):
        b = b + ((dst // wp) % w[i - 1]) * W
        wp *= w[i - 1]
        W *= w[i - 1]
    return b
