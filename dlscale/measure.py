"""The API's questions that hold the model against measurements: what
:func:`dlscale.api.validate` and :func:`dlscale.api.calibrate` run.

- :func:`validate_published`: the seed papers' published cases, one row per
  compared quantity (:mod:`dlscale.validation.published`).
- :func:`validate_local`: calibrate on part of this machine's measurements and
  predict the rest, under ``mpiexec`` (:mod:`dlscale.validation.validate_local`).
- :func:`calibrate`: measure and fit this machine, under ``mpiexec``
  (:mod:`dlscale.validation.calibrate_run`); the profile rides on the result.

The MPI questions start MPI here (:func:`start_mpi`: the library settings that
``MPI_Init`` reads first) unless given a communicator, and end the whole job on a
signal to any rank (:func:`dlscale.validation.mpi_abort.abort_on_signal`). Their
results are rank 0's; the other ranks get a result with no rows and
``meta["rank"]`` set. Writing files is the caller's (``dlscale validate`` and
``dlscale calibrate`` check their outputs on every rank before asking here).

Examples
--------
>>> calibrate_rows(None)
[]
>>> ValidateResult([], {"kind": "published"}).meta["kind"]
'published'
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.results import ResultTable

__all__ = ["PUBLISHED_BASELINE", "CalibrateResult", "ValidateResult", "calibrate",
           "calibrate_rows", "start_mpi", "validate_local", "validate_published"]

#: What the predicted efficiencies of the published cases are measured against.
PUBLISHED_BASELINE = ("predicted efficiencies as predict computes them (against one node "
                      "of the same run); speedups against the reference each case names")


class ValidateResult(ResultTable):
    """Predictions held against measurements, one row per compared case.

    ``validate("published")``: one row per paper, quantity and fidelity
    (``published``, ``predicted``, ``error``, ``tolerance``, ``within``, ...), ``meta``
    holding the counts (``within``, ``compared``, ``rows``), the accounting of the misses
    and the provenance; ``raw`` maps each case to its outputs (for its figure).
    ``validate("local")``: one row per held-out case (``measured_s``, ``predicted_s``,
    ``error``, ``verdict``, ...), ``meta`` the rest of the report (summaries, the fitted
    profile, notes) and the provenance; ``raw`` is the whole report.
    """

    raw: Any = None
    #: ``validate("local", timeline=True)``: the Horovod-format timeline of the first
    #: ``sgd-allreduce`` run (:func:`dlscale.validation.timeline.horovod_timeline`), to
    #: write with :func:`~dlscale.validation.timeline.write_timeline`; else None.
    timeline: Any = None


#: The training run ``validate("local", timeline=True)`` records: synchronous SGD whose
#: gradient is summed by ``MPI_Allreduce``, what Horovod's ``MPI_ALLREDUCE`` runs.
TIMELINE_ALGORITHM = "sgd-allreduce"


class CalibrateResult(ResultTable):
    """A calibration: one row per fitted figure (``kind``, ``name``, ``value``,
    ``unit``), ``meta`` the profile's provenance and notes; ``profile`` is the
    :class:`~dlscale.perfmodel.machine.profile.MachineProfile` itself (``None`` on
    the ranks other than 0), to save with
    :func:`~dlscale.perfmodel.machine.profile.save_profile`."""

    profile: Any = None


def validate_published(cases: Sequence[str] | None = None,
                       fidelities: Sequence[str] | None = None) -> ValidateResult:
    """The published cases (all by default) at each fidelity they offer among
    ``fidelities`` (default: analytical and simulated)."""
    from dlscale.provenance import Provenance
    from dlscale.validation.accounting import summarize
    from dlscale.validation.published import CASE_MODULES, FIDELITIES, get_case, run_cases

    names = _names("cases", cases, CASE_MODULES)
    for n in names:
        get_case(n)
    fids = tuple(_names("fidelities", fidelities, FIDELITIES))
    for f in fids:
        if f not in FIDELITIES:
            raise unknown_name("fidelities", f, FIDELITIES)
    rows, outputs = run_cases(names, fids)
    prov = Provenance(baseline=PUBLISHED_BASELINE)
    meta = {"cases": names, "within": sum(r["within"] is True for r in rows),
            "compared": sum(r["within"] is not None for r in rows),
            "rows": len(rows), **summarize(rows), **prov.meta()}
    out = ValidateResult(rows, meta)
    out.raw = outputs
    return out


def _names(what: str, given: Sequence[str] | None, default: Any) -> list[str]:
    """``given`` as a list of names (``default``'s keys or items when None)."""
    if given is None:
        return list(default)
    if isinstance(given, str) or not all(isinstance(g, str) for g in given):
        raise ConfigError(f"{what}: must be a list of names, got {given!r}")
    return list(given)


def start_mpi(comm: Any = None, yield_mode: str = "auto",
              allreduce_algorithm: str = "default") -> Any:
    """``comm``, or MPI started here and its ``COMM_WORLD``: first the settings that
    ``MPI_Init`` reads (the library's allreduce algorithm, progress throttling of
    oversubscribed hosts; see :mod:`dlscale.validation.mpi_env`).

    With ``comm`` given MPI has started and those settings cannot act: anything but
    their defaults is refused."""
    from dlscale.validation.mpi_env import (
        get_mpi,
        oversubscription_env,
        select_allreduce_algorithm,
    )

    if comm is not None:
        for name, value, default in (("yield_mode", yield_mode, "auto"),
                                     ("allreduce_algorithm", allreduce_algorithm, "default")):
            if value != default:
                raise ConfigError(f"{name}: MPI reads it when it starts; with comm given it "
                                  f"has started, so {name}={value!r} cannot act (leave it "
                                  f"{default!r})")
        return comm
    select_allreduce_algorithm(allreduce_algorithm)
    oversubscription_env(yield_mode)
    return get_mpi().COMM_WORLD


def _positive(name: str, value: Any) -> float:
    """``value`` as a float > 0, else a one-line refusal naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{name}: must be > 0, got {value!r}")
    return float(value)


def validate_local(*, comm: Any = None, min_size: int = 1024, max_size: int = 64 << 20,
                   budget_s: float = 60.0, iterations: int = 500, rounds: int = 8,
                   algorithms: Sequence[str] | None = None, oversubscribe: bool = False,
                   yield_mode: str = "auto", progress: bool = False,
                   argv: list[str] | None = None, timeline: bool = False) -> ValidateResult:
    """:func:`dlscale.validation.validate_local.validate_local` on ``comm`` (default:
    MPI started here), its report as a :class:`ValidateResult`; with ``timeline``, the
    first :data:`TIMELINE_ALGORITHM` run's Horovod-format timeline on rank 0's result
    (``.timeline``)."""
    from dlscale.validation.mpi_abort import abort_on_signal
    from dlscale.validation.mpi_training import TRAINING_ALGORITHMS
    from dlscale.validation.validate_local import validate_local as _validate_local

    algos = tuple(_names("algorithms", algorithms, TRAINING_ALGORITHMS))
    bad = [a for a in algos if a not in TRAINING_ALGORITHMS]
    if bad:
        raise ConfigError(f"algorithms: unknown {bad}; valid: {', '.join(TRAINING_ALGORITHMS)}")
    if not isinstance(timeline, bool):
        raise ConfigError(f"timeline: must be True or False, got {timeline!r}")
    if timeline and TIMELINE_ALGORITHM not in algos:
        raise ConfigError(f"timeline: records the first {TIMELINE_ALGORITHM} run; algorithms "
                          f"{', '.join(algos)} has none (add {TIMELINE_ALGORITHM})")
    budget = _positive("budget_s", budget_s)
    for name, value in (("iterations", iterations), ("rounds", rounds)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name}: must be an integer >= 1, got {value!r}")
    comm = start_mpi(comm, yield_mode)
    with abort_on_signal(comm, "dlscale validate"):  # a signal on any rank ends the job
        report = _validate_local(comm, min_size, max_size, budget, iterations, algos,
                                 progress=progress, argv=argv, rounds=rounds,
                                 oversubscribe=oversubscribe,
                                 **({"timeline": TIMELINE_ALGORITHM} if timeline else {}))
    if report is None:
        return ValidateResult([], {"kind": "local", "rank": comm.Get_rank()})
    spans = report.pop("timeline", None)
    prov = local_provenance(report)
    out = ValidateResult(report["rows"], {"kind": "local", "rank": 0,
                                          **{k: v for k, v in report.items() if k != "rows"},
                                          **prov.meta()})
    out.raw = report
    if timeline:
        from dlscale.validation.timeline import horovod_timeline

        if spans is None:
            raise RuntimeError("validate local: asked for a timeline, and the run recorded none")
        out.timeline = horovod_timeline(spans, source=(
            f"dlscale {prov.version} validate local: the first {TIMELINE_ALGORITHM} run of "
            f"{rounds} round(s), {iterations} timed iterations"))
    return out


def local_provenance(report: dict[str, Any]) -> Any:
    """The :class:`~dlscale.provenance.Provenance` of a ``validate local`` report: this
    version, the profile the run fitted (its hosts, ranks and date, and the median
    held-out allreduce error it measured), no efficiency baseline."""
    from dlscale.provenance import NO_BASELINE, ProfileSource, Provenance

    prov = report.get("profile", {}).get("provenance", {})
    err = report.get("summary", {}).get("allreduce", {}).get("median_abs_error")
    ranks = prov.get("ranks")
    src = ProfileSource(path="fitted in this run", hosts=tuple(prov.get("hosts", ())),
                        ranks=ranks if isinstance(ranks, int) else None,
                        date=str(prov.get("date", "")),
                        held_out_error=float(err) if isinstance(err, (int, float)) else None)
    return Provenance(profile=src, baseline=NO_BASELINE)


def calibrate(sizes: Sequence[int] | None = None, *, comm: Any = None, budget_s: float = 60.0,
              collectives: Sequence[str] | None = None, rank_counts: Sequence[int] | None = None,
              kernels: bool = True, allreduce_algorithm: str = "default",
              yield_mode: str = "auto", progress: bool = False, argv: list[str] | None = None,
              started: float | None = None) -> CalibrateResult:
    """:func:`dlscale.validation.calibrate_run.calibrate` on ``comm`` (default: MPI
    started here) within ``budget_s`` counted from ``started`` (a
    :func:`time.monotonic` reading; default: now); the profile on the result."""
    from dlscale.validation import microbench as mb
    from dlscale.validation.calibrate_run import calibrate as _calibrate
    from dlscale.validation.mpi_abort import abort_on_signal

    picked = list(mb.message_sizes(1, 64 << 20) if sizes is None else sizes)
    if not picked or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                         for n in picked):
        raise ConfigError(f"sizes: must be message sizes in bytes, integers >= 1, got {sizes!r}")
    names = tuple(_names("collectives", collectives, mb.COLLECTIVES))
    bad = [c for c in names if c not in mb.COLLECTIVES]
    if bad:
        raise ConfigError(f"collectives: unknown {bad}; valid: {', '.join(mb.COLLECTIVES)}")
    budget = _positive("budget_s", budget_s)
    start = time.monotonic() if started is None else started
    comm = start_mpi(comm, yield_mode, allreduce_algorithm)
    with abort_on_signal(comm, "dlscale calibrate"):  # a signal on any rank ends the job
        if kernels:  # the model step trains on the digits: say so before measuring
            from dlscale.kernels.data import digits_missing

            if (why := digits_missing()) is not None:
                raise ConfigError(f"calibrate: the model step (skip it with --no-kernels): "
                                  f"{why}")
        profile = _calibrate(comm, picked, budget_s=budget, collectives=names,
                             rank_counts=None if rank_counts is None else list(rank_counts),
                             kernels=kernels, argv=argv, progress=progress,
                             left_s=budget - (time.monotonic() - start))
    if comm.Get_rank() != 0 or profile is None:
        return CalibrateResult([], {"rank": comm.Get_rank()})
    took = time.monotonic() - start
    profile.provenance["command_s"] = round(took, 3)
    if took > budget:
        profile.notes.append(
            f"took {took:.1f} s, over --budget-s {budget:g}: start-up and the "
            f"least each step measures (two sizes) did not fit in it")
    out = CalibrateResult(calibrate_rows(profile),
                          {"rank": 0, "provenance": dict(profile.provenance),
                           "notes": list(profile.notes)})
    out.profile = profile
    return out


def calibrate_rows(profile: Any) -> list[dict[str, Any]]:
    """The fitted figures of a profile, one row each: point-to-point latency and
    bandwidth per regime, each kernel figure, each collective fit's error."""
    if profile is None:
        return []
    rows = []
    for regime, e in profile.p2p.items():
        rows += [{"kind": "p2p", "name": f"{regime} latency_s", "value": e["latency_s"],
                  "unit": "s"},
                 {"kind": "p2p", "name": f"{regime} bandwidth_Bps", "value": e["bandwidth_Bps"],
                  "unit": "B/s"}]
    rows += [{"kind": "kernel", "name": name, "value": value,
              "unit": "s" if name.endswith("_s") else "flop/s" if name.endswith("flops")
              else "B/s"}
             for name, value in profile.kernels.items()
             if isinstance(value, (int, float)) and not isinstance(value, bool)]
    rows += [{"kind": "collective", "name": f"{name} rms_rel_error",
              "value": c["fit"]["rms_rel_error"], "unit": "1"}
             for name, c in profile.collectives.items() if c.get("fit")]
    return rows
