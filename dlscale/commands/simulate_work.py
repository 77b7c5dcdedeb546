"""What a ``simulate`` command would cost, refused from its sizes before any run starts."""

from __future__ import annotations

from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload

__all__ = ["check_work"]


def check_work(cluster: Cluster, workload: Workload, nodes: int, iterations: int, runs: int,
               where: str, cosim: dict[str, Any] | None) -> None:
    """Refuse, from the sizes alone, a command whose runs would not fit in memory or time.

    ``runs`` simulations of at most ``nodes`` nodes and ``iterations`` steps each
    (:func:`dlscale.perfmodel.limits.check_rank_steps`); with ``cosim`` (its options),
    every worker's copy of the model too (:func:`~dlscale.perfmodel.limits.check_cosim`).
    """
    from dlscale.perfmodel.limits import MAX_HIDDEN, check_cosim, check_count, check_rank_steps
    from dlscale.perfmodel.training.rank_layout import layout

    ranks = int(layout(cluster, workload, nodes).ranks[0])
    check_rank_steps(ranks, iterations, runs, where)
    if cosim is not None:
        from dlscale.kernels.data import digits_missing

        if (why := digits_missing()) is not None:
            raise ConfigError(f"--cosim: {why}")
        hidden = int(cosim.get("hidden", 32))
        check_count(hidden, MAX_HIDDEN, "--hidden", "the co-simulation's model is the small "
                    "one on the 64 features of the 8x8 digits")
        check_cosim(ranks, 75 * hidden + 10, "--hidden")   # 64-H-10 MLP: weights and biases
