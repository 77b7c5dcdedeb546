"""The simulated network: collectives as routed message phases, timed with contention.

:class:`SimulatedNetwork` (in ``simulated``) implements
:class:`dlscale.perfmodel.network.analytical.NetworkModel` on a topology graph
(:mod:`dlscale.simulator.topology`): a collective's schedule (``schedules``: the
phases of :mod:`dlscale.perfmodel.network.schedules`) is routed phase by phase and timed in
one of two modes, ``flow`` (``flowmode``: max-min fair sharing of every link, run by
the compiled ``flowengine``, or in SimPy by ``flow`` when a trace is asked for; the
reference) or ``fast`` (``fastmode``: vectorized lock-step phases, for scale; held to
``flow``). Per-message-size factors (:mod:`dlscale.perfmodel.network.msgfactors`) apply in
both. The answer is a :class:`CollectiveResult`
(``result``) with the per-link loads and, on request, a Chrome trace (``trace``).

Examples
--------
>>> from dlscale.simulator.network import SimulatedNetwork
>>> from dlscale.simulator.topology import torus_graph
>>> SimulatedNetwork(torus_graph((4,))).simulate("allreduce", 1e6, 4, "ring").ranks
4
"""

from dlscale.simulator.network.result import CollectiveResult
from dlscale.simulator.network.schedules import ALGORITHMS, COLLECTIVES, Phase, build_schedule
from dlscale.simulator.network.simulated import MODES, SimulatedNetwork

__all__ = ["ALGORITHMS", "COLLECTIVES", "MODES", "CollectiveResult", "Phase",
           "SimulatedNetwork", "build_schedule"]
