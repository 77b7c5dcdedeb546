"""Collective algorithms as message schedules (defined in :mod:`dlscale.perfmodel.network.schedules`).

The schedules are shared by both fidelities: the closed-form network model counts
the flows of each step per topology level, the simulator routes them. This module
re-exports them for the simulator's users.

Examples
--------
>>> [p.label for p in build_schedule("allreduce", "ring", 4, 4e6)]
['reduce-scatter', 'allgather']
"""

from dlscale.perfmodel.network.schedules import (
    ALGORITHMS,
    COLLECTIVES,
    FLAT_ALLREDUCE,
    Phase,
    build_schedule,
)

__all__ = ["ALGORITHMS", "COLLECTIVES", "FLAT_ALLREDUCE", "Phase", "build_schedule"]
