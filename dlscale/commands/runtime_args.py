"""``--runtime`` (the software stack) and the summary of the allreduce chosen per row,
shared by ``predict``, ``simulate``, ``sweep`` and ``plan``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.catalog.runtimes import apply_runtime as catalog_apply_runtime
from dlscale.perfmodel.hardware import Cluster
from dlscale.perfmodel.runtime import Runtime

__all__ = ["add_runtime_arg", "allreduce_summary", "apply_runtime", "collective_label"]


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
