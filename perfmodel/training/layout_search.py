"""The fastest parallel layout of a transformer that fits a machine, and why.

:func:`search_layouts` tries every layout of
:func:`~dlscale.perfmodel.training.layout_space.layouts` on a fixed number of GPUs:
the memory per GPU first (:func:`~dlscale.perfmodel.compute.llm_memory.llm_memory`,
cheap), then, for the layouts that fit, the time by
:func:`~dlscale.perfmodel.training.parallel_time.llm_iteration`, the function
``predict`` calls, so a layout's row here is its ``predict`` row. The parts of that
call that depend on a few of a layout's fields are kept while the search runs
(:func:`~dlscale.perfmodel.layoutmemo.pricing_memo`); the answers are the same bit
for bit.

Ranking: the shortest iteration first (the global batch is fixed, so the highest
throughput), ties by less memory per GPU, then by the order
:func:`~dlscale.perfmodel.training.layout_space.layouts` lists them in (``tp``,
``pp``, ``ep``, ``micro``, schedule, ``zero``, recompute, ``sp``, each ascending). The same
inputs give the same ranking.

The **limiting resource** of a layout (:func:`limiting_resource`) is ``memory`` when a
layout one step away (one of ``tp``, ``pp``, ``ep``, ``micro``, the schedule, ``zero``,
recompute, ``sp`` changed, ``dp`` following) would be faster but does not fit, and
no layout one step away that fits is faster (memory is what keeps it there);
otherwise the largest term of its iteration: ``compute`` (with recomputation),
``TP communication``, ``PP bubble`` (the bubble and the stage-to-stage transfers),
``DP communication`` (the exposed part), ``optimizer`` or ``EP communication`` (the
all-to-alls of expert parallelism).

Examples
--------
>>> from dlscale.perfmodel.catalog.clusters import CLUSTERS
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> s = search_layouts(CLUSTERS["dgx1-v100"], get_llm("gpt-1.7b"), 8, 16)
>>> s.tried, len(s.ranked) <= s.tried, s.best is not None and s.best.fits
(1188, True, True)
>>> describe(ParallelLayout(tp=8, pp=16, dp=8, micro=1, global_batch=1536, recompute="full"))
'tp 8, pp 16, dp 8, micro 1, 1f1b, zero 0, recompute full'
"""

from __future__ import annotations

from dataclasses import dataclass

from dlscale.perfmodel.compute.llm_memory import LLMMemory, llm_memory
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.layoutmemo import pricing_memo
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.layout_space import LayoutSpace, layouts
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import LLMIteration, llm_iteration
from dlscale.perfmodel.training.transformer import RECOMPUTE, TransformerSpec

__all__ = ["DIMENSIONS", "LayoutSearch", "describe", "limiting_resource", "overhead", "pareto",
           "search_layouts", "terms", "why_lines"]

#: The searched dimensions, as (name, the layout's fields that make its value).
DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tp", ("tp",)), ("pp", ("pp",)), ("ep", ("ep",)), ("micro", ("micro",)),
    ("schedule", ("schedule", "virtual")), ("zero", ("zero",)),
    ("recompute", ("recompute",)), ("sp", ("sp",)))


def describe(lay: ParallelLayout) -> str:
    """``tp 8, pp 16, dp 8, micro 1, 1f1b, zero 1, recompute full, sp``.

    A mixture of experts split over ``ep > 1`` ranks adds ``, ep 4`` after ``dp``;
    bf16 (not the default fp16) adds ``, bf16`` at the end.

    Parameters
    ----------
    lay : ParallelLayout

    Returns
    -------
    str
    """
    sched = lay.schedule + (f" v {lay.virtual}" if lay.virtual > 1 else "")
    ep = f", ep {lay.ep}" if lay.ep > 1 else ""
    return (f"tp {lay.tp}, pp {lay.pp}, dp {lay.dp}{ep}, micro {lay.micro}, {sched}, "
            f"zero {lay.zero}, recompute {lay.recompute}{', sp' if lay.sp else ''}"
            f"{', bf16' if lay.precision == 'bf16' else ''}")


def _value(lay: ParallelLayout, name: str) -> str:
    """``tp 8``, ``schedule interleaved v 2``, ``sp on``: one dimension's value."""
    if name == "schedule":
        return f"schedule {lay.schedule}" + (f" v {lay.virtual}" if lay.virtual > 1 else "")
    if name == "sp":
        return f"sp {'on' if lay.sp else 'off'}"
    return f"{name} {getattr(lay, name)}"


def terms(it: LLMIteration) -> dict[str, float]:
    """The iteration's time by resource (seconds; they sum to ``iteration_s``).

    Parameters
    ----------
    it : LLMIteration

    Returns
    -------
    dict
        ``compute``, ``TP communication``, ``PP bubble``, ``DP communication``,
        ``optimizer``, ``EP communication`` (the all-to-alls of a mixture of experts
        split over ``ep > 1`` ranks; 0 otherwise, last so that it wins no tie) -> seconds.
    """
    return {"compute": it.compute_s, "TP communication": it.tp_comm_s,
            "PP bubble": it.bubble_s + it.pp_comm_s, "DP communication": it.dp_exposed_s,
            "optimizer": it.optimizer_s, "EP communication": it.ep_comm_s}


def _key(lay: ParallelLayout) -> tuple[object, ...]:
    return tuple(getattr(lay, f) for _n, fs in DIMENSIONS for f in fs)


def _order(lay: ParallelLayout) -> tuple[object, ...]:
    return (lay.tp, lay.pp, lay.ep, lay.micro, lay.schedule != "1f1b", lay.schedule == "gpipe",
            lay.virtual, lay.zero, RECOMPUTE.index(lay.recompute), lay.sp)


@dataclass
class LayoutSearch:
    """Every layout tried on one machine and GPU count, the fitting ones ranked.

    Attributes
    ----------
    cluster : Cluster
    model : TransformerSpec
    gpus, global_batch : int
    space : LayoutSpace
    ranked : list of LLMIteration
        The layouts that fit, best first (module docstring).
    tried : int
        Layouts whose memory was priced.
    memory : dict
        Layout -> its memory, for every layout tried.
    """

    cluster: Cluster
    model: TransformerSpec
    gpus: int
    global_batch: int
    space: LayoutSpace
    ranked: list[LLMIteration]
    tried: int
    memory: dict[ParallelLayout, LLMMemory]

    @property
    def capacity_B(self) -> float:
        """Bytes of one GPU's memory."""
        return float(self.cluster.node.device.training_memory_bytes)

    @property
    def best(self) -> LLMIteration | None:
        """The fastest layout that fits (None when none does)."""
        return self.ranked[0] if self.ranked else None

    def tokens_per_s(self, it: LLMIteration) -> float:
        """Tokens trained per second by ``it``."""
        return it.layout.global_batch * self.model.seq / it.iteration_s

    def leanest(self) -> tuple[ParallelLayout, LLMMemory] | None:
        """The layout tried that needs the least memory per GPU (None: none tried)."""
        if not self.memory:
            return None
        lay = min(self.memory, key=lambda x: (self.memory[x].total_B, _order(x)))
        return lay, self.memory[lay]

    def price(self, lay: ParallelLayout) -> LLMIteration:
        """``llm_iteration`` of a layout (fitting or not) with the search's memo."""
        with pricing_memo():
            return llm_iteration(self.cluster, self.model, lay)

    def neighbours(self, lay: ParallelLayout) -> list[ParallelLayout]:
        """The layouts tried that differ from ``lay`` in one dimension (``dp`` following)."""
        mine = _key(lay)
        out = []
        for other in self.memory:
            diff = sum(a != b for a, b in zip(_key(other), mine, strict=True))
            if diff == 1 or (diff == 2 and other.schedule != lay.schedule
                             and other.virtual != lay.virtual):
                out.append(other)
        return out


def search_layouts(cluster: Cluster, model: TransformerSpec, gpus: int, global_batch: int,
                   space: LayoutSpace | None = None) -> LayoutSearch:
    """Price every layout of ``model`` on ``gpus`` GPUs of ``cluster``; rank those that fit.

    Parameters
    ----------
    cluster : Cluster
    model : TransformerSpec
    gpus : int
        Whole nodes of the cluster (``gpus`` a multiple of its GPUs per node, or fewer).
    global_batch : int
        Sequences per iteration (every layout keeps it).
    space : LayoutSpace, optional
        Restrictions of the dimensions.

    Returns
    -------
    LayoutSearch
    """
    dpn = cluster.node.devices_per_node
    if gpus < 1 or (gpus > dpn and gpus % dpn):
        raise ConfigError(f"gpus: must fill whole nodes of {dpn} on {cluster.name}, got {gpus}")
    cluster.check_nodes(max(1, gpus // dpn))
    space = space or LayoutSpace()
    cap = float(cluster.node.device.training_memory_bytes)
    fits: list[tuple[float, float, tuple[object, ...], LLMIteration]] = []
    memory: dict[ParallelLayout, LLMMemory] = {}
    with pricing_memo():
        for lay in layouts(model, gpus, dpn, global_batch, space):
            mem = llm_memory(model, lay)
            memory[lay] = mem
            if mem.total_B <= cap:
                it = llm_iteration(cluster, model, lay)
                fits.append((it.iteration_s, mem.total_B, _order(lay), it))
    fits.sort(key=lambda x: x[:3])
    return LayoutSearch(cluster, model, gpus, global_batch, space, [f[3] for f in fits],
                        len(memory), memory)


def pareto(search: LayoutSearch) -> list[LLMIteration]:
    """The fitting layouts no other beats in both time and memory, fastest first.

    Parameters
    ----------
    search : LayoutSearch

    Returns
    -------
    list of LLMIteration
        The fastest, then each that needs less memory than every faster one.
    """
    out: list[LLMIteration] = []
    least = float("inf")
    for it in search.ranked:
        if it.memory.total_B < least:
            out.append(it)
            least = it.memory.total_B
    return out


def _faster(search: LayoutSearch, it: LLMIteration) -> tuple[LLMIteration | None, bool]:
    """The fastest neighbour of ``it`` that would beat it and does not fit, and
    whether a neighbour that fits beats it."""
    best, fitting = None, False
    for lay in search.neighbours(it.layout):
        other = search.price(lay)
        if other.iteration_s >= it.iteration_s:
            continue
        if search.memory[lay].total_B <= search.capacity_B:
            fitting = True
        elif best is None or other.iteration_s < best.iteration_s:
            best = other
    return best, fitting


def overhead(it: LLMIteration) -> tuple[str, float]:
    """The largest term but compute, and its share of the iteration.

    Parameters
    ----------
    it : LLMIteration

    Returns
    -------
    (str, float)
        The term's name (:func:`terms`) and its fraction of ``iteration_s``.
    """
    parts = terms(it)
    del parts["compute"]
    name = max(parts, key=lambda k: parts[k])
    return name, parts[name] / it.iteration_s


def limiting_resource(search: LayoutSearch, it: LLMIteration) -> str:
    """``memory`` or the largest term of the iteration (module docstring).

    Parameters
    ----------
    search : LayoutSearch
        The search ``it`` comes from (its neighbours are priced with its memo).
    it : LLMIteration

    Returns
    -------
    str
        ``memory`` or a name of :func:`terms`.
    """
    too_big, fitting = _faster(search, it)
    if too_big is not None and not fitting:
        return "memory"
    parts = terms(it)
    return max(parts, key=lambda k: parts[k])


def why_lines(search: LayoutSearch, it: LLMIteration) -> list[str]:
    """Why ``it`` beats the best layout with another value of each dimension.

    One line per dimension that has another value in the space: the best fitting
    layout with another value, how much slower it is and the term that grows most;
    or that none with another value fits. Then the fastest layout one step away
    that would be faster and does not fit, if any.

    Parameters
    ----------
    search : LayoutSearch
    it : LLMIteration
        Usually ``search.best``.

    Returns
    -------
    list of str
    """
    lines = []
    gb = 1e9
    for name, fields in DIMENSIONS:
        mine = tuple(getattr(it.layout, f) for f in fields)
        others = [lay for lay in search.memory
                  if tuple(getattr(lay, f) for f in fields) != mine]
        if not others:
            continue
        alt = next((r for r in search.ranked
                    if tuple(getattr(r.layout, f) for f in fields) != mine), None)
        label = _value(it.layout, name)
        if alt is None:
            lines.append(f"{label}: no layout with another {name} fits in "
                         f"{search.capacity_B / gb:.0f} GB")
            continue
        a, b = terms(alt), terms(it)
        grow = max(a, key=lambda k: a[k] - b[k])
        slower = alt.iteration_s / it.iteration_s - 1
        lines.append(f"{label}: the best with another {name} ({describe(alt.layout)}) is "
                     f"{slower:.2%} slower; its {grow} {a[grow]:.3g} s against {b[grow]:.3g} s")
    big = _faster(search, it)[0]
    if big is not None:
        lines.append(f"faster but too big: {describe(big.layout)} would take "
                     f"{1 - big.iteration_s / it.iteration_s:.1%} less time but needs "
                     f"{big.memory.total_B / gb:.1f} GB of {search.capacity_B / gb:.0f} GB")
    return lines
