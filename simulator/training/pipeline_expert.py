"""The expert-parallel all-to-alls of a mixture-of-experts layout, as events.

With ``ep > 1`` (:mod:`dlscale.perfmodel.training.expert`) every MoE layer of a pass
runs all-to-alls over its expert-parallel group: ``ep`` consecutive data-parallel
replicas of the same stage, each of the ``tp`` ranks with its peers of the other
replicas (ranks ``tp`` apart, as ``predict`` places the group). Per layer and
microbatch, the forward runs the dispatch and the combine, the backward their
gradients, and with full recomputation the forward's two again
(:func:`~dlscale.perfmodel.training.expert.alltoalls_per_layer`: 2 forward, 2 or 4
backward). Each all-to-all is MPICH's pairwise exchange
(:func:`~dlscale.perfmodel.network.schedules.build_schedule`, ``"alltoall"``,
``"pairwise"``; ``MPIR_Alltoall_intra_pairwise``), the algorithm ``predict`` prices:
``ep - 1`` steps, in each a replica's ``tp`` ranks send their
``1 / ep`` block of :func:`~dlscale.perfmodel.training.expert.dispatch_bytes` to one
peer replica's and receive one; a step ends when both have arrived (``MPI_Sendrecv``).

The messages are routed between the real ranks' devices:

- a message group whose ranks all stay inside one node moves on the node's links at
  the rate NCCL's collectives reach
  (:func:`~dlscale.perfmodel.training.parallel_time.nccl_node`, as ``predict`` and
  the simulated tensor-parallel collectives take them), beside the other expert
  groups' messages inside nodes (a flow model of its own: the tensor-parallel
  collectives and the pipelines' all-gathers are timed alone, and a message that
  leaves the node is not counted against it on its first hop, an assumption);
- a group that crosses nodes moves as flows on the one routed network
  (:class:`~dlscale.simulator.training.pipeline_net.GroupFlows`) beside the
  pipelines' hand-overs and the data-parallel rings: groups sharing links slow each
  other there.

A pass's compute is spread evenly over its MoE layers, and inside a layer evenly
before each of its all-to-alls (an assumption: the attention and router before the
dispatch, the experts before the combine, taken as equal); with no contention the
pass takes its compute plus its all-to-alls, as ``predict`` adds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import simpy

from dlscale.perfmodel.network.schedules import Phase, build_schedule
from dlscale.perfmodel.training.expert import alltoalls_per_layer, dispatch_bytes
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.simulator.training.pipeline_schedule import BACKWARD

__all__ = ["ExpertExchange"]


class ExpertExchange:
    """Every stage's MoE all-to-alls in one run (module docstring).

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout
    env : simpy.Environment
    ranks : callable
        ``ranks(stage, replica)``: the replica's ``tp`` ranks of that stage.
    send : callable
        ``send(src ranks, dst ranks, bytes, key)``: start a message group, return the
        event of its delivery (and fire the receiver's ``key``).
    event : callable
        ``event(key)``: the event a receiver waits on.

    Examples
    --------
    >>> import simpy
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> lay = ParallelLayout(dp=4, ep=4, global_batch=4)
    >>> x = ExpertExchange(get_llm("mixtral-8x7b"), lay, simpy.Environment(),
    ...                    lambda s, d: [d], None, None)
    >>> x.per_pass, len(x.schedule)          # forward, backward; ep - 1 steps
    ((2, 2), 3)
    >>> sorted(x.pairs(1, 4).tolist())[:3]   # one stage, four replicas: (src, dst)
    [[0, 1], [0, 2], [0, 3]]
    """

    def __init__(self, model: TransformerSpec, layout: ParallelLayout, env: simpy.Environment,
                 ranks: Callable[[int, int], list[int]], send: Any, event: Any) -> None:
        self.env, self.ep = env, layout.ep
        self.ranks, self.send, self.event = ranks, send, event
        self.layers = layout.stage_layers(model) // layout.virtual   # per chunk
        total = alltoalls_per_layer(layout)
        self.per_pass = (2, total - 2)
        self.nbytes = dispatch_bytes(model, layout)
        self.schedule: list[Phase] = (build_schedule("alltoall", "pairwise", self.ep,
                                                     self.nbytes) if self.ep > 1 else [])
        self._count = np.zeros((layout.pp, layout.dp), dtype=np.int64)
        self.sent = 0

    def pairs(self, p: int, d: int) -> np.ndarray:
        """Every ``(src rank, dst rank)`` the all-to-alls of ``p`` stages and ``d``
        replicas send between."""
        out: list[tuple[int, int]] = []
        for s in range(p):
            for r in range(d):
                g, me = divmod(r, self.ep)
                for ph in self.schedule:
                    for m in np.flatnonzero(ph.src == me):
                        peer = g * self.ep + int(ph.dst[m])
                        out.extend(zip(self.ranks(s, r), self.ranks(s, peer), strict=True))
        return np.asarray(out, dtype=np.int64).reshape(-1, 2)

    def run_pass(self, s: int, d: int, kind: int, compute_s: float) -> Iterator[Any]:
        """One pass of stage ``s`` on replica ``d``: its compute with its MoE layers'
        all-to-alls between (a plain timeout with ``ep = 1``)."""
        k = self.per_pass[1 if kind == BACKWARD else 0]
        if self.ep == 1 or k == 0 or self.layers == 0:
            yield self.env.timeout(compute_s)
            return
        piece = compute_s / (self.layers * k)
        for _ in range(self.layers * k):
            yield self.env.timeout(piece)
            yield from self.alltoall(s, d)

    def alltoall(self, s: int, d: int) -> Iterator[Any]:
        """One pairwise all-to-all of replica ``d``'s expert group at stage ``s``
        (every member runs the same ones in the same order: the n-th meets the n-th)."""
        g, me = divmod(d, self.ep)
        n = int(self._count[s, d])
        self._count[s, d] += 1
        mine = self.ranks(s, d)
        for step, ph in enumerate(self.schedule):
            waits = []
            for m in np.flatnonzero(ph.src == me):
                peer = g * self.ep + int(ph.dst[m])
                waits.append(self.send(mine, self.ranks(s, peer), float(ph.nbytes[m]),
                                       ("a2a", s, g, n, step, int(m))))
                self.sent += 1
            waits += [self.event(("a2a", s, g, n, step, int(m)))
                      for m in np.flatnonzero(ph.dst == me)]
            yield simpy.AllOf(self.env, waits)
