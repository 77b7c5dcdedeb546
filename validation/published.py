"""Published results of the seed papers, reproduced point by point with the error shown.

Each paper is one *case* module (``case_you_sc17``, ``case_cavdar_isc19``,
``case_codreanu_resnet50``, ``case_laanait_summit``). A case lists its
:class:`Quantity` s (the published numbers, each with its source in
``reference/published-results.md``), computes a :class:`CaseOutput` (predicted
values and the scaling curves for its figure) for one fidelity, and names in
``MISSES`` the quantities the model misses, each with its diagnosed cause. This
module holds the registry, compares prediction with publication
(:func:`compare`), runs cases (:func:`run_cases`) and draws one figure per paper;
:mod:`.report` formats the results, :mod:`.accounting` counts them (distinct
quantities, consistency checks, efficiency bias, recorded misses) and :mod:`.readme`
writes them into ``validation/README.md``. The command ``dlscale validate published``
that runs them lives in :mod:`dlscale.commands.validate_published`.

Error and tolerance by kind of quantity (the accuracy target of the issue):

========== ============================================ ==========
kind       error                                        tolerance
========== ============================================ ==========
efficiency predicted - published, percentage points     5 pp
fraction   (share of time) the same                     5 pp
time       (predicted - published) / published          15 %
throughput relative, as above                           15 %
speedup    relative, as above                           15 %
memory     relative, as above                           15 %
scale      relative (a node count where a limit is hit)  15 %
count      predicted - published (e.g. the largest P)   exact
ordering   "right" or "wrong"                           right
========== ============================================ ==========

A quantity the fidelity cannot predict at all has ``predicted=None`` and is a miss
whose note says why.

Examples
--------
>>> q = Quantity("eff", "efficiency", 0.93, "", "published-results 4")
>>> r = compare("demo", "Paper", q, 0.90, "analytical")
>>> round(r["error"], 1), r["within"], r["tolerance"]
(-3.0, True, '5 pp')
>>> compare("demo", "Paper", Quantity("t", "time", 100.0, "s", ""), 120.0)["within"]
False
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = [
    "BANDED_KINDS",
    "CASE_MODULES",
    "CHECKS",
    "FAMILIES",
    "FIDELITIES",
    "KINDS",
    "ROW_KEYS",
    "CaseOutput",
    "Curve",
    "Quantity",
    "case_family",
    "compare",
    "get_case",
    "miss_key",
    "plot_case",
    "run_case",
    "run_cases",
]

#: Case name -> module under dlscale.validation.
CASE_MODULES: dict[str, str] = {
    "you-sc17": "case_you_sc17",
    "cavdar-isc19": "case_cavdar_isc19",
    "codreanu-resnet50": "case_codreanu_resnet50",
    "laanait-summit": "case_laanait_summit",
    "megatron-sc21": "case_megatron_sc21",
    "megatron-korthikanti": "case_megatron_korthikanti",
    "megatron-orderings": "case_megatron_orderings",
    "megatron-ci-memory": "case_megatron_ci_memory",
}

#: Fidelities a case may offer.
FIDELITIES = ("analytical", "simulated")

#: The prediction paths a case checks (its module's ``FAMILY``, ``"data-parallel"``
#: unless it says otherwise): ``predict``'s data-parallel path or its transformer
#: path (tensor, pipeline and data parallelism).
FAMILIES = ("data-parallel", "transformer")

#: kind -> (error measure, tolerance, tolerance label).
KINDS: dict[str, tuple[str, float, str]] = {
    "efficiency": ("pp", 5.0, "5 pp"),
    # a published lower bound ("above 90%"): met by any prediction at or above the
    # bound less the tolerance; the error is still shown against the bound
    "efficiency-at-least": ("pp-at-least", 5.0, ">= bound - 5 pp"),
    "fraction": ("pp", 5.0, "5 pp"),
    "time": ("relative", 0.15, "15%"),
    "throughput": ("relative", 0.15, "15%"),
    "speedup": ("relative", 0.15, "15%"),
    "memory": ("relative", 0.15, "15%"),
    "count": ("difference", 0.0, "exact"),
    "scale": ("relative", 0.15, "15%"),
    "ordering": ("ordering", 0.0, "right"),
}

#: Kinds a case's printed range covers: the answers ``predict`` prints with a band
#: (times, rates, efficiencies and what is derived from them), not memory, counts,
#: node-count limits or orderings.
BANDED_KINDS = ("efficiency", "efficiency-at-least", "fraction", "time", "throughput",
                "speedup")

#: What a quantity's row checks: the model ("published") or only arithmetic on a
#: cited input ("consistency", outside the count).
CHECKS = ("published", "consistency")

#: Keys of a result row, in column order.
ROW_KEYS = ("case", "paper", "quantity", "kind", "published", "predicted", "unit", "error",
            "error_unit", "tolerance", "within", "fidelity", "note", "source", "group", "check",
            "low", "high", "in_range")


@dataclass(frozen=True)
class Quantity:
    """One published number.

    Attributes
    ----------
    name : str
        Short identifier, unique within its case (also the test id).
    kind : str
        One of :data:`KINDS`.
    published : float, str or None
        The published value (fractions as fractions: 0.93, not 93); for an ordering,
        the published order as text; ``None`` for a prediction the paper has no
        number for (shown, never counted as within or missed).
    unit : str
        Unit of ``published`` (``""`` for fractions, factors and orderings).
    source : str
        Where the number comes from (a section of published-results.md).
    group : str
        The distinct published quantity this row checks (default: ``name``). Two
        quantities with one group are one published figure stated twice (a throughput
        the paper derives from a stated time, a speed-up that is a ratio of stated
        times) and count once (:mod:`.accounting`).
    check : {"published", "consistency"}
        ``"consistency"``: the published number is an arithmetic restatement of a
        cited input (e.g. a buffer of ``vocab x hidden x 4`` bytes where vocab and
        hidden are the inputs), so agreeing with it checks the arithmetic, not the
        model; shown, labelled, and kept outside the count.
    """

    name: str
    kind: str
    published: float | str | None
    unit: str
    source: str
    group: str = ""
    check: str = "published"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise unknown_name("quantity kind", self.kind, KINDS)
        if self.check not in CHECKS:
            raise unknown_name("quantity check", self.check, CHECKS)


@dataclass(frozen=True)
class Curve:
    """One panel of a paper's figure: a predicted curve and the published points on it.

    ``points`` are ``(x, y, label)`` of published values; ``x``/``y`` the prediction.
    """

    title: str
    xlabel: str
    ylabel: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    points: tuple[tuple[float, float, str], ...] = ()
    logx: bool = True
    #: More predicted lines: ``(label, x, y)``.
    extra: tuple[tuple[str, tuple[float, ...], tuple[float, ...]], ...] = ()
    #: Label of the main predicted line.
    label: str = "predicted (analytical)"


@dataclass(frozen=True)
class CaseOutput:
    """What a case computes for one fidelity.

    Attributes
    ----------
    predicted : dict
        Quantity name -> predicted value (float, or text for an ordering; ``None`` if
        this fidelity cannot predict it). An ordering's value is ``(text, right)``.
    details : dict
        Quantity name -> short explanation shown in the note (which term dominates).
    curves : list of Curve
        Panels of the paper's figure.
    """

    predicted: dict[str, Any]
    details: dict[str, str] = field(default_factory=dict)
    curves: list[Curve] = field(default_factory=list)


def get_case(name: str) -> Any:
    """The case module called ``name`` (see :data:`CASE_MODULES`).

    Examples
    --------
    >>> get_case("you-sc17").PAPER.startswith("You")
    True
    >>> get_case("you")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: case: unknown name 'you'; valid: ...
    """
    if name not in CASE_MODULES:
        raise unknown_name("case", name, CASE_MODULES)
    return importlib.import_module(f"dlscale.validation.{CASE_MODULES[name]}")


def compare(case: str, paper: str, q: Quantity, predicted: Any, fidelity: str = "analytical",
            note: str = "") -> dict[str, Any]:
    """One result row (keys :data:`ROW_KEYS`): the error of ``predicted`` against ``q``.

    For an ordering ``predicted`` is ``(text, right)``.
    """
    measure, tol, label = KINDS[q.kind]
    row: dict[str, Any] = {
        "case": case, "paper": paper, "quantity": q.name, "kind": q.kind,
        "published": q.published,
        "predicted": None, "unit": q.unit, "error": None, "error_unit": measure,
        "tolerance": label, "within": False, "fidelity": fidelity, "note": note,
        "source": q.source, "group": q.group or q.name, "check": q.check,
        "low": None, "high": None, "in_range": None,
    }
    if q.published is None:
        row.update(predicted=predicted, within=None, tolerance="",
                   note=note or "prediction; no published value")
        return row
    if predicted is None:
        return row
    if measure == "ordering":
        text, right = predicted
        row.update(predicted=text, error="right" if right else "wrong", within=bool(right))
        return row
    pub, pred = float(q.published), float(predicted)
    row["predicted"] = pred
    if measure == "pp":
        err = 100.0 * (pred - pub)
        within = abs(err) <= tol + 1e-9
    elif measure == "pp-at-least":
        err = 100.0 * (pred - pub)
        within = err >= -tol - 1e-9 and pred <= 1.0 + 1e-9
    elif measure == "relative":
        err = (pred - pub) / pub
        within = abs(err) <= tol + 1e-12
    else:
        err = pred - pub
        within = err == 0
    row.update(error=err, within=bool(within))
    return row


def miss_key(quantity: str, fidelity: str) -> str:
    """Key of a miss in a case's ``MISSES``: the quantity, ``@fidelity`` unless analytical.

    >>> miss_key("eff", "analytical"), miss_key("eff", "simulated")
    ('eff', 'eff@simulated')
    """
    return quantity if fidelity == "analytical" else f"{quantity}@{fidelity}"


def case_family(name: str) -> str:
    """The prediction path case ``name`` checks, one of :data:`FAMILIES`.

    Parameters
    ----------
    name : str
        A case of :data:`CASE_MODULES`.

    Returns
    -------
    str
        Its module's ``FAMILY``, ``"data-parallel"`` where it names none.

    Raises
    ------
    ConfigError
        For a case that is not registered or names a family not in :data:`FAMILIES`.

    Examples
    --------
    >>> case_family("you-sc17"), case_family("megatron-sc21")
    ('data-parallel', 'transformer')
    """
    family = getattr(get_case(name), "FAMILY", "data-parallel")
    if family not in FAMILIES:
        raise ConfigError(f"FAMILY: case {name!r} says {family!r}; allowed: "
                          f"{', '.join(FAMILIES)}")
    return str(family)


def run_case(name: str, fidelity: str = "analytical") -> tuple[list[dict[str, Any]], CaseOutput]:
    """Rows and output of case ``name`` at ``fidelity``.

    A row that misses its tolerance carries the case's diagnosed cause
    (``MISSES[miss_key(quantity, fidelity)]``) in its note; one listed as a miss that now passes says so.
    """
    mod = get_case(name)
    if fidelity not in mod.FIDELITIES:
        raise ConfigError(f"fidelity: case {name!r} offers {', '.join(mod.FIDELITIES)}, "
                          f"got {fidelity!r}")
    out: CaseOutput = mod.run(fidelity)
    bands = _bands(mod, fidelity, out)
    rows = []
    for q in mod.QUANTITIES:
        if q.name not in out.predicted:
            continue
        row = compare(name, mod.PAPER, q, out.predicted[q.name], fidelity)
        _with_band(row, q, bands.get(q.name))
        parts = [out.details.get(q.name, "")]
        key = miss_key(q.name, fidelity)
        if row["within"] is None:
            parts.insert(0, "PREDICTION (no published value)")
        elif not row["within"]:
            parts.insert(0, "MISS: " + mod.MISSES.get(key, "cause not yet diagnosed"))
        elif key in mod.MISSES:
            parts.insert(0, "listed as a miss but within tolerance")
        row["note"] = "; ".join(p for p in parts if p)
        rows.append(row)
    return rows, out


def _bands(mod: Any, fidelity: str, out: CaseOutput) -> dict[str, tuple[float, float]]:
    """The printed range of each quantity of a case that offers one (``BANDED``, the
    analytical fidelity: :mod:`.banded`)."""
    if fidelity != "analytical" or not getattr(mod, "BANDED", False):
        return {}
    from dlscale.validation.banded import case_bands

    return case_bands(mod.run, fidelity, out.predicted)


#: The answer of ``predict`` whose measurement repeatability
#: (:mod:`dlscale.perfmodel.training.repeatability`) a banded kind takes: a rate, a time,
#: or a ratio of two runs; a share (``fraction``) is not a measured rate and keeps its band.
_MEASURED_AS = {"throughput": "samples_per_s", "time": "iteration_s", "efficiency": "efficiency",
                "efficiency-at-least": "efficiency", "speedup": "efficiency"}


def _measured(kind: str, low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` widened as ``predict`` widens the answer of the same kind."""
    import numpy as np

    from dlscale.perfmodel.training.repeatability import widen

    if kind not in _MEASURED_AS:
        return low, high
    lo, hi = widen(_MEASURED_AS[kind], np.array([low]), np.array([high]))
    return float(lo[0]), float(hi[0])


def _with_band(row: dict[str, Any], q: Quantity, band: tuple[float, float] | None) -> None:
    """Set ``low``, ``high`` and ``in_range`` (the published value inside the range) of
    a numeric row with a band."""
    if band is None or row["predicted"] is None or q.kind not in BANDED_KINDS:
        return
    low, high = _measured(q.kind, *band)
    row.update(low=low, high=high)
    if isinstance(q.published, (int, float)) and not isinstance(q.published, bool):
        pub = float(q.published)
        # a lower bound ("above 90%") is inside when the range reaches it
        row["in_range"] = (high >= pub - 1e-12 if q.kind == "efficiency-at-least"
                           else low - 1e-12 <= pub <= high + 1e-12)


def run_cases(names: Iterable[str] | None = None, fidelities: Sequence[str] = FIDELITIES
              ) -> tuple[list[dict[str, Any]], dict[str, list[CaseOutput]]]:
    """Run cases (all by default) at every fidelity each offers among ``fidelities``."""
    rows: list[dict[str, Any]] = []
    outputs: dict[str, list[CaseOutput]] = {}
    for name in names or CASE_MODULES:
        mod = get_case(name)
        for fid in fidelities:
            if fid in mod.FIDELITIES:
                r, out = run_case(name, fid)
                rows.extend(r)
                outputs.setdefault(name, []).append(out)
    return rows, outputs


def plot_case(name: str, outputs: Sequence[CaseOutput], path: str | Path,
              subtitle: str = "") -> Path:
    """Draw the paper's figure (one panel per curve) to ``path``, atomically;
    ``subtitle`` (what produced it) goes under the paper's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlscale.perfmodel.output.atomicio import atomic_write_with

    curves = [c for out in outputs[:1] for c in out.curves]
    mod = get_case(name)
    fig, axes = plt.subplots(1, max(len(curves), 1), figsize=(5.2 * max(len(curves), 1), 4.2),
                             squeeze=False)
    for ax, c in zip(axes[0], curves, strict=False):
        ax.plot(c.x, c.y, "-", color="C0", label=c.label)
        for j, (label, ex, ey) in enumerate(c.extra):
            ax.plot(ex, ey, "--", color=f"C{j + 5}", label=label)
        for i, (px, py, label) in enumerate(c.points):
            ax.plot([px], [py], "o", color=f"C{i + 1}", label=f"published: {label}")
        if c.logx:
            ax.set_xscale("log", base=2)
        ax.set_title(c.title, fontsize=9)
        ax.set_xlabel(c.xlabel)
        ax.set_ylabel(c.ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(mod.PAPER + (f"\n{subtitle}" if subtitle else ""), fontsize=10 if not subtitle
                 else 8)
    fig.tight_layout()
    target = Path(path)
    atomic_write_with(target, lambda tmp: fig.savefig(tmp, format=target.suffix[1:] or "png",
                                                      dpi=110))
    plt.close(fig)
    return target

