"""Honest accounting of the published cases: distinct quantities, bias, recorded misses.

The result rows of :mod:`.published` are one per quantity and fidelity. This module
turns them into the figures a reader acts on:

- **Distinct quantities.** Rows of one case with one ``group`` (the same published
  figure checked by both fidelities, or stated twice by the paper: a throughput
  derived from a stated time, a speed-up that is a ratio of stated times) are ONE
  quantity. It counts as within tolerance only when every one of its verdicts is
  within; a quantity with split verdicts (e.g. within analytically, missed
  simulated) counts as a miss and is shown as split. Rows with no published value
  (predictions) are not counted.
- **Consistency checks.** A quantity whose published number is an arithmetic
  restatement of a cited input (``check="consistency"``, e.g. Cavdar's 69 MB
  densified buffer = vocab x hidden x 4 bytes, both inputs cited) is shown and
  labelled, but kept outside the count: agreeing with it checks arithmetic, not
  the model.
- **Bias.** The signed mean error of the efficiency rows (every fidelity's row of
  kind ``efficiency``, in percentage points) and the share of those rows of each
  sign. A published lower bound ("above 90%", kind ``efficiency-at-least``) has no
  signed error and is reported on its own (met or not).
- **Recorded misses.** Each case records, next to the diagnosed cause of a miss
  (``MISSES``), the error it had when the cause was diagnosed (``MISS_ERRORS``).
  :func:`miss_band` turns it into the band the miss must stay in: on the same side,
  outside the tolerance, and no larger than recorded (plus a rounding margin). The
  tests fail if a miss grows, changes side or starts passing
  (``tests/test_validation_published.py``).

Examples
--------
>>> from dlscale.validation.published import Quantity, compare
>>> q = Quantity("e", "efficiency", 0.90, "", "s")
>>> rows = [compare("c", "P", q, 0.93), compare("c", "P", q, 0.97, "simulated")]
>>> s = summarize(rows)
>>> s["distinct"], s["distinct_within"], s["split"]
(1, 0, 1)
>>> round(s["bias_pp"], 1), s["above"], s["below"]
(5.0, 2, 0)
>>> miss_band("efficiency", 7.0)
(5.0, 7.19)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dlscale.validation.published import CASE_MODULES, FAMILIES, KINDS, case_family

__all__ = [
    "bias_line",
    "count_line",
    "distinct_rows",
    "miss_band",
    "range_line",
    "summarize",
    "summary_text",
]

#: Margin a recorded miss may grow by before its test fails: a share of the recorded
#: error plus a floor in the error's unit (rounding of the recorded figure).
BAND_SHARE = 0.02
BAND_FLOOR = {"pp": 0.05, "pp-at-least": 0.05, "relative": 0.0005, "difference": 0.0}


def miss_band(kind: str, recorded: float) -> tuple[float, float]:
    """The error range a miss recorded at ``recorded`` must stay in (see module doc).

    ``recorded`` is in the row's error unit (pp, a relative fraction, a difference).
    The band runs from the tolerance edge on the recorded side (exclusive in the
    test: reaching it is within tolerance) to the recorded error plus a margin.

    Examples
    --------
    >>> miss_band("time", -0.164)
    (-0.16778, -0.15)
    >>> miss_band("count", -8)
    (-8.0, 0.0)
    """
    measure, tol, _ = KINDS[kind]
    margin = 0.0 if measure == "difference" else BAND_SHARE * abs(recorded) + BAND_FLOOR[measure]
    if recorded >= 0:
        return (float(tol), round(recorded + margin, 6))
    return (round(recorded - margin, 6), -float(tol) if tol else 0.0)


def _verdict(row: Mapping[str, Any]) -> str:
    return {True: "yes", False: "MISS", None: "-"}[row["within"]]


def distinct_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per distinct quantity with a published value, in row order.

    Keys: ``case``, ``group``, ``check``, ``rows`` (the member rows), ``verdicts``
    (each fidelity's ``yes``/``MISS``, the group's own quantity first, then any
    restatement by name), ``within`` (every verdict within), ``split`` (some within,
    some not).
    """
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if r["within"] is None:
            continue
        key = (r["case"], r.get("group") or r["quantity"])
        d = out.setdefault(key, {"case": r["case"], "group": key[1],
                                 "check": r.get("check", "published"), "rows": []})
        d["rows"].append(r)
    for d in out.values():
        ok = [r["within"] is True for r in d["rows"]]
        d["within"] = all(ok)
        d["split"] = any(ok) and not all(ok)
        parts: dict[str, list[str]] = {}
        for r in d["rows"]:
            parts.setdefault(r["quantity"], []).append(f"{r['fidelity']} {_verdict(r)}")
        d["verdicts"] = "; ".join(
            ("" if q == d["group"] else f"{q}: ") + ", ".join(v)
            for q, v in sorted(parts.items(), key=lambda kv: kv[0] != d["group"]))
    return list(out.values())


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts and the efficiency bias of ``rows`` (see module docstring)."""
    dist = distinct_rows(rows)
    counted = [d for d in dist if d["check"] == "published"]
    consistency = [d for d in dist if d["check"] == "consistency"]
    eff = [float(r["error"]) for r in rows if r["kind"] == "efficiency"
           and r["within"] is not None and r.get("check", "published") == "published"
           and r["error"] is not None]
    bounds = [r for r in rows if r["kind"] == "efficiency-at-least" and r["within"] is not None]
    return {
        "rows": len(rows),
        "compared_rows": sum(r["within"] is not None for r in rows),
        "within_rows": sum(r["within"] is True for r in rows),
        "distinct": len(counted),
        "distinct_within": sum(d["within"] for d in counted),
        "split": sum(d["split"] for d in counted),
        "consistency": len(consistency),
        "consistency_within": sum(d["within"] for d in consistency),
        "efficiency_rows": len(eff),
        "bias_pp": sum(eff) / len(eff) if eff else 0.0,
        "above": sum(e > 0 for e in eff),
        "below": sum(e < 0 for e in eff),
        "exact": sum(e == 0 for e in eff),
        "bounds": len(bounds),
        "bounds_met": sum(r["within"] is True for r in bounds),
        **_range_counts(counted),
        **{f"{k}_{family.replace('-', '_')}": v for family in FAMILIES
           for k, v in _range_counts([d for d in counted
                                      if _family(d["case"]) == family]).items()},
    }


def _family(case: str) -> str | None:
    """The prediction path of a registered case (None for any other name)."""
    return case_family(case) if case in CASE_MODULES else None


def _range_counts(counted: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Distinct quantities with a printed range, those whose published value lies
    inside it (every banded row of the quantity), and the median widths: points for
    efficiencies and shares, relative to the central value for the rest."""
    banded = [d for d in counted if any(r.get("in_range") is not None for r in d["rows"])]
    inside = sum(all(r["in_range"] for r in d["rows"] if r.get("in_range") is not None)
                 for d in banded)
    rows = [r for d in banded for r in d["rows"] if r.get("in_range") is not None]
    pp = sorted(100.0 * (r["high"] - r["low"]) for r in rows
                if r["kind"] in ("efficiency", "efficiency-at-least", "fraction"))
    rel = sorted(100.0 * (r["high"] - r["low"]) / abs(r["predicted"]) for r in rows
                 if r["kind"] not in ("efficiency", "efficiency-at-least", "fraction")
                 and r["predicted"])
    return {"banded": len(banded), "inside": inside, "width_pp": _median(pp),
            "width_pct": _median(rel)}


def _median(v: Sequence[float]) -> float:
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2 if v else float("nan")


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "n/a"


def count_line(s: Mapping[str, Any]) -> str:
    """The count, as the tool prints it and the README shows it.

    >>> count_line({"distinct": 4, "distinct_within": 3, "split": 1, "consistency": 1,
    ...             "consistency_within": 1})
    '3 of 4 distinct published quantities within tolerance (75%); 1 with split verdicts counted as a miss; 1 consistency check (1 agrees) outside the count.'
    """
    n_c = s["consistency"]
    return (f"{s['distinct_within']} of {s['distinct']} distinct published quantities within "
            f"tolerance ({_pct(s['distinct_within'], s['distinct'])}); {s['split']} with split "
            f"verdicts counted as a miss; {n_c} consistency check{'s' if n_c != 1 else ''} "
            f"({s['consistency_within']} agree{'s' if s['consistency_within'] == 1 else ''}) "
            f"outside the count.")


def bias_line(s: Mapping[str, Any]) -> str:
    """The efficiency bias and the share of each sign.

    >>> bias_line({"efficiency_rows": 4, "bias_pp": 2.5, "above": 3, "below": 1, "exact": 0,
    ...            "bounds": 1, "bounds_met": 1})
    'Efficiency bias: mean signed error +2.5 pp over 4 rows; 3 above (75%), 1 below (25%), 0 exact; 1 lower bound (1 met) outside the bias.'
    """
    n = s["efficiency_rows"]
    return (f"Efficiency bias: mean signed error {s['bias_pp']:+.1f} pp over {n} rows; "
            f"{s['above']} above ({_pct(s['above'], n)}), {s['below']} below "
            f"({_pct(s['below'], n)}), {s['exact']} exact; {s['bounds']} lower "
            f"bound{'s' if s['bounds'] != 1 else ''} ({s['bounds_met']} met) outside the bias.")


def _width(v: float, unit: str) -> str:
    return "n/a" if math.isnan(v) else f"{v:.1f}{unit}"


def range_line(s: Mapping[str, Any]) -> str:
    """How many distinct quantities lie inside the printed range, and its median width:
    in all, then for each prediction path (:data:`~.published.FAMILIES`) that has one.

    >>> range_line({"banded": 4, "inside": 1, "width_pp": 7.5, "width_pct": 20.0})
    'Inside the printed range: 1 of 4 distinct quantities with a range (25%); median width 7.5 pp (efficiencies, shares), 20.0% (rates, times, speed-ups).'
    >>> range_line({"banded": 4, "inside": 1, "width_pp": 7.5, "width_pct": 20.0,
    ...             "banded_transformer": 1, "inside_transformer": 0,
    ...             "width_pp_transformer": math.nan, "width_pct_transformer": 6.0})
    'Inside the printed range: 1 of 4 distinct quantities with a range (25%); median width 7.5 pp (efficiencies, shares), 20.0% (rates, times, speed-ups); transformer cases: 0 of 1 (0%), n/a, 6.0%.'
    """
    line = (f"Inside the printed range: {s['inside']} of {s['banded']} distinct quantities "
            f"with a range ({_pct(s['inside'], s['banded'])}); median width "
            f"{_width(s['width_pp'], ' pp')} (efficiencies, shares), "
            f"{_width(s['width_pct'], '%')} (rates, times, speed-ups)")
    for family in FAMILIES:
        key = family.replace("-", "_")
        n = s.get(f"banded_{key}", 0)
        if n:
            inside = s[f"inside_{key}"]
            line += (f"; {family} cases: {inside} of {n} ({_pct(inside, n)}), "
                     f"{_width(s[f'width_pp_{key}'], ' pp')}, "
                     f"{_width(s[f'width_pct_{key}'], '%')}")
    return line + "."


def summary_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Count line, bias line and the row count, as printed after the results table."""
    s = summarize(rows)
    return (f"{count_line(s)}\n{bias_line(s)}\n{range_line(s)}\n({s['within_rows']} of "
            f"{s['compared_rows']} rows within: one row per quantity and fidelity.)")
