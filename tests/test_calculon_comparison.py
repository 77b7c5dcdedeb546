"""Calculon beside dlscale (issue 29): the markdown table is the live output, and the
transcription of Calculon's table reproduces its own printed summary."""

from __future__ import annotations

import statistics

import pytest

from dlscale.validation import calculon_comparison as cc
from dlscale.validation import case_megatron_korthikanti as case


def test_markdown_is_the_live_output():
    """dlscale's columns come from the case file now; regenerate the file with
    ``python -m dlscale.validation.calculon_comparison --write`` when they move."""
    assert cc.MARKDOWN.read_text() == cc.render()


def test_transcription_reproduces_calculon_s_own_summary():
    """The recorded table ends "Ave,,3.65%" and "Max,,8.87%"; its printed times are
    the published ones times (1 - Delta) to their two decimals."""
    deltas = [abs(d) for _p, _c, d in cc.CALCULON.values()]
    assert round(statistics.fmean(deltas), 2) == 3.65 and max(deltas) == 8.87
    for key, (pub, printed, delta) in cc.CALCULON.items():
        assert printed == pytest.approx(pub * (1 - delta / 100), abs=0.0051), key


def test_rows_cover_the_case_s_eight_times_with_its_published_values():
    rs = {r["quantity"]: r for r in cc.rows()}
    times = [q for q in case.QUANTITIES if q.name.startswith("time")]
    assert set(cc.CALCULON) == {q.name for q in times}
    for q in times:
        assert rs[q.name]["published"] == q.published
        assert rs[q.name]["dlscale"] == case.run().predicted[q.name]
