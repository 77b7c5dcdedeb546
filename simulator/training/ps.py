"""Synchronous SGD through parameter servers as a SimPy simulation of flows.

The placement, the variables and the link figures are the closed form's
(:func:`dlscale.perfmodel.training.ps.ps_plan`); what differs is how the bytes move.
Every message is a flow of its own, sharing the bandwidth of each link on its way
max-min fairly with the flows in flight (:class:`dlscale.simulator.network.flow.
FlowNetwork`, the flow-level model SimGrid uses), after its path latency. Links: each
node's network link out and in, and on GPU nodes with a host link, each node's host
link down (host -> device) and up (device -> host; the node's devices copy in
parallel, each over its own link, so one link per node stands for them).

Per iteration, every rank draws its compute factor (:mod:`.stragglers`); a worker
node runs at its slowest device's. Then:

1. at the iteration's start every worker pulls every variable whose server is on
   another node (a flow server node out -> worker in), each followed by its copy to
   the devices (host down); a variable on the worker's own node is copied at once;
2. the worker's forward pass starts when the last copy has arrived; its backward
   pass then produces each layer's gradients in turn (``overlap=False``: all at its
   end), each pushed device -> host (host up) and then to its server (worker out ->
   server node in) when it is on another node;
3. the iteration ends when every worker's backward pass and every push are done,
   plus the slowest worker's update.

Where nothing contends (one message at a time on each link) this is the closed form's
time. Where messages share links, max-min sharing delays each message's arrival at
its next link, which the closed form's per-link bound does not see (slower); and each
worker starts its forward pass when its own reads are in, where the closed form waits
for the slowest pull (faster). ``tests/test_ps.py`` holds the two within 5%.
"""

from __future__ import annotations

import numpy as np
import simpy

from dlscale.perfmodel.training.ps import PsPlan, exchange_name, ps_plan
from dlscale.simulator.network.flow import FlowNetwork
from dlscale.simulator.training.common import Breakdown, RunContext, RunOutcome, compute_profile

__all__ = ["run_ps_sync"]


class _Links:
    """Link ids of the plan's nodes: out, in, host down, host up (4 per node)."""

    def __init__(self, plan: PsPlan) -> None:
        self.plan = plan
        n = plan.nodes
        staged = bool(np.isfinite(plan.host_Bps))
        cap = np.empty(4 * n)
        cap[0::4] = plan.nic_Bps
        cap[1::4] = plan.nic_Bps
        cap[2::4] = plan.host_Bps if staged else np.inf
        cap[3::4] = plan.host_Bps if staged else np.inf
        self.capacity = cap
        self.staged = staged

    @staticmethod
    def net(src: int, dst: int) -> np.ndarray:
        return np.array([4 * src, 4 * dst + 1], dtype=np.int64)

    @staticmethod
    def down(node: int) -> np.ndarray:
        return np.array([4 * node + 2], dtype=np.int64)

    @staticmethod
    def up(node: int) -> np.ndarray:
        return np.array([4 * node + 3], dtype=np.int64)


def _worker_factors(ctx: RunContext, f: np.ndarray) -> np.ndarray:
    """Each worker node's compute factor: its slowest device's (rank's)."""
    rpn = ctx.lay.ranks_per_node
    return np.asarray(f, dtype=float).reshape(ctx.nodes, rpn).max(axis=1)


def _push_schedule(overlap: bool, prof, plan: PsPlan,
                   runtime=None) -> tuple[np.ndarray, np.ndarray]:
    """Per variable, when its gradient is ready after the backward pass starts (with a
    fitted overlap, as ``runtime.achieved_ready`` delays it), and the order the pushes
    leave in (by readiness; the last created first among equals)."""
    J = len(plan.var_bytes)
    ready_off = (prof.backward_done_s[plan.var_layer] if overlap
                 else np.full(J, prof.backward_s))
    if overlap and runtime is not None:
        ready_off = runtime.achieved_ready(ready_off, prof.backward_s)
    order = np.arange(J)[::-1]
    return ready_off, order[np.argsort(ready_off[order], kind="stable")]


def run_ps_sync(ctx: RunContext) -> RunOutcome:
    """Simulate ``ctx.iterations`` iterations through parameter servers (module docstring)."""
    w = ctx.workload
    prof = compute_profile(ctx.cluster, w, ctx.lay)
    plan = ps_plan(ctx.cluster, w, ctx.nodes)
    links = _Links(plan)
    env = simpy.Environment()
    net = FlowNetwork(env, links.capacity)
    W, J = plan.workers, len(plan.var_bytes)
    R = ctx.ranks
    acc = Breakdown(R)
    iter_end = np.zeros(ctx.iterations)
    counters: dict = {"exchange": "parameter-server", "variables": J,
                      "servers": len(plan.server_node), "flows": 0,
                      "allreduce": exchange_name(R)}
    ready_off, order = _push_schedule(w.overlap, prof, plan, ctx.cluster.runtime)
    busy = _busy(plan)

    def send(path: np.ndarray, nbytes: float, latency: float) -> simpy.Event:
        counters["flows"] += 1
        return net.transfer(path, nbytes, latency)

    def pull_one(wk: int, j: int):
        src = int(plan.var_node[j])
        if src != wk:
            yield send(links.net(src, wk), float(plan.var_bytes[j]), plan.nic_latency_s)
        if links.staged:
            yield send(links.down(wk), float(plan.var_bytes[j]), plan.host_latency_s)

    def push_one(wk: int, j: int, at: float, ends: list):
        yield env.timeout(max(at - env.now, 0.0))
        if links.staged:
            yield send(links.up(wk), float(plan.var_bytes[j]), plan.host_latency_s)
        dst = int(plan.var_node[j])
        if dst != wk:
            yield send(links.net(wk, dst), float(plan.var_bytes[j]), plan.nic_latency_s)
        ends.append(env.now)

    def worker(wk: int, fw: float, marks: dict):
        t0 = env.now
        yield env.all_of([env.process(pull_one(wk, j)) for j in range(J)])
        marks["pulled"][wk] = env.now
        marks["start"][wk] = t0
        bwd_start = env.now + fw * prof.forward_s
        ends: list[float] = []
        pushes = [env.process(push_one(wk, int(j), bwd_start + fw * float(ready_off[j]), ends))
                  for j in order.tolist()]
        marks["bwd_end"][wk] = bwd_start + fw * prof.backward_s
        yield env.all_of(pushes)
        marks["push_end"][wk] = max(ends, default=bwd_start)

    load = ctx.loader_s
    held = 0   # iterations the input pipeline, not the step, ended (as the allreduce path)

    def iterations():
        nonlocal held
        t0 = 0.0
        for k in range(ctx.iterations):
            f = ctx.noise.draw(ctx.rng, (R,))
            fw = _worker_factors(ctx, f)
            marks = {"pulled": np.zeros(W), "bwd_end": np.zeros(W), "push_end": np.zeros(W),
                     "start": np.zeros(W)}
            yield env.all_of([env.process(worker(i, float(fw[i]), marks))
                              for i in range(W)])
            barrier = max(float(marks["bwd_end"].max()), float(marks["push_end"].max()))
            yield env.timeout(max(barrier - env.now, 0.0))
            end = barrier + float(fw.max()) * prof.update_s
            _account(acc, prof, f, float(fw.max()), float(marks["pulled"].max()) - t0 + busy,
                     end - t0)
            # the input pipeline prepares one node's batch every ``load`` s: the next
            # iteration starts when both the step and the next batch are done
            if load > 0:
                held += bool(t0 + load > end)
                end = max(end, t0 + load)
            iter_end[k] = end
            if ctx.tracer is not None and k < ctx.tracer.max_iterations:
                _trace(ctx, prof, marks, f, end)
            yield env.timeout(max(end - env.now, 0.0))
            t0 = end

    env.process(iterations())
    env.run()
    if held and ctx.loader_limit == "storage":
        counters["limit"] = "storage"   # the node's storage set the pace (training.storage)
    times = np.diff(np.concatenate([[0.0], iter_end]))
    return RunOutcome(times, acc.per_iteration(ctx.iterations), float(iter_end[-1]), counters)


def _account(acc: Breakdown, prof, f: np.ndarray, f_slowest: float, comm_s: float,
             iteration_s: float) -> None:
    """One iteration into the per-rank breakdown: compute, communication (the pull as
    simulated and the push's links' work), exposed (after the slowest rank's compute)
    and the rest of each rank's wait."""
    step = prof.forward_s + prof.backward_s + prof.update_s
    comp = f * step
    exposed = max(iteration_s - f_slowest * step, 0.0)
    acc.compute_s += comp
    acc.comm_s += comm_s
    acc.exposed_comm_s += exposed
    acc.straggler_wait_s += np.maximum(iteration_s - comp - exposed, 0.0)


def _trace(ctx: RunContext, prof, marks: dict, f: np.ndarray, end: float) -> None:
    """One iteration of the traced ranks: the pull, forward, backward, the pushes (from
    the first gradient to the last arrival at a server) and the update."""
    tr = ctx.tracer
    assert tr is not None
    rpn = ctx.lay.ranks_per_node
    for r in tr.ranks.tolist():
        wk = r // rpn
        t0, pulled = float(marks["start"][wk]), float(marks["pulled"][wk])
        fwd, bwd = prof.forward_s * f[r], prof.backward_s * f[r]
        tr.slice(r, "comm", "pull variables (parameter servers)", t0, pulled - t0)
        tr.slice(r, "compute", "forward", pulled, float(fwd))
        tr.slice(r, "compute", "backward", pulled + float(fwd), float(bwd))
        first = pulled + float(fwd)
        tr.slice(r, "comm", "push gradients (parameter servers)", first,
                 max(float(marks["push_end"][wk]) - first, 0.0))
        u = float(prof.update_s * f[r])
        tr.slice(r, "compute", "update", end - u, u)


def _busy(plan: PsPlan) -> float:
    """The push's links' busy time (every gradient ready at once), as the closed form
    counts communication."""
    from dlscale.perfmodel.training.ps import push_end_s

    return push_end_s(plan, np.zeros(len(plan.var_bytes)))[0]
