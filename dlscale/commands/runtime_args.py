"""``--runtime`` (the software stack) and the summary of the allreduce chosen per row,
shared by ``predict``, ``simulate``, ``sweep`` and ``plan``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.catalog.runtimes import apply_runtime as catalog_apply_runtime
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import Runtime

__all__ = ["PS_FLAGS", "add_ps_args", "add_runtime_arg", "allreduce_summary", "apply_ps_args",
           "apply_runtime", "collective_label", "ps_label"]

#: The parameter-server settings a command line can give: dest -> runtime field.
PS_FLAGS = {"ps_servers": "ps_servers", "ps_placement": "ps_placement",
            "ps_strategy": "ps_strategy"}


def add_runtime_arg(parser: argparse.ArgumentParser) -> None:
    """``--runtime NAME``: the cluster's software stack (default: the one it ran)."""
    parser.add_argument("--runtime", default=None, metavar="NAME",
                        help="software stack: " + ", ".join(RUNTIMES) + " (default: the "
                             "cluster's own; `dlscale catalog runtimes` lists their terms)")


def apply_runtime(cluster: Cluster, name: str | None) -> Cluster:
    """``cluster`` running the stack ``name`` (unchanged for ``None``).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> apply_runtime(get_cluster("summit"), "gloo").runtime.name
    'gloo'
    >>> apply_runtime(get_cluster("summit"), "glo")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --runtime: unknown name 'glo'; valid: ... (did you mean 'gloo'?)
    """
    return catalog_apply_runtime(cluster, name, "--runtime")


def add_ps_args(parser: argparse.ArgumentParser) -> None:
    """``--ps-servers``, ``--ps-placement``, ``--ps-strategy``: a parameter-server
    runtime's servers (:mod:`dlscale.perfmodel.training.ps`)."""
    from dlscale.perfmodel.machine.runtime import PS_PLACEMENTS, PS_STRATEGIES

    g = parser.add_argument_group("parameter servers (with --runtime parameter-server)")
    g.add_argument("--ps-servers", type=int, default=None, metavar="N",
                   help="parameter-server tasks (0: one per worker node, the default)")
    g.add_argument("--ps-placement", choices=PS_PLACEMENTS, default=None,
                   help="servers on the worker nodes (colocated, default) or on nodes of "
                        "their own")
    g.add_argument("--ps-strategy", choices=PS_STRATEGIES, default=None,
                   help="variables to servers: round-robin (TensorFlow's default) or "
                        "greedy by size (GreedyLoadBalancingStrategy)")


def apply_ps_args(cluster: Cluster, args: argparse.Namespace) -> Cluster:
    """``cluster`` with the parameter-server flags of ``args`` set on its runtime; a
    flag given to a runtime that exchanges by allreduce, or a bad value, is one line.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = apply_runtime(get_cluster("summit"), "parameter-server")
    >>> apply_ps_args(c, argparse.Namespace(ps_servers=4)).runtime.ps_servers
    4
    >>> apply_ps_args(get_cluster("summit"), argparse.Namespace(ps_servers=4))
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --ps-servers: sets the servers of a parameter-server runtime; runtime 'horovod-nccl' exchanges gradients by allreduce (add --runtime parameter-server)
    """
    import dataclasses

    from dlscale.perfmodel.errors import ConfigError

    given = {field: getattr(args, dest) for dest, field in PS_FLAGS.items()
             if getattr(args, dest, None) is not None}
    if not given:
        return cluster
    rt = cluster.runtime
    if not rt.parameter_server:
        flag = "--" + next(iter(given)).replace("_", "-")
        raise ConfigError(f"{flag}: sets the servers of a parameter-server runtime; runtime "
                          f"{rt.name!r} exchanges gradients by allreduce (add --runtime "
                          f"parameter-server)")
    try:
        new = dataclasses.replace(rt, **given)
    except ConfigError as exc:
        field = str(exc).split(":", 1)[0].rsplit(".", 1)[-1]
        raise ConfigError(f"--{field.replace('_', '-')}: "
                          f"{str(exc).split(': ', 1)[1]}") from None
    return dataclasses.replace(cluster, runtime=new)


def ps_label(rt: Runtime) -> str:
    """How a parameter-server runtime exchanges gradients, for header lines.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_runtime
    >>> ps_label(get_runtime("parameter-server"))
    'parameter servers (one per worker node, colocated, round-robin)'
    """
    servers = rt.ps_servers or "one per worker node"
    return f"parameter servers ({servers}, {rt.ps_placement}, {rt.ps_strategy})"


def collective_label(collective: str, cluster: Cluster) -> str:
    """``"auto"`` named as whose choice it is: ``"auto (horovod-nccl's choice)"``; an
    algorithm the stack does not have is priced all the same, and said to be a what-if.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> collective_label("auto", get_cluster("summit"))
    "auto (horovod-nccl's choice)"
    >>> collective_label("ring", get_cluster("summit"))
    'ring'
    >>> collective_label("binomial-tree", get_cluster("summit"))
    "binomial-tree (not one of horovod-nccl's algorithms: a what-if)"
    """
    rt = cluster.runtime
    if rt.parameter_server:   # no allreduce: say how the servers hold the variables
        return ps_label(rt)
    if collective == "auto":
        return f"auto ({rt.name}'s choice)"
    if collective not in rt.algorithms:
        return f"{collective} (not one of {rt.name}'s algorithms: a what-if)"
    return collective


def allreduce_summary(rows: Iterable[Mapping[str, Any]]) -> str:
    """The allreduce chosen per row, as node ranges: ``"ring 2-256, double-binary-tree
    512-4608 nodes"`` (rows without one, e.g. one rank, are left out).

    Examples
    --------
    >>> allreduce_summary([{"nodes": 1, "allreduce": ""}, {"nodes": 2, "allreduce": "ring"},
    ...                    {"nodes": 4, "allreduce": "ring"}, {"nodes": 8, "allreduce": "tree"}])
    'ring 2-4, tree 8 nodes'
    """
    spans: list[list[Any]] = []
    for r in rows:
        a = r.get("allreduce") or ""
        if not a:
            continue
        if spans and spans[-1][0] == a:
            spans[-1][2] = r["nodes"]
        else:
            spans.append([a, r["nodes"], r["nodes"]])
    if not spans:
        return ""
    parts = [f"{a} {lo}" if lo == hi else f"{a} {lo}-{hi}" for a, lo, hi in spans]
    return ", ".join(parts) + " nodes"
