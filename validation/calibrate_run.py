"""One calibration run on an MPI communicator: measure, fit, build the profile.

:func:`calibrate` is called by every rank (``mpiexec -n N dlscale calibrate``). In
order, with shares of the time budget:

1. kernels (20 %): :func:`dlscale.validation.kernelbench.kernel_figures` on every
   rank at once (one BLAS thread each); the profile keeps the median over ranks of
   each figure and the largest coefficient of variation, and, as host figures
   (``stream_triad_host_Bps``, ``gemm_host_flops``), the sum over the ranks of a
   host (run one rank per core for the whole host's figure);
2. point-to-point (35 %): ping-pong, streaming and simultaneous exchange
   (``Sendrecv`` both ways, the step of a ring) between two ranks on one host
   (``intra-node``) and, where ranks sit on two or more hosts (grouped by
   ``MPI_Get_processor_name``), between the first ranks of two hosts
   (``inter-node``); fitted with :func:`~dlscale.perfmodel.fitting.fit_piecewise_hockney`
   and :func:`~dlscale.perfmodel.fitting.fit_loggp` (the exchange times get their
   own piecewise Hockney fit, under ``exchange``); on one host with more than two
   ranks also a ring step of all ranks at once (``ring_exchange``, 10 %); then the
   Async EASGD master/worker exchange between ranks 0 and 1, timed directly with
   the training run's own loop and numba kernel
   (:func:`~dlscale.validation.easgd_exchange.easgd_exchange`, 5 %, under
   ``easgd_exchange`` of their regime);
3. collectives (45 %): each of :data:`~dlscale.validation.microbench.COLLECTIVES`
   on the first ``k`` ranks for every ``k`` of ``rank_counts`` (the others wait
   without spinning); allreduce is fitted against every closed form of
   :data:`dlscale.perfmodel.network.collectives.ALLREDUCE` with efficiency factors per
   size segment (:mod:`dlscale.validation.collective_fit`), the best one named;
   where the launch chose the algorithm (``--allreduce-algorithm``), against that
   algorithm's form only, and where the library is MPICH against the forms of
   the algorithms its default selection runs at the measured sizes and rank
   counts (:func:`~dlscale.validation.collective_fit.library_allreduce_algorithms`),
   with the page faults of its temporary buffer as a measured, unfitted term.

With one rank only the kernel part runs, with a warning in the profile's notes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting import fit_loggp, fit_piecewise_hockney, with_bandwidth
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation import microbench as mb
from dlscale.validation.budget import StepClock, cut_note
from dlscale.validation.collective_fit import fit_allreduce, library_allreduce_algorithms
from dlscale.validation.easgd_exchange import easgd_exchange
from dlscale.validation.kernelbench import kernel_figures, model_step
from dlscale.validation.mpi_env import (
    MPICH_ALLREDUCE,
    get_mpi,
    host_groups,
    one_blas_thread,
    provenance,
)
from dlscale.validation.sync_step import sync_step

__all__ = ["calibrate", "merge_quantiles", "p2p_pairs"]


def p2p_pairs(groups: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
    """Rank pairs to measure: ``intra-node`` (two ranks on the first host that has two)
    and ``inter-node`` (first ranks of the first two hosts), where they exist.

    Examples
    --------
    >>> p2p_pairs({"a": [0, 1], "b": [2, 3]})
    {'intra-node': (0, 1), 'inter-node': (0, 2)}
    >>> p2p_pairs({"a": [0]})
    {}
    """
    pairs: dict[str, tuple[int, int]] = {}
    for ranks in groups.values():
        if len(ranks) >= 2:
            pairs["intra-node"] = (ranks[0], ranks[1])
            break
    hosts = list(groups.values())
    if len(hosts) >= 2:
        pairs["inter-node"] = (hosts[0][0], hosts[1][0])
    return pairs


def _say(comm: Any, progress: bool, msg: str) -> None:
    if progress and comm.Get_rank() == 0:
        print(f"[calibrate {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _p2p(comm: Any, pair: tuple[int, int], sizes: list[int], budget_s: float,
         deadline: float | None = None) -> dict[str, Any] | None:
    a, b = pair

    def until(done: float) -> float | None:  # the sub-step's deadline: a share of the step
        return None if deadline is None else deadline - (1.0 - done) * budget_s

    pp = mb.pingpong(comm, a, b, sizes, 0.45 * budget_s, deadline=until(0.45))
    st = mb.streaming(comm, a, b, sizes, 0.3 * budget_s, deadline=until(0.75))
    ex = mb.exchange(comm, a, b, sizes, 0.25 * budget_s, deadline=until(1.0))
    if comm.Get_rank() != a:
        return None
    raw = fit_piecewise_hockney(pp["sizes_bytes"], pp["one_way_s"])
    pw, fit_notes = with_bandwidth(raw)  # no segment without a bandwidth (beta > 0)
    pex = fit_piecewise_hockney(ex["sizes_bytes"], ex["time_s"])
    lg = fit_loggp(pp["sizes_bytes"], pp["one_way_s"], st["sizes_bytes"], st["per_msg_s"],
                   st["send_overhead_s"])
    fitted: dict[str, Any] = {} if pw is None else {
        "segments": [vars(s) for s in pw.segments], "breaks_bytes": list(pw.breaks_bytes)}
    return {
        "ranks": [a, b],
        "latency_s": float(pp["one_way_s"][0]),
        "bandwidth_Bps": float(max(st["bandwidth_Bps"][-3:])),
        **fitted,
        "fit_notes": fit_notes + ([] if pw is not None else [
            "no piecewise fit written: messages cost latency_s and bandwidth_Bps alone"]),
        "loggp": {"L_s": lg.L_s, "o_s": lg.o_s, "g_s": lg.g_s, "G_s_per_B": lg.G_s_per_B},
        "sizes_bytes": pp["sizes_bytes"],
        "one_way_s": pp["one_way_s"],
        "one_way_spread": pp["spread"],
        "stream_sizes_bytes": st["sizes_bytes"],
        "stream_Bps": st["bandwidth_Bps"],
        "rel_error": list((pw or raw).rel_error),
        "loggp_rel_error": list(lg.rel_error),
        "exchange": {"sizes_bytes": ex["sizes_bytes"], "time_s": ex["time_s"],
                     "spread": ex["spread"], "segments": [vars(s) for s in pex.segments],
                     "rel_error": list(pex.rel_error)},
    }


def _on_first(comm: Any, k: int, fn: Callable[[Any], Any]) -> Any:
    """Run ``fn(sub)`` on a communicator of ranks ``0..k-1``; others wait idle."""
    MPI = get_mpi()
    sub = comm.Split(0 if comm.Get_rank() < k else MPI.UNDEFINED, comm.Get_rank())
    result = None
    if sub != MPI.COMM_NULL:
        result = fn(sub)
        sub.Free()
    mb.idle_wait(comm)
    return result


def calibrate(
    comm: Any,
    sizes: list[int],
    budget_s: float = 60.0,
    collectives: tuple[str, ...] = mb.COLLECTIVES,
    rank_counts: list[int] | None = None,
    kernels: bool = True,
    argv: list[str] | None = None,
    progress: bool = True,
    p2p_sizes: list[int] | None = None,
    left_s: float | None = None,
) -> MachineProfile | None:
    """Measure and fit; the profile on rank 0, ``None`` on the other ranks.

    ``sizes`` are the collectives' message sizes, ``p2p_sizes`` (default: the same)
    the point-to-point ones. ``left_s``: seconds left of a budget to keep (rank 0's;
    :mod:`dlscale.validation.budget`: each step gets its share of what is left and
    a sweep leaves out the sizes past its deadline, with a note); None: ``budget_s``
    sets the repetitions only.

    BLAS runs one thread per rank throughout (see :func:`~.mpi_env.one_blas_thread`).
    """
    with one_blas_thread():
        return _calibrate(comm, sizes, budget_s, collectives, rank_counts, kernels, argv,
                          progress, p2p_sizes or sizes, left_s)


def _calibrate(comm: Any, sizes: list[int], budget_s: float, collectives: tuple[str, ...],
               rank_counts: list[int] | None, kernels: bool, argv: list[str] | None,
               progress: bool, p2p_sizes: list[int],
               left_s: float | None = None) -> MachineProfile | None:
    """The steps of :func:`calibrate`, in order (see the module docstring)."""
    p, rank = comm.Get_size(), comm.Get_rank()
    counts = _checked_counts(sizes, budget_s, rank_counts, p)
    start = time.perf_counter()
    prov = provenance(comm, argv)
    groups = host_groups(comm)
    notes: list[str] = []
    clock = StepClock(comm.bcast(left_s, root=0), budget_s,
                      _shares(p, kernels, groups, prov, collectives))
    kern: dict[str, Any] = {}
    if kernels or p == 1:
        kern = _kernels_step(comm, clock.step("kernels")[0], groups, prov, progress)
    if p == 1:
        notes.append("one rank: kernel figures only, no MPI measurements; "
                     "run under `mpiexec -n 2` or more for network figures")
        _say(comm, progress, "warning: " + notes[-1])
        return MachineProfile(kernels=kern, provenance=prov, notes=notes) if rank == 0 else None
    p2p = _p2p_step(comm, p2p_sizes, clock, groups, prov, notes, progress)
    _host_steps(comm, p2p, p2p_sizes, clock, groups, prov, progress)
    _exchange_step(comm, p2p, clock, groups, notes, progress)
    coll = _collectives_step(comm, collectives, counts, sizes, clock, prov, notes, progress)
    if rank != 0:
        return None
    _fit_collectives(coll, p2p, kern, prov, groups, sizes)
    prov["elapsed_s"] = round(time.perf_counter() - start, 3)
    prov["budget_s"] = budget_s
    return MachineProfile(p2p=p2p, collectives=coll, kernels=kern, provenance=prov, notes=notes)


def _shares(p: int, kernels: bool, groups: dict[str, list[int]], prov: dict[str, Any],
            collectives: tuple[str, ...]) -> dict[str, float]:
    """The nominal shares of the budget of the steps that will run (module docstring)."""
    if p == 1:
        return {"kernels": 1.0}
    pairs = p2p_pairs(groups)
    one_host = "intra-node" in pairs and len(groups) == 1
    regime = "intra-node" if any({0, 1} <= set(r) for r in groups.values()) else "inter-node"
    steps = {"kernels": 0.2 if kernels else 0.0, "p2p": 0.35 if pairs else 0.0,
             "ring": 0.1 if one_host and p > 2 else 0.0,
             "sync": 0.05 if one_host and prov.get("cores") and p > prov["cores"] else 0.0,
             "exchange": 0.05 if regime in pairs else 0.0,
             "collectives": 0.45 if collectives else 0.0}
    return {k: v for k, v in steps.items() if v > 0}


def _checked_counts(sizes: list[int], budget_s: float, rank_counts: list[int] | None,
                    p: int) -> list[int]:
    """The rank counts to measure collectives on, after checking every argument."""
    if not sizes:
        raise ConfigError("sizes: need at least one message size")
    if not (budget_s > 0):
        raise ConfigError(f"budget_s: must be > 0, got {budget_s!r}")
    counts = sorted(set(rank_counts or [p]))
    bad = [k for k in counts if not 2 <= k <= p]
    if bad and p > 1:
        raise ConfigError(f"rank_counts: each must be in 2..{p} (ranks of this run), got {bad}")
    return counts


def _kernels_step(comm: Any, seconds: float, groups: dict[str, list[int]],
                  prov: dict[str, Any], progress: bool) -> dict[str, Any]:
    """Kernel figures on every rank at once, merged on rank 0 (empty elsewhere)."""
    p = comm.Get_size()
    seconds = comm.bcast(seconds, root=0)
    _say(comm, progress, f"kernels on {p} rank(s) (budget {seconds:.1f} s)")
    figs = kernel_figures(budget_s=seconds)
    everyone = comm.gather(figs, root=0)
    return _merge_kernels(everyone, groups, prov.get("cores")) if comm.Get_rank() == 0 else {}


def _local(comm: Any, deadline: float | None) -> float | None:
    """Rank 0's ``deadline`` (``time.monotonic()``) on this rank's own clock."""
    left = comm.bcast(None if deadline is None else deadline - time.monotonic(), root=0)
    return None if left is None else time.monotonic() + left


def _p2p_step(comm: Any, p2p_sizes: list[int], clock: StepClock,
              groups: dict[str, list[int]], prov: dict[str, Any], notes: list[str],
              progress: bool) -> dict[str, Any]:
    """Ping-pong, streaming and exchange per regime (the same on every rank)."""
    if prov["mpi_env"].get("MPIR_CVAR_CH4_PROGRESS_THROTTLE") == "1":
        notes.append(f"MPICH progress throttling on ({prov['ranks']} ranks, {prov['cores']} cores): "
                     "waiting ranks yield their core; small-message times include the sleep")
        _say(comm, progress, notes[-1])
    pairs = p2p_pairs(groups)
    if len(groups) == 1:
        notes.append(f"one host ({next(iter(groups))}): inter-node does not exist in this run; "
                     "the p2p figures are intra-node (shared memory) only")
        _say(comm, progress, notes[-1])
    p2p: dict[str, Any] = {}
    seconds, deadline = clock.step("p2p") if pairs else (0.0, None)
    for i, (regime, pair) in enumerate(pairs.items()):
        _say(comm, progress, f"p2p {regime}: ranks {pair[0]} and {pair[1]}, "
                             f"{len(p2p_sizes)} sizes {p2p_sizes[0]} B .. {p2p_sizes[-1]} B")
        share = seconds / len(pairs)
        end = None if deadline is None else deadline - (len(pairs) - 1 - i) * share
        res = _p2p(comm, pair, p2p_sizes, comm.bcast(share, root=0), _local(comm, end))
        p2p[regime] = comm.bcast(res, root=pair[0])
        for what, got in (("ping-pong", p2p[regime]["sizes_bytes"]),
                          ("streaming", p2p[regime]["stream_sizes_bytes"]),
                          ("exchange", p2p[regime]["exchange"]["sizes_bytes"])):
            note = cut_note(f"p2p {regime} {what}", got, p2p_sizes, clock.budget_s)
            if note:
                notes.append(note)
        for note in p2p[regime].pop("fit_notes"):
            notes.append(f"p2p {regime} piecewise fit: {note}")
            _say(comm, progress, notes[-1])
    if not pairs:
        notes.append("no two ranks share a host: no intra-node figures")
    return p2p


def _host_steps(comm: Any, p2p: dict[str, Any], p2p_sizes: list[int], clock: StepClock,
                groups: dict[str, list[int]], prov: dict[str, Any], progress: bool) -> None:
    """On one host: the ring step of all ranks (more than two) and, where the ranks
    outnumber the cores, the synchronous step (into ``p2p['intra-node']`` on rank 0)."""
    p, rank = comm.Get_size(), comm.Get_rank()
    if "intra-node" in p2p and len(groups) == 1 and p > 2:
        _say(comm, progress, f"ring steps: all {p} ranks exchange with their neighbours")
        seconds, deadline = clock.step("ring")
        ring = mb.ring_exchange(comm, p2p_sizes, comm.bcast(seconds, root=0),
                                deadline=_local(comm, deadline))
        if rank == 0:
            fit = fit_piecewise_hockney(ring["sizes_bytes"], ring["time_s"])
            p2p["intra-node"]["ring_exchange"] = {
                **ring, "segments": [vars(s) for s in fit.segments],
                "rel_error": list(fit.rel_error)}
    if "intra-node" in p2p and len(groups) == 1 and prov.get("cores") and p > prov["cores"]:
        _say(comm, progress, f"synchronous steps: model fwd+bwd then a barrier on {p} ranks "
                             f"sharing {prov['cores']} cores")
        sync = sync_step(comm, model_step(), comm.bcast(clock.step("sync")[0], root=0))
        if rank == 0:
            p2p["intra-node"]["sync_step"] = sync


def _exchange_step(comm: Any, p2p: dict[str, Any], clock: StepClock,
                   groups: dict[str, list[int]], notes: list[str], progress: bool) -> None:
    """The Async EASGD master/worker exchange between ranks 0 and 1
    (:func:`.easgd_exchange.easgd_exchange`), stored on rank 0 as
    ``p2p[regime]['easgd_exchange']`` of the regime the two ranks are in."""
    regime = "intra-node" if any({0, 1} <= set(r) for r in groups.values()) else "inter-node"
    if regime not in p2p:
        notes.append(f"no {regime} figures: the Async EASGD exchange was not timed")
        return
    _say(comm, progress, f"Async EASGD exchange: worker 1 with master 0 ({regime})")
    seconds = comm.bcast(clock.step("exchange")[0], root=0)
    res = _on_first(comm, 2, lambda sub: easgd_exchange(sub, seconds))
    if comm.Get_rank() == 0:
        p2p[regime]["easgd_exchange"] = res


def _collectives_step(comm: Any, collectives: tuple[str, ...], counts: list[int],
                      sizes: list[int], clock: StepClock, prov: dict[str, Any],
                      notes: list[str], progress: bool) -> dict[str, Any]:
    """Each collective on the first ``k`` ranks for every ``k`` of ``counts``; each
    run takes its part of the step's time left when it starts."""
    coll: dict[str, Any] = {}
    if not collectives:
        return coll
    seconds, deadline = clock.step("collectives")
    todo = len(collectives) * len(counts)
    for name in collectives:
        runs = []
        for k in counts:
            share = seconds / todo if deadline is None else \
                max(0.0, deadline - time.monotonic()) / todo
            share, end = comm.bcast(share, root=0), _local(comm, None if deadline is None
                                                          else time.monotonic() + share)
            todo -= 1
            _say(comm, progress, f"{name} on {k} ranks")

            def measure(sub: Any, name: str = name, share: float = share,
                        end: float | None = end) -> dict[str, Any]:
                return mb.collective(sub, name, sizes, share, deadline=end)

            runs.append(_on_first(comm, k, measure))
        runs = [r for r in comm.bcast(runs if comm.Get_rank() == 0 else None, root=0) if r]
        for r in runs:
            moved = [4 * mb.collective_elements(name, n, r["ranks"]) for n in sizes]
            note = cut_note(f"{name} on {r['ranks']} ranks", r["sizes_bytes"], moved,
                            clock.budget_s)
            if note:
                notes.append(note)
        coll[name] = {"algorithm": _algorithm_label(prov), "measurements": runs}
    return coll


def _fit_collectives(coll: dict[str, Any], p2p: dict[str, Any], kern: dict[str, Any],
                     prov: dict[str, Any], groups: dict[str, list[int]],
                     sizes: list[int]) -> None:
    """Fit MPI's allreduce and the project's ring allreduce in place (one host)."""
    if "intra-node" not in p2p or len(groups) != 1:
        return
    if "allreduce" in coll:
        known = {v: k for k, v in MPICH_ALLREDUCE.items()}.get(coll["allreduce"]["algorithm"])
        runs = coll["allreduce"]["measurements"]
        algos = [known] if known else library_allreduce_algorithms(
            prov["mpi_library"], sizes, sorted({int(r["ranks"]) for r in runs}))
        coll["allreduce"]["fit"] = fit_allreduce(runs, p2p["intra-node"], kern.get("reduce_Bps"),
                                                 algorithms=algos, cores=prov["cores"],
                                                 page_fault_s_per_B=kern.get("x_page_fault_s_per_B"))
    if "ring_allreduce" in coll:
        coll["ring_allreduce"]["algorithm"] = "ring"
        coll["ring_allreduce"]["fit"] = fit_allreduce(
            coll["ring_allreduce"]["measurements"], p2p["intra-node"], kern.get("reduce_Bps"),
            algorithms=["ring"], cores=prov["cores"])


def _algorithm_label(prov: dict[str, Any]) -> str:
    env = prov.get("allreduce_algorithm_env", {})
    return env.get("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM") or env.get(
        "OMPI_MCA_coll_tuned_allreduce_algorithm") or "library-default"


def merge_quantiles(tables: list[list[float]]) -> list[float]:
    """Point by point, the median over ranks' quantile tables (still non-decreasing).

    Examples
    --------
    >>> merge_quantiles([[1.0] * 1001, [3.0] * 1001])[:2]
    [2.0, 2.0]
    """
    return [float(v) for v in np.median(np.asarray(tables, dtype=np.float64), axis=0)]


def _merge_kernels(everyone: list[dict[str, Any]], groups: dict[str, list[int]],
                   cores: int | None = None) -> dict[str, Any]:
    """Per-rank figures: median over ranks; host figures: sum over a host's ranks
    (they ran at once), times ``cores / ranks`` where the ranks outnumber the cores
    (a median single call does not show the sharing), median over hosts; the
    quantile tables: :func:`merge_quantiles`."""
    first = everyone[0]
    out: dict[str, Any] = {"noise": {}, "samples": {}, "model": first["model"]}
    for key in first["noise"]:
        out[key] = float(np.median([r[key] for r in everyone]))
        out["noise"][key] = float(max(r["noise"][key] for r in everyone))
        out["samples"][key] = int(sum(r["samples"][key] for r in everyone))
    qtab = first.get("quantiles", {})
    if qtab:  # point by point, the median over ranks
        out["quantiles"] = {key: merge_quantiles([r["quantiles"][key] for r in everyone])
                            for key in qtab}
    for key in ("x_page_fault_s_per_B", "x_kernel_call_s"):
        if key in first:
            out[key] = float(np.median([r[key] for r in everyone]))
    for key, host_key in (("stream_triad_Bps", "stream_triad_host_Bps"),
                          ("gemm_flops", "gemm_host_flops")):
        out[host_key] = float(np.median([
            sum(everyone[r][key] for r in ranks) * min(1.0, (cores or len(ranks)) / len(ranks))
            for ranks in groups.values()]))
    return out
