"""A study's varied fields that no point of its grid reads are refused before it runs.

``dlscale predict`` refuses ``--tau`` for sync-sgd, ``--collective`` and ``--grouping``
where no algorithm allreduces gradients, and ``--ps-servers`` (``--ps-placement``,
``--ps-strategy``) off a parameter-server runtime (:mod:`dlscale.commands.predict`,
:mod:`dlscale.commands.runtime_args`). A study varies the same fields by their dotted
paths; where no point of the grid has the condition under which the model reads the
field, every value gives the same answer (a sweep of ties), so the study is refused
naming the field and what would read it.

Examples
--------
>>> sorted(READ_ONLY_WHERE)[:2]
['cluster.runtime.ps_placement', 'cluster.runtime.ps_servers']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import EASGD_FAMILY, Workload

__all__ = ["READ_ONLY_WHERE", "check_axes_read"]

_Test = Callable[[Cluster, Workload], bool]


def _easgd(c: Cluster, w: Workload) -> bool:
    return w.algorithm in EASGD_FAMILY


def _allreduce(c: Cluster, w: Workload) -> bool:
    return w.algorithm == "sync-sgd" and not c.runtime.parameter_server


def _ps(c: Cluster, w: Workload) -> bool:
    return c.runtime.parameter_server


#: Dotted path -> (whether a point reads it, what reads it).
READ_ONLY_WHERE: dict[str, tuple[_Test, str]] = {
    "workload.tau": (_easgd, "an algorithm of the EASGD family (its communication period)"),
    "workload.collective": (_allreduce, "sync-sgd's gradient allreduce (not a parameter "
                                        "server's exchange)"),
    "workload.grouping": (_allreduce, "sync-sgd's gradient allreduce (not a parameter "
                                      "server's exchange)"),
    **{f"cluster.runtime.{f}": (_ps, "a parameter-server runtime (runtime = "
                                     "\"parameter-server\")")
       for f in ("ps_servers", "ps_placement", "ps_strategy")},
}


def check_axes_read(study: Any, cluster: Cluster, workload: Workload,
                    materialize: Callable[..., tuple[Cluster, Workload]]) -> None:
    """Refuse the first varied field of :data:`READ_ONLY_WHERE` that no point reads.

    Parameters
    ----------
    study : dlscale.study.Study
        Its axes and grid.
    cluster, workload : Cluster, Workload
        The study's base objects.
    materialize : callable
        ``materialize(cluster, workload, params, cache)``: one point's objects
        (:func:`dlscale.sweep_points.materialize`).

    Raises
    ------
    ConfigError
        Naming the study file, the field and what would read it.
    """
    names = [n for n in study.param_names if n in READ_ONLY_WHERE]
    if not names:
        return
    unread = set(names)
    cache: dict[Any, Any] = {}
    algorithms: dict[str, None] = {}
    runtimes: dict[str, None] = {}
    for _, params in study.groups():
        c, w = materialize(cluster, workload, params, cache)
        algorithms[w.algorithm] = runtimes[c.runtime.name] = None
        unread -= {n for n in unread if READ_ONLY_WHERE[n][0](c, w)}
        if not unread:
            return
    name = next(n for n in names if n in unread)
    raise ConfigError(f"{study.path}: vary {name}: read only with "
                      f"{READ_ONLY_WHERE[name][1]}; no point of this study has one (its "
                      f"points run {', '.join(algorithms)} on runtime {', '.join(runtimes)}), "
                      f"so every value would give the same answer")
