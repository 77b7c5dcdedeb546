"""How many of a step's concurrent flows load each level of a topology.

A step of a collective is a set of flows ``src[i] -> dst[i]`` of ``weight[i]`` bytes
between ranks placed linearly (rank ``q`` on node ``q // r``, ``r`` ranks per node,
MPI's block mapping). This module counts, by arithmetic on the placement and on
each family's deterministic routing (no graph is built), the bytes every link of a
level carries in the step, and returns, per level, the most loaded link's bytes
over that link's share of the level's capacity. The step then takes
``max_level(load_level / bandwidth_level)``: the time its most loaded link needs,
as in a max-min fair network where every flow of the step shares its bottleneck.
The same routing rules drive the routed simulation
(:mod:`dlscale.simulator.topology.routing`), which imports the choice functions from here.

Levels, and the bandwidth a level's load is divided by:

``intra``
    a device's link to its node's NIC/switch (``node.intra_link``), where a node has
    more than one device; every flow of the device crosses it, on both ends.
``host``
    the node's injection link (``node.nic``, all rails together).
fat tree ``L1-L2``, ``L2-L3``, ...
    switch-to-switch links (``network.link``), per rail plane; up-ports chosen by
    destination (D-mod-k, Zahavi 2010), so all flows to one node share a path.
dragonfly ``local`` and ``global``
    router-to-router links of a group and between groups (parallel global links
    between the same two routers form one link of summed bandwidth); minimal
    routing (local, global, local hop), parallel links of a group pair chosen by a
    hash of the endpoints. Valiant routing is counted by its expectation: every
    inter-group flow crosses two global links, spread evenly over the links of its
    source and destination groups (the simulation draws the intermediate groups, so
    its most loaded link is above this mean: see the docs).
torus ``torus``
    dimension-order routing, the shorter way round each ring (ties: ``+``); a ring of
    two routers has its two links as one of double bandwidth.

Examples
--------
Two nodes of four ranks on one switch, every rank sending 1 byte to the next rank
(a ring step): each device link and each NIC carries one flow.

>>> from dlscale.perfmodel.machine.hardware import Crossbar
>>> q = np.arange(8)
>>> s = step_load(Crossbar(2), 2, 4, True, q, (q + 1) % 8, np.ones(8))
>>> s.load, s.hops, s.inter
({'intra': 1.0, 'host': 1.0}, 0, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    FatTree,
    Topology,
)
from dlscale.perfmodel.machine.topologies import FAMILIES
from dlscale.perfmodel.machine.topologies.dragonfly import dragonfly_parallel_link
from dlscale.perfmodel.machine.topologies.fattree import dmodk_choice, level_load_max, xgft_params

__all__ = ["CrossTraffic", "FlowLoads", "StepLoad", "dmodk_choice", "dragonfly_parallel_link", "level_bandwidths_Bps",
           "step_load", "xgft_params"]


@dataclass(frozen=True)
class FlowLoads:
    """What each flow of a step meets on its own path (flows in the step's order).

    Attributes
    ----------
    load : dict of str to ndarray
        Per level, per flow: the most loaded link of that level on the flow's path,
        in :class:`StepLoad`'s units (0 where the flow does not cross the level; the
        step's load of a level is the maximum over its flows).
    hops : ndarray of int
        Switch-to-switch hops of each flow.
    inter : ndarray of bool
        Whether each flow leaves its node.
    """

    load: dict[str, np.ndarray]
    hops: np.ndarray
    inter: np.ndarray


@dataclass(frozen=True)
class StepLoad:
    """Link loads of one step (see module docstring).

    Attributes
    ----------
    load : dict of str to float
        Per level, the most loaded link's bytes divided by its capacity relative to
        the level's bandwidth (so ``load / bandwidth_level`` is seconds).
    hops : int
        Most switch-to-switch hops of any flow of the step.
    inter : bool
        Whether any flow leaves its node (crosses the NIC).
    recv : float
        Most bytes any rank receives in the step.
    flows : FlowLoads or None
        Each flow's own loads, hops and whether it leaves its node (None when not
        asked for: :func:`step_load` with ``per_flow=False``).
    """

    load: dict[str, float]
    hops: int
    inter: bool
    recv: float
    flows: FlowLoads | None = None








@dataclass(frozen=True)
class CrossTraffic:
    """A topology whose flows also load their back routes (receiver to sender) with
    ``share`` of their bytes: SimGrid's cross-traffic
    (:attr:`dlscale.perfmodel.network.msgfactors.MessageFactors.cross_traffic`). The closed
    form's plans take it in place of the topology (their cache key), and
    :func:`step_load` prices each flow with the reverse flows on its links."""

    base: Topology
    share: float

    @property
    def family(self) -> str:
        """The base topology's family."""
        return self.base.family

    @property
    def max_nodes(self) -> int:
        """The base topology's nodes."""
        return self.base.max_nodes

    def without_speeds(self) -> CrossTraffic:
        """The base topology's shape with the same share: the plans' cache key."""
        return CrossTraffic(self.base.without_speeds(), self.share)

    def with_link_efficiency(self, efficiency: float) -> CrossTraffic:
        """The base topology's links scaled, the same share."""
        return CrossTraffic(self.base.with_link_efficiency(efficiency), self.share)

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """The base topology's levels."""
        return self.base.level_bandwidths(link_Bps)

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The base topology's bisection."""
        return self.base.bisection_Bps(injection_Bps, link_Bps)

    def shape(self) -> str:
        """The base topology's shape."""
        return self.base.shape()


def step_load(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
              src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
              per_flow: bool = True) -> StepLoad:
    """Per-level loads of one step's flows (see the module docstring).

    Parameters
    ----------
    topology : Topology
        The network's topology description.
    nodes : int
        Nodes in use (the first ``nodes`` of the machine).
    ranks_per_node : int
        Ranks per node, placed block-wise.
    device_links : bool
        Whether ranks sit behind a device link (nodes with several devices).
    src, dst : ndarray of int
        Ranks of each flow.
    weight : ndarray of float
        Bytes of each flow (any unit: the loads come out in the same unit).
    per_flow : bool
        Also each flow's own loads (:attr:`StepLoad.flows`); without them a fat tree's
        step costs the link sums only (the same step loads).

    Returns
    -------
    StepLoad
        The step's loads, and each flow's own (:class:`FlowLoads`); on a
        :class:`CrossTraffic` topology each flow's loads count the reverse flows'
        shares on its links (the reverse flows cost no time of their own).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    wt = np.asarray(weight, dtype=float)
    if not per_flow and isinstance(topology, (FatTree, Crossbar)):
        return _fat_tree_step(topology, nodes, ranks_per_node, device_links, src, dst, wt)
    F = len(src)
    if isinstance(topology, CrossTraffic):
        both = step_load(topology.base, nodes, ranks_per_node, device_links,
                         np.concatenate([src, dst]), np.concatenate([dst, src]),
                         np.concatenate([wt, topology.share * wt]))
        assert both.flows is not None
        own = {lvl: v[:F] for lvl, v in both.flows.load.items()}
        fl = FlowLoads(own, both.flows.hops[:F], both.flows.inter[:F])
        moving = src != dst
        got = float(np.bincount(dst[moving], weights=wt[moving]).max()) if moving.any() else 0.0
        return StepLoad({lvl: float(v.max()) for lvl, v in own.items() if v.max() > 0},
                        int(fl.hops.max(initial=0)), bool(fl.inter.any()), got, fl)
    flow_load: dict[str, np.ndarray] = {}
    flow_hops = np.zeros(F, dtype=np.int64)
    flow_inter = np.zeros(F, dtype=bool)
    moves = src != dst                      # a message to oneself moves nothing
    recv = float(np.bincount(dst[moves], weights=wt[moves]).max()) if moves.any() else 0.0
    if device_links and moves.any():
        out = np.bincount(src[moves], weights=wt[moves])
        inn = np.bincount(dst[moves], weights=wt[moves], minlength=len(out))
        out = np.pad(out, (0, len(inn) - len(out)))
        flow_load["intra"] = np.where(moves, np.maximum(out[src], inn[dst]), 0.0)
    hs, hd = src // ranks_per_node, dst // ranks_per_node
    inter = moves & (hs != hd)
    flow_inter[:] = inter
    if inter.any():
        idx = np.flatnonzero(inter)
        hs, hd, wi = hs[idx], hd[idx], wt[idx]
        ho = np.bincount(hs, weights=wi)
        hi = np.bincount(hd, weights=wi, minlength=len(ho))
        ho = np.pad(ho, (0, len(hi) - len(ho)))
        family = FAMILIES.get(topology.family)       # the family's own loads
        if family is None:
            raise TypeError(f"topology: unsupported {type(topology).__name__}")
        net, hops = family.loads(topology, nodes, hs, hd, wi)
        for level, per in {"host": np.maximum(ho[hs], hi[hd]), **net}.items():
            flow_load[level] = np.zeros(F)
            flow_load[level][idx] = per
        flow_hops[idx] = hops
    flows = FlowLoads(flow_load, flow_hops, flow_inter)
    load = {lvl: float(v.max()) for lvl, v in flow_load.items() if v.max() > 0}
    return StepLoad(load, int(flow_hops.max(initial=0)), bool(inter.any()), recv, flows)


def _fat_tree_step(topology: FatTree | Crossbar, nodes: int, ranks_per_node: int,
                   device_links: bool, src: np.ndarray, dst: np.ndarray,
                   wt: np.ndarray) -> StepLoad:
    """:func:`step_load` on a fat tree or crossbar without each flow's own loads: each
    level's most loaded link is the largest of its link sums (the same sums, in the
    same order, as the per-flow path; a maximum picks one of them)."""
    load: dict[str, float] = {}
    moves = src != dst
    if not moves.any():
        return StepLoad(load, 0, False, 0.0)
    sm, dm, wm = src[moves], dst[moves], wt[moves]
    inn = np.bincount(dm, weights=wm)       # what each rank receives: its link's in too
    recv = float(inn.max())
    if device_links:
        out = np.bincount(sm, weights=wm)
        load["intra"] = max(float(out.max()), recv)
    hs, hd = sm // ranks_per_node, dm // ranks_per_node
    inter = hs != hd
    if not inter.any():
        return StepLoad({k: v for k, v in load.items() if v > 0}, 0, False, recv)
    hs, hd, wi = hs[inter], hd[inter], wm[inter]
    load["host"] = max(float(np.bincount(hs, weights=wi).max()),
                       float(np.bincount(hd, weights=wi).max()))
    net, hops = ({}, 0) if isinstance(topology, Crossbar) else \
        level_load_max(topology, nodes, hs, hd, wi)
    load.update(net)
    return StepLoad({k: v for k, v in load.items() if v > 0}, hops, True, recv)


def level_bandwidths_Bps(cluster: Cluster) -> dict[str, float]:
    """Bandwidth per direction of one link of each level of ``cluster`` (see above).

    Parameters
    ----------
    cluster : Cluster
        The machine.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> bw = level_bandwidths_Bps(get_cluster("summit"))
    >>> bw["host"] / 1e9, bw["L1-L2"] / 1e9
    (23.0, 12.5)
    """
    return {"intra": cluster.node.intra_link.bandwidth_Bps,
            "host": cluster.node.nic.bandwidth_Bps,
            **cluster.network.topology.level_bandwidths(cluster.network.link.bandwidth_Bps)}
