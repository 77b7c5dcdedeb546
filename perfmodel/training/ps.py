"""Synchronous SGD through parameter servers (TensorFlow 1.x), in closed form.

The cluster's runtime says ``exchange = "parameter-server"`` (:mod:`.runtime`, the
``parameter-server`` preset of :mod:`.catalog.runtimes`). One worker task per node
(TensorFlow's benchmark script: one ``worker`` task per machine driving its GPUs);
``S`` server tasks (``ps_servers``, 0: one per worker node), each on worker node
``s mod N`` (``"colocated"``) or on a node of its own after the ``N`` workers
(``"separate"``). The model's trainable variables (:func:`.psplace.model_variables`)
are placed on the servers by TensorFlow's rule (:func:`.psplace.place`). Per step,
as ``tf_cnn_benchmarks``' ``parameter_server`` and ``distributed_replicated`` modes
run it (``variable_mgr.py``: each worker reads every variable once, into its host
memory, and sends one gradient per variable, its devices' gradients summed on the
host; variables on a worker's own node do not cross the network):

1. **pull**: every worker reads every variable before its forward pass. Server node
   ``n`` sends ``(workers not on n) x V_n`` bytes (``V_n``: the bytes of the
   variables it holds); a worker receives every variable that is not on its node. On
   GPUs with a host link the variables then go host -> device (each device over its
   own host link, in parallel);
2. forward and backward pass; a variable's gradient is **pushed** when the backward
   pass has finished its layer (``overlap=False``: when the whole backward pass is
   done), in that order: device -> host (the host link), then over the network to
   the variable's server;
3. the update once the last gradient is in (its compute time, as the allreduce
   runtimes charge it), then the next step's pull.

Links: each node's network link in each direction (the NIC, as the runtime's
transport delivers it) and, on GPU nodes with one, each device's host link; the
fabric beyond the nodes' own links is taken as non-blocking (a tapered core is not
charged here). A link
serves what crosses it one byte at a time in order of arrival (a work-conserving
FIFO link), so a link's last byte leaves at ``max_k (a_k + sum_{j >= k} w_j)`` over
its messages in arrival order (``a``: when a message reaches it, one path latency
after it was sent; ``w``: its bytes / the link's bandwidth). The pull ends when the
last of its links does, the push when the last of its links does, and the most
loaded link bounds each: a server that holds more bytes than the others (one large
variable, e.g. VGG-16's first fully connected layer, 103 M parameters, 74% of the
model) is the hot spot. Each link is bounded on its own (messages reach a later link
at the time they leave the host, not later), and every worker starts its forward
pass when the slowest pull ends; a flow-level simulation of the same links
(:mod:`dlscale.simulator.training.ps`) delays messages behind others on earlier
links (slower) and starts each worker when its own reads are in (faster where the
servers' loads differ): ``tests/test_ps.py`` holds the two within 5%.

Not priced: the servers' summing and applying of gradients (their CPU and memory),
gRPC's own per-message overhead beyond the transport's, the host's summing of its
devices' gradients, non-trainable variables (batch-norm moving statistics).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.perfmodel.catalog.runtimes import apply_runtime
>>> from dlscale.perfmodel.training.iteration import iteration_times
>>> c = apply_runtime(get_cluster("summit"), "parameter-server")
>>> t = iteration_times(c, get_workload("resnet50"), [1, 4])
>>> bool(t.iteration_s[1] > t.iteration_s[0])
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import Runtime, with_transport
from dlscale.perfmodel.network.contention import hockney_params
from dlscale.perfmodel.training.psplace import model_variables, place
from dlscale.perfmodel.training.rank_layout import IterationTimes, Layout
from dlscale.perfmodel.training.workload import Workload

__all__ = ["PsPlan", "check_ps", "exchange_name", "fifo_end", "host_departures", "ps_limit",
           "ps_plan", "ps_summary", "ps_sync_times", "pull_end_s", "push_end_s", "ready_times", "servers_for"]


@dataclass(frozen=True)
class PsPlan:
    """Where every variable lives and what each link carries, for ``workers`` nodes.

    Attributes
    ----------
    workers : int
        Worker nodes (``N``).
    server_node : ndarray of int64
        Node of each server task (``0..N-1`` co-located, ``N..`` separate).
    var_bytes, var_layer, var_node : ndarray
        Per variable (creation order): bytes, layer index, node of its server.
    nic_Bps, nic_latency_s : float
        A node's network link in each direction (bandwidth as the transport delivers
        it) and a message's latency between two nodes.
    host_Bps, host_latency_s : float
        A device's host link; ``host_Bps`` is ``inf`` where nothing is staged (no
        GPU, or no host link).
    """

    workers: int
    server_node: np.ndarray
    var_bytes: np.ndarray
    var_layer: np.ndarray
    var_node: np.ndarray
    nic_Bps: float
    nic_latency_s: float
    host_Bps: float
    host_latency_s: float

    @property
    def nodes(self) -> int:
        """Nodes the job uses (workers and separate servers)."""
        return int(max(self.workers, int(self.server_node.max()) + 1))

    def remote_readers(self) -> np.ndarray:
        """Per variable: workers that are not on its server's node."""
        return self.workers - (self.var_node < self.workers).astype(np.int64)


def servers_for(cluster: Cluster, nodes: int) -> int:
    """Server tasks for ``nodes`` worker nodes (``ps_servers``; 0: one per node)."""
    s = cluster.runtime.ps_servers
    return int(nodes) if s == 0 else int(s)


def check_ps(cluster: Cluster, workload: Workload, nodes: np.ndarray) -> None:
    """Refuse, with one line, what the parameter-server runtime cannot run or would ignore.

    Parameters
    ----------
    cluster : Cluster
        The machine, its runtime a parameter server.
    workload : Workload
        What is trained.
    nodes : ndarray
        Worker node counts.
    """
    rt = cluster.runtime
    owner = f"runtime {rt.name!r}"
    if workload.algorithm != "sync-sgd":
        raise ConfigError(f"{owner}: synchronous parameter servers train with sync-sgd; "
                          f"algorithm {workload.algorithm!r} has its own master (use another "
                          f"runtime)")
    if workload.collective != "auto":
        raise ConfigError(f"collective: {workload.collective!r} is an allreduce; runtime "
                          f"{rt.name!r} exchanges gradients through parameter servers, "
                          f"not an allreduce (leave collective 'auto')")
    if workload.grouping != "fusion":
        raise ConfigError(f"grouping: {workload.grouping!r} coordinates allreduce buffers; "
                          f"runtime {rt.name!r} pushes each variable to its server (leave "
                          f"grouping 'fusion')")
    if workload.model.sparse_params > 0 and not workload.sparse_as_dense:
        raise ConfigError(f"sparse_as_dense: runtime {rt.name!r} pushes dense variables; "
                          f"model {workload.model.name!r} has sparse gradients: set "
                          f"sparse_as_dense = true")
    if rt.ps_placement == "separate":
        top = int(np.max(nodes))
        need = top + servers_for(cluster, top)
        if need > cluster.max_nodes:
            raise ConfigError(
                f"{owner}.ps_servers: {servers_for(cluster, top)} servers on nodes of their "
                f"own beside {top} worker nodes need {need} nodes; cluster {cluster.name!r} "
                f"holds {cluster.max_nodes} (fewer servers, fewer nodes, or ps_placement "
                f"'colocated')")


def ps_plan(cluster: Cluster, workload: Workload, nodes: int) -> PsPlan:
    """The placement and the link figures of ``nodes`` worker nodes.

    Parameters
    ----------
    cluster : Cluster
        The machine (its inter-node links as the runtime's transport delivers them).
    workload : Workload
        Its model and precision.
    nodes : int
        Worker nodes.

    Returns
    -------
    PsPlan
        See :class:`PsPlan`.
    """
    cluster = with_transport(cluster)
    rt = cluster.runtime
    n = int(nodes)
    s = servers_for(cluster, n)
    var = model_variables(workload.model)
    nbytes = var.elements.astype(float) * workload.bytes_per_element
    task = place(nbytes, s, rt.ps_strategy)
    server_node = (np.arange(s) % n if rt.ps_placement == "colocated"
                   else n + np.arange(s)).astype(np.int64)
    par = hockney_params(cluster)
    node = cluster.node
    staged = node.device.kind == "gpu" and node.host_link is not None
    # the devices under one host uplink stage at once: each gets its share
    sharing = min(node.devices_per_host_link, node.devices_per_node)
    uplink = node.host_link.bandwidth_Bps if staged and node.host_link else np.inf
    host_bw = uplink / sharing
    host_lat = node.host_link.latency_s if staged and node.host_link else 0.0
    return PsPlan(n, server_node, nbytes, var.layer, server_node[task],
                  1.0 / par["inter_beta_s_per_B"], par["nic_alpha_s"], float(host_bw),
                  float(host_lat))


def fifo_end(arrival_s: np.ndarray, work_s: np.ndarray) -> float:
    """When a work-conserving FIFO link has served messages arriving at ``arrival_s``
    with ``work_s`` seconds each: ``max_k (a_k + sum_{j >= k} w_j)`` in arrival order
    (0 without work).

    Examples
    --------
    >>> fifo_end(np.array([0.0, 0.5, 3.0]), np.array([1.0, 1.0, 0.5]))
    3.5
    """
    keep = np.asarray(work_s) > 0
    if not keep.any():
        return 0.0
    a, w = np.asarray(arrival_s, dtype=float)[keep], np.asarray(work_s, dtype=float)[keep]
    order = np.argsort(a, kind="stable")
    a, w = a[order], w[order]
    rest = np.cumsum(w[::-1])[::-1]
    return float(np.max(a + rest))


def _staged(plan: PsPlan) -> bool:
    return bool(np.isfinite(plan.host_Bps))


def pull_end_s(plan: PsPlan) -> tuple[float, str]:
    """Seconds from the step's start until every worker holds every variable on its
    devices, and the link that bounds it.

    The network links' bound (``latency + most loaded link's bytes / bandwidth``)
    followed by the last variable's copy to the devices, or the host link's own bound
    (every byte of the model, after one network latency where anything crosses the
    network), whichever is later.

    Parameters
    ----------
    plan : PsPlan
        The placement (:func:`ps_plan`).

    Returns
    -------
    seconds : float
    limit : str
        ``"server-out"``, ``"worker-in"``, ``"host"`` or ``""`` (nothing moves).
    """
    W, n_nodes = plan.workers, plan.nodes
    out = np.bincount(plan.var_node, weights=plan.var_bytes * plan.remote_readers(),
                      minlength=n_nodes)
    total = float(plan.var_bytes.sum())
    own = np.bincount(plan.var_node, weights=plan.var_bytes, minlength=n_nodes)[:W]
    into = total - own                              # what each worker receives
    out_max, in_max = float(out.max(initial=0.0)), float(into.max(initial=0.0))
    net = max(out_max, in_max) / plan.nic_Bps
    net_s = plan.nic_latency_s + net if net > 0 else 0.0
    if not _staged(plan):
        return net_s, ("" if net == 0 else "server-out" if out_max >= in_max else "worker-in")
    last = plan.host_latency_s + float(plan.var_bytes.max()) / plan.host_Bps
    host_s = (plan.nic_latency_s if net > 0 else 0.0) + plan.host_latency_s \
        + total / plan.host_Bps
    via_net = net_s + last if net > 0 else 0.0
    if host_s >= via_net:
        return host_s, "host"
    return via_net, "server-out" if out_max >= in_max else "worker-in"


def _push_order(plan: PsPlan, ready_s: np.ndarray) -> np.ndarray:
    """Variables in the order their gradients leave: by ready time, the last created
    first among equals (the backward pass runs the layer's ops in reverse)."""
    j = np.arange(len(plan.var_bytes))[::-1]
    return j[np.argsort(ready_s[j], kind="stable")]


def host_departures(plan: PsPlan, ready_s: np.ndarray) -> np.ndarray:
    """When each gradient has left the device for the host (a FIFO host link; the
    ready time itself where nothing is staged).

    Parameters
    ----------
    plan : PsPlan
        The placement.
    ready_s : ndarray
        Per variable: when its gradient is ready (from the step's start).
    """
    if not _staged(plan):
        return np.asarray(ready_s, dtype=float)
    order = _push_order(plan, ready_s)
    out = np.empty(len(order))
    t = 0.0
    for j in order.tolist():
        t = max(float(ready_s[j]) + plan.host_latency_s, t) + float(plan.var_bytes[j]) \
            / plan.host_Bps
        out[j] = t
    return out


def push_end_s(plan: PsPlan, ready_s: np.ndarray) -> tuple[float, str]:
    """When the last gradient has reached its server, and the link that bounds it.

    Every worker's gradients are ready at the same times (the slowest rank's, as the
    synchronous step waits for it). Server node ``n``'s inbound link receives each of
    its variables from every worker not on ``n``; a worker's outbound link sends every
    variable whose server is on another node.

    Parameters
    ----------
    plan : PsPlan
        The placement.
    ready_s : ndarray
        Per variable: when its gradient is ready (from the step's start).

    Returns
    -------
    seconds : float
    limit : str
        ``"server-in"``, ``"worker-out"``, ``"host"`` or ``""``.
    """
    left = host_departures(plan, ready_s)
    host_end = float(left.max(initial=0.0)) if _staged(plan) else 0.0
    arrive = left + plan.nic_latency_s
    beta = 1.0 / plan.nic_Bps
    best, limit = host_end, ("host" if host_end > 0 else "")
    for n in np.unique(plan.var_node).tolist():
        mine = plan.var_node == n
        end = fifo_end(arrive[mine], plan.var_bytes[mine] * plan.remote_readers()[mine] * beta)
        if end > best:
            best, limit = end, "server-in"
    # the workers' outbound links: a worker that holds servers sends less, so the
    # worker with the fewest bytes at home bounds them
    own = np.bincount(plan.var_node, weights=plan.var_bytes, minlength=plan.nodes)
    for w in sorted({int(np.argmin(own[:plan.workers]))}):
        away = plan.var_node != w
        end = fifo_end(arrive[away], plan.var_bytes[away] * beta)
        if end > best:
            best, limit = end, "worker-out"
    return best, limit


def ready_times(workload: Workload, plan: PsPlan, fwd_s: float, bwd_cum_s: np.ndarray,
                bwd_s: float, runtime: Runtime | None = None) -> np.ndarray:
    """Per variable: when its gradient is ready, from the end of the pull (the forward
    pass plus the backward pass down to its layer; with ``overlap=False`` the whole
    backward pass; a ``runtime`` with a fitted overlap delays it,
    :meth:`~dlscale.perfmodel.machine.runtime.Runtime.achieved_ready`)."""
    if workload.overlap:
        ready = np.asarray(bwd_cum_s, dtype=float)[plan.var_layer]
        if runtime is not None:
            ready = runtime.achieved_ready(ready, bwd_s)
        out: np.ndarray = fwd_s + ready
        return out
    return np.full(len(plan.var_bytes), fwd_s + bwd_s)


def ps_sync_times(cluster: Cluster, workload: Workload, lay: Layout) -> IterationTimes:
    """Iteration times of synchronous SGD through parameter servers (module docstring).

    ``iteration = pull + forward + max(backward, last push) + update``, the compute
    terms times the slowest rank's expected factor (the cluster's noise), as
    :func:`.training_sync.sync_sgd_times` charges them; communication = the pull plus
    the push with every gradient ready at once (the links' busy time, hidden or not);
    exposed = iteration - the slowest rank's compute.

    Parameters
    ----------
    cluster : Cluster
        The machine; its runtime a parameter server.
    workload : Workload
        What is trained and how.
    lay : Layout
        Ranks and batches per node count.

    Returns
    -------
    IterationTimes
        Arrays over the node counts.
    """
    from dlscale.perfmodel.training.sync import _compute_phases

    check_ps(cluster, workload, lay.nodes)
    cluster = with_transport(cluster)
    fwd, bwd, upd, bwd_cum, compute, slow, backward = _compute_phases(cluster, workload, lay)
    shape = lay.nodes.shape
    fwd, bwd, upd = (np.broadcast_to(x, shape).astype(float) for x in (fwd, bwd, upd))
    bwd_cum = np.broadcast_to(bwd_cum, (*shape, bwd_cum.shape[-1]))
    iteration, comm = np.empty(shape), np.empty(shape)
    for k, n in enumerate(lay.nodes.astype(int).tolist()):
        plan = ps_plan(cluster, workload, n)
        pull, _ = pull_end_s(plan)
        ready = ready_times(workload, plan, 0.0, bwd_cum[k], float(bwd[k]), cluster.runtime)
        push, _ = push_end_s(plan, ready)
        iteration[k] = pull + float(fwd[k]) + max(float(bwd[k]), push) + float(upd[k])
        comm[k] = pull + push_end_s(plan, np.zeros_like(ready))[0]
    compute = np.broadcast_to(compute, shape).astype(float)
    return IterationTimes(iteration, compute, comm, iteration - compute * slow,
                          lay.global_batch / iteration,
                          backward_s=np.broadcast_to(backward, shape).astype(float))


def ps_limit(cluster: Cluster, workload: Workload, nodes: int) -> str:
    """The link that bounds the longer of the pull and the push (its links' busy time)
    at ``nodes`` worker nodes (``server-in``, ``server-out``, ``worker-in``,
    ``worker-out``, ``host``; ``""`` where nothing moves).

    Parameters
    ----------
    cluster : Cluster
        The machine; its runtime a parameter server.
    workload : Workload
        What is trained.
    nodes : int
        Worker nodes.
    """
    plan = ps_plan(cluster, workload, int(nodes))
    pull, pull_lim = pull_end_s(plan)
    busy, push_lim = push_end_s(plan, np.zeros(len(plan.var_bytes)))
    return pull_lim if pull >= busy else push_lim


def exchange_name(ranks: int) -> str:
    """The ``allreduce`` column of a parameter-server run on ``ranks`` ranks:
    ``"parameter-server"``, or ``""`` on one rank, which exchanges nothing (several
    ranks on one node push and pull through its servers too). ``predict`` and
    ``simulate`` both name their rows by it.

    Parameters
    ----------
    ranks : int
        Ranks of the run.

    Returns
    -------
    str
        The column's value.

    Examples
    --------
    >>> exchange_name(6), exchange_name(1)
    ('parameter-server', '')
    """
    return "parameter-server" if ranks > 1 else ""


def ps_summary(cluster: Cluster, workload: Workload,
               lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per node count: ``"parameter-server"`` (``""`` on one rank) and the link that
    bounds the exchange (:func:`ps_limit`), for ``predict``'s ``allreduce`` and
    ``network_limit`` columns.

    Parameters
    ----------
    cluster : Cluster
        The machine; its runtime a parameter server.
    workload : Workload
        What is trained.
    lay : Layout
        Node counts.
    """
    names = [exchange_name(int(p)) for p in lay.ranks.tolist()]
    limits = [ps_limit(cluster, workload, int(k)) for k in lay.nodes.tolist()]
    return np.array(names, dtype=object), np.array(limits, dtype=object)
