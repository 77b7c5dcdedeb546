"""Capacity planning of a transformer: the parallel layout and the machine size.

:func:`plan_layouts` searches, for each cluster on offer and node count, every
parallel layout of the model (:func:`~dlscale.perfmodel.training.layout_search.search_layouts`:
``tp x pp x dp x ep x micro x schedule x zero x recompute x sp``, ``ep`` for a
mixture of experts only, memory first, then the
time ``predict`` gives) and picks:

- with no target, the fastest layout that fits (at a single node count: the highest
  throughput on that machine);
- with a target (``tokens_per_day``, or ``tokens`` to train by ``deadline_s``), the
  cheapest machine that meets it: the fewest GPUs whose best layout reaches the
  rate, ties by the higher throughput, then by the clusters' order.

``rows`` are the chosen machine's Pareto layouts (throughput against memory per GPU:
the fastest, then each layout that needs less memory than every faster one), each
naming its limiting resource, with the band of its iteration time, TFLOP/s per GPU,
tokens per second and per day (and days, given tokens to train) as ``KEY_low`` and
``KEY_high`` from :func:`~dlscale.perfmodel.training.llm_ranges.llm_band`, the band
``predict`` gives that layout (taken for these rows only, not for every layout
searched); ``meta["machines"]`` the best layout of every
(cluster, node count) tried, with the same band, ``meta["why"]`` why the chosen layout
beats the best layout with another value of each dimension.

``plan_on`` (``low``, ``central``, ``high``) names the end of the band the machine is
chosen on: with ``low``, the pessimistic end, each machine is judged by the low
tokens per second of its best layout (the highest, or the fewest GPUs whose low end
meets the target), so a machine chosen on ``low`` meets the target even if every
mechanism of the band costs what its sources allow at most. Layouts inside a machine
are still ranked by their central answer (pricing the band of every layout searched
would cost each search several times over).

Examples
--------
>>> res = plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=16, nodes=[1],
...                    recompute=("none",), sp=(False,))
>>> res.meta["best"]["tp"] >= 1, res.rows[0]["rank"], res.feasible
(True, 1, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.layoutmemo import pricing_memo
from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.layout_search import (
    LayoutSearch,
    describe,
    limiting_resource,
    overhead,
    pareto,
    search_layouts,
    why_lines,
)
from dlscale.perfmodel.training.layout_space import LayoutSpace
from dlscale.perfmodel.training.llm_ranges import llm_band
from dlscale.perfmodel.training.parallel_time import LLMIteration
from dlscale.perfmodel.training.ranges import PLAN_ON
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.results import ResultTable

__all__ = ["LayoutPlanResult", "layout_row", "plan_layouts"]

_DAY = 86400.0


class LayoutPlanResult(ResultTable):
    """The chosen machine's Pareto layouts (``rows``), every machine tried, and why."""

    @property
    def feasible(self) -> bool:
        """Whether a layout fits and meets the target."""
        return not self.meta.get("infeasible")


def layout_row(search: LayoutSearch, it: LLMIteration, tokens: float | None,
               banded: bool = False) -> dict[str, Any]:
    """One row: the layout, its rate, memory, limiting resource and largest overhead;
    with ``banded``, each time and rate followed by its band (:func:`_with_band`)."""
    row = it.to_row()
    rate = search.tokens_per_s(it)
    name, share = overhead(it)
    out = {k: row[k] for k in ("cluster", "gpus", "tp", "pp", "dp", "ep", "micro", "schedule",
                               "virtual", "zero", "recompute", "sp", "microbatches")}
    out.update(nodes=max(1, it.gpus // search.cluster.node.devices_per_node),
               tokens_per_s=rate, tokens_per_day=rate * _DAY,
               tflops_per_gpu=it.tflops_per_gpu, iteration_s=it.iteration_s,
               memory_GB=it.memory.total_B / 1e9,
               headroom_GB=(search.capacity_B - it.memory.total_B) / 1e9,
               limit=limiting_resource(search, it), overhead=f"{name} {share:.0%}")
    if tokens is not None:
        out["days"] = tokens / rate / _DAY
    return _with_band(search, it, out, tokens) if banded else out


def _with_band(search: LayoutSearch, it: LLMIteration, row: dict[str, Any],
               tokens: float | None) -> dict[str, Any]:
    """``row`` with ``KEY_low`` and ``KEY_high`` after each banded key: the
    iteration, TFLOP/s and tokens per second as :func:`llm_band` gives them for the
    layout, tokens per day and days from its tokens per second.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> s = search_layouts(get_cluster("dgx1-v100"), get_llm("gpt-1.7b"), 8, 16,
    ...                    LayoutSpace(recompute=("none",), sp=(False,)))
    >>> row = layout_row(s, s.best, 1e9, banded=True)
    >>> row["days_low"] <= row["days"] <= row["days_high"]
    True
    """
    _central, band = llm_band(search.cluster, search.model, it.layout)
    low, high = band["tokens_per_s"]
    ranges = {k: band[k] for k in ("iteration_s", "tflops_per_gpu", "tokens_per_s")}
    ranges["tokens_per_day"] = (low * _DAY, high * _DAY)
    if tokens is not None:
        # the fastest rate trains the tokens in the fewest days
        ranges["days"] = (tokens / high / _DAY, tokens / low / _DAY)
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k in ranges:
            out[f"{k}_low"], out[f"{k}_high"] = ranges[k]
    return out


def _target(tokens_per_day: float | None, tokens: float | None,
            deadline_s: float | None) -> float | None:
    """The tokens per second a target needs (None: no target), the inputs checked."""
    for name, v in (("tokens_per_day", tokens_per_day), ("tokens", tokens),
                    ("deadline_s", deadline_s)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ConfigError(f"{name}: must be a finite number > 0, got {v!r}")
    if deadline_s is not None and tokens is None:
        raise ConfigError("deadline: a time-to-train target needs the tokens to train (--tokens)")
    if deadline_s is not None and tokens_per_day is not None:
        raise ConfigError("tokens_per_day: give one target, tokens per day or tokens by a "
                          "deadline, not both")
    if tokens_per_day is not None:
        return tokens_per_day / _DAY
    if deadline_s is not None and tokens is not None:
        return tokens / deadline_s
    return None


def _top(cluster: Cluster, max_nodes: int | None) -> int:
    """The most nodes tried on ``cluster``: its size, or ``max_nodes`` if fewer."""
    return min(cluster.max_nodes, max_nodes or cluster.max_nodes)


def _counts(cluster: Cluster, nodes: Sequence[int] | None, max_nodes: int | None) -> list[int]:
    top = _top(cluster, max_nodes)
    if nodes is not None:
        return sorted(n for n in set(nodes) if n <= top)
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= 2
    return [*out, top]


def _model(model: str | TransformerSpec) -> TransformerSpec:
    from dlscale.perfmodel.catalog.models_llm import get_llm

    return model if isinstance(model, TransformerSpec) else get_llm(model)


def _no_layout(s: LayoutSearch) -> str:
    """One line for a node count asked that no layout can use, and why."""
    nodes = s.gpus // s.cluster.node.devices_per_node
    why = (f"none of its {s.tried} layouts fits in {s.capacity_B / 1e9:.0f} GB per GPU"
           if s.tried else "no layout splits its GPUs with this global batch")
    return f"{s.cluster.name} at {nodes} nodes ({s.gpus} GPUs): {why}"


def _no_fit(searches: list[LayoutSearch], model: TransformerSpec) -> str:
    """One line: no layout fits; the leanest layout tried, what it needs and of what."""
    lean = [(s, *s.leanest()) for s in searches if s.leanest() is not None]  # type: ignore[misc]
    if not lean:
        return (f"layouts: no layout of {model.name} splits over the GPUs tried with this "
                f"global batch (tp must divide {model.heads} heads, pp {model.layers} "
                f"layers, dp the global batch)")
    s, lay, mem = min(lean, key=lambda x: x[2].total_B / x[0].capacity_B)
    return (f"memory: no layout of {model.name} fits; the closest, {describe(lay)} on "
            f"{s.gpus} GPUs of {s.cluster.name}, needs {mem.total_B / 1e9:.1f} GB per GPU "
            f"(weights, gradients and optimizer state {mem.states_B / 1e9:.1f}, activations "
            f"{mem.activations_B / 1e9:.1f}, buffers {mem.buffers_B / 1e9:.1f}) of "
            f"{s.capacity_B / 1e9:.0f} GB")


def _check_sizes(spec: TransformerSpec, cl: list[Cluster], space: LayoutSpace) -> None:
    """A tensor- or pipeline-parallel size asked that no cluster can take: one line."""
    from dlscale.perfmodel.training.layout_space import divisors, tp_sizes

    valid = sorted({t for c in cl for t in tp_sizes(spec, c.node.devices_per_node)})
    bad = [t for t in space.tp or () if t not in valid]
    if bad:
        raise ConfigError(f"tp: {bad[0]} does not split {spec.name} inside a node (it must "
                          f"divide the {spec.heads} heads, the MLP and the node's GPUs); "
                          f"valid: {', '.join(map(str, valid))}")
    bad = [p for p in space.pp or () if spec.layers % p]
    if bad:
        raise ConfigError(f"pp: {bad[0]} must divide the {spec.layers} layers of {spec.name}; "
                          f"valid: {', '.join(map(str, divisors(spec.layers)))}")
    if space.ep is not None and not spec.moe:
        raise ConfigError(f"ep: {spec.name} is a dense model (no experts); expert "
                          f"parallelism searches a mixture of experts (dlscale catalog "
                          f"transformers lists their experts), got {space.ep[0]}")
    bad = [e for e in space.ep or () if spec.experts % e]
    if bad:
        raise ConfigError(f"ep: {bad[0]} must divide the {spec.experts} experts of "
                          f"{spec.name}; valid: {', '.join(map(str, divisors(spec.experts)))}"
                          f" (those that also divide dp)")


def plan_layouts(model: str | TransformerSpec, clusters: Sequence[str | Path | Cluster], *,
                 global_batch: int, nodes: Sequence[int] | None = None,
                 tokens_per_day: float | None = None, tokens: float | None = None,
                 deadline_s: float | None = None, max_nodes: int | None = None,
                 tp: Sequence[int] | None = None, pp: Sequence[int] | None = None,
                 micro: Sequence[int] | None = None, zero: Sequence[int] | None = None,
                 recompute: Sequence[str] | None = None, sp: Sequence[bool] | None = None,
                 schedules: Sequence[str] | None = None,
                 dp_overlap: str = "always",
                 ep: Sequence[int] | None = None,
                 plan_on: str = "central", precision: str = "fp16") -> LayoutPlanResult:
    """Search layouts and machine sizes for a transformer (module docstring).

    Parameters
    ----------
    model : str or TransformerSpec
        A transformer of the catalog (``dlscale catalog transformers``).
    clusters : sequence of str, Path or Cluster
        The machines on offer.
    global_batch : int
        Sequences per iteration (a training choice every layout keeps).
    nodes : sequence of int, optional
        Node counts to try (default: doubling up to each cluster's size).
    tokens_per_day : float, optional
        Target rate.
    tokens, deadline_s : float, optional
        Tokens to train (each row then says the days it takes) and, with a deadline,
        the time-to-train target.
    max_nodes : int, optional
        At most this many nodes.
    tp, pp, micro, zero, recompute, sp, schedules : sequence, optional
        The values of each dimension to try (default: every valid one; schedules
        1f1b and interleaved).
    dp_overlap : {"always", "never", "without-pipeline"}
        Whether the gradient exchange overlaps the last backward
        (:class:`~dlscale.perfmodel.training.layout_space.LayoutSpace`).
    ep : sequence of int, optional
        Expert-parallel sizes to try, a mixture of experts only (default: every
        divisor of ``dp`` that divides the experts); refused for a dense model.
    plan_on : {"central", "low", "high"}
        The end of each machine's band it is chosen on (module docstring).
    precision : {"fp16", "bf16"}
        Every layout's mixed precision (bf16: fp32 gradients in memory and on the wire).

    Returns
    -------
    LayoutPlanResult
    """
    spec = _model(model)
    if not clusters:
        raise ConfigError("clusters: give at least one cluster")
    if not (isinstance(global_batch, int) and not isinstance(global_batch, bool)
            and global_batch > 0):
        raise ConfigError(f"global_batch: must be a positive integer of sequences, "
                          f"got {global_batch!r}")
    if max_nodes is not None and max_nodes < 1:
        raise ConfigError(f"max_nodes: must be a positive integer, got {max_nodes!r}")
    if plan_on not in PLAN_ON:
        raise unknown_name("plan_on", plan_on, PLAN_ON)
    need = _target(tokens_per_day, tokens, deadline_s)
    base = LayoutSpace()
    space = LayoutSpace(
        tp=tuple(tp) if tp else None, pp=tuple(pp) if pp else None,
        micro=tuple(micro) if micro else None,
        zero=tuple(zero) if zero else base.zero,
        recompute=tuple(recompute) if recompute else base.recompute,
        sp=tuple(sp) if sp else base.sp,
        schedules=tuple(schedules) if schedules else base.schedules, dp_overlap=dp_overlap,
        ep=tuple(ep) if ep else None, precision=precision)
    cl = [load_cluster(c) for c in clusters]
    _check_sizes(spec, cl, space)
    plan = [(c, _counts(c, nodes, max_nodes)) for c in cl]
    if not any(counts for _c, counts in plan):
        raise ConfigError(f"nodes: no node count within the clusters' sizes and max_nodes "
                          f"({', '.join(f'{c.name} {c.max_nodes}' for c in cl)})")
    beyond = [f"{c.name} at {n} nodes: beyond its {_top(c, max_nodes)}"
              f" ({'max_nodes' if max_nodes and max_nodes < c.max_nodes else 'its size'}); "
              f"not tried" for c, _ in plan for n in sorted(set(nodes or ()))
              if n > _top(c, max_nodes)]
    searches: list[LayoutSearch] = []
    with pricing_memo():
        for c, counts in plan:
            dpn = c.node.devices_per_node
            searches += [search_layouts(c, spec, n * dpn, global_batch, space) for n in counts]
        out = _result(spec, searches, need, tokens, global_batch, plan_on)
    out.meta["without_layout"] += beyond
    out.meta["precision"] = precision
    return out


def _result(spec: TransformerSpec, searches: list[LayoutSearch], need: float | None,
            tokens: float | None, global_batch: int, plan_on: str) -> LayoutPlanResult:
    done = [s for s in searches if s.best is not None]
    machines = [layout_row(s, s.best, tokens, banded=True) for s in done if s.best is not None]
    # the rate each machine is judged on: central, or the end of its band plan_on names
    key = "tokens_per_s" if plan_on == "central" else f"tokens_per_s_{plan_on}"
    meta: dict[str, Any] = {
        "model": spec.name, "global_batch": global_batch, "seq": spec.seq,
        "experts": spec.experts,
        "clusters": sorted({s.cluster.name for s in searches}),
        "noise": {s.cluster.name: cluster_noise(s.cluster) for s in searches},
        "tried": sum(s.tried for s in searches), "fit": sum(len(s.ranked) for s in searches),
        "target_tokens_per_s": need, "tokens": tokens, "machines": machines,
        "plan_on": plan_on,
        "objective": "fewest GPUs meeting the target" if need else "highest throughput",
        "without_layout": [_no_layout(s) for s in searches if s.best is None]}
    if not done:
        meta["infeasible"] = [_no_fit(searches, spec)]
        return LayoutPlanResult([], meta)
    if need is None:
        pick = min(range(len(done)), key=lambda i: (-machines[i][key], machines[i]["gpus"], i))
    else:
        ok = [i for i, m in enumerate(machines) if m[key] >= need]
        if not ok:
            top = max(machines, key=lambda m: m[key])
            end = "" if plan_on == "central" else f" at the {plan_on} end of its band"
            meta["infeasible"] = [
                f"target: the fastest layout tried ({top['cluster']}, {top['gpus']} GPUs) "
                f"trains {top[key] * _DAY:.4g} tokens per day{end} against the "
                f"{need * _DAY:.4g} asked ({1 - top[key] / need:.0%} short)"]
            return LayoutPlanResult([], meta)
        pick = min(ok, key=lambda i: (machines[i]["gpus"], -machines[i][key], i))
    s = done[pick]
    best = s.best
    assert best is not None
    rows = [{"rank": i + 1, **layout_row(s, it, tokens, banded=True)}
            for i, it in enumerate(pareto(s))]
    meta.update(best=rows[0], cluster=s.cluster.name, gpus=s.gpus,
                layouts_tried=s.tried, layouts_fit=len(s.ranked), why=why_lines(s, best))
    return LayoutPlanResult(rows, meta)
