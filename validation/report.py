"""Text of the published results: the rows table, the distinct quantities, the notes.

:func:`format_results` is what ``dlscale validate published`` prints: one row per
quantity and fidelity (:func:`table_rows`), one line per distinct quantity with each
fidelity's verdict (:func:`format_distinct`), the count and bias lines of
:mod:`.accounting`, and the notes of the misses (their diagnosed causes).

Examples
--------
>>> from dlscale.validation.published import Quantity, compare
>>> row = compare("c", "P", Quantity("e", "efficiency-at-least", 0.9, "", "s"), 0.94)
>>> t = table_rows([row])[0]
>>> t["published"], t["predicted"], t["error"], t["within"]
('>= 90.0%', '94.0%', '+4.0 pp', 'yes')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_distinct", "format_results", "table_rows"]


def _fmt(value: Any, unit: str, kind: str) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if kind in ("efficiency", "fraction"):
        return f"{100 * value:.1f}%"
    if kind == "efficiency-at-least":
        return f">= {100 * value:.1f}%" if unit == "bound" else f"{100 * value:.1f}%"
    if unit == "bytes":
        return f"{value / 2**30:.3g} GiB" if value >= 2**30 else f"{value / 1e6:.3g} MB"
    if abs(value) >= 1e7:
        text = f"{value:.3g}"
    else:
        text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def _fmt_error(row: Mapping[str, Any]) -> str:
    err, unit = row["error"], row["error_unit"]
    if err is None:
        return "n/a"
    if unit in ("pp", "pp-at-least"):
        return f"{err:+.1f} pp"
    if unit == "relative":
        return f"{100 * err:+.1f}%"
    if unit == "difference":
        return f"{err:+g}"
    return str(err)


def _fmt_range(row: Mapping[str, Any]) -> str:
    """``[low-high]`` of a row with a printed range, and whether the published value
    lies inside it ("-" for a row without one)."""
    if row.get("low") is None:
        return "-"
    kind, unit = row["kind"], row["unit"]
    where = {True: "in", False: "out", None: ""}[row.get("in_range")]
    return (f"[{_fmt(row['low'], unit, kind)} - {_fmt(row['high'], unit, kind)}] "
            f"{where}").rstrip()


def table_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Rows formatted for the text table (units, percentages, signs)."""
    out = []
    for r in rows:
        kind = r["kind"]
        out.append({
            "case": r["case"], "quantity": r["quantity"],
            "published": _fmt(r["published"], "bound" if kind == "efficiency-at-least"
                              else r["unit"], kind),
            "predicted": _fmt(r["predicted"], r["unit"], kind),
            "range": _fmt_range(r), "error": _fmt_error(r), "tol": r["tolerance"],
            "within": ({True: "yes", False: "MISS", None: "-"}[r["within"]]
                       + (" (consistency)" if r.get("check") == "consistency" else "")),
            "fidelity": r["fidelity"],
        })
    return out


def format_distinct(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line per distinct quantity: each fidelity's verdict and how it counts."""
    from dlscale.perfmodel.output.tables import format_table
    from dlscale.validation.accounting import distinct_rows

    lines = [{"case": d["case"], "quantity": d["group"], "verdicts": d["verdicts"],
              "counts as": ("consistency check (not counted)" if d["check"] == "consistency"
                            else "yes" if d["within"] else
                            "MISS (split verdicts)" if d["split"] else "MISS")}
             for d in distinct_rows(rows)]
    return format_table(lines, ["case", "quantity", "verdicts", "counts as"])


def format_results(rows: Sequence[Mapping[str, Any]], notes: bool = True) -> str:
    """The results table, the distinct quantities, the count and bias, the miss notes."""
    from dlscale.perfmodel.output.tables import format_table
    from dlscale.validation.accounting import summary_text

    text = (format_table(table_rows(rows)) + "\n\nDistinct quantities (one count each):\n"
            + format_distinct(rows) + "\n\n" + summary_text(rows))
    lines = [f"- {r['case']}/{r['quantity']} ({r['fidelity']}): {r['note']}"
             for r in rows if r["within"] is not True]
    if notes and lines:
        text += "\n\nMisses (with their causes) and predictions:\n" + "\n".join(lines)
    return text
