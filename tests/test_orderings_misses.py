"""The Megatron orderings case's miss texts (validation/case_megatron_orderings.py,
``MISSES``) carry the live model's figures, not typed ones: each figure here is
recomputed from the model the way the text states it. Fails before: the texts were
typed before the transformer path's GPU spread (llmspread merge) and quoted 2.2%,
2.7%, 6.0 ms, 4.6 ms and 8.49 / 4.07 where the model now gives 2.3%, 2.6%, 6.7 ms,
5.1 ms and 7.93 / 3.80."""

from __future__ import annotations

import pytest

from dlscale.validation import case_megatron_orderings as case
from dlscale.validation.published import run_case


def _fig16(micro, batch):
    return case._price(case._M91, tp=8, pp=8, micro=micro, global_batch=batch)


def test_fig16_text_quotes_the_live_figures():
    text = case.MISSES["fig16_best_micro_2_batch128"]
    r1, r2 = _fig16(1, 128), _fig16(2, 128)
    r2b, r4 = _fig16(2, 512), _fig16(4, 512)
    slots = lambda r: r.layout.microbatches + r.layout.pp - 1   # noqa: E731
    above = r1.tflops_per_gpu / r2.tflops_per_gpu - 1
    lo = (r2.iteration_s - r1.iteration_s) / (slots(r1) - slots(r2))
    hi = (r4.iteration_s - r2b.iteration_s) / (slots(r2b) - slots(r4))
    for figure in (f"1 {above:.1%} above 2", f"{1 - r2.compute_s / r1.compute_s:.1%} of b = 1",
                   f"{slots(r1) - slots(r2)} more bubble slots", f"above {lo * 1e3:.1f} ms",
                   f"below {hi * 1e3:.1f} ms"):
        assert figure in text, figure


def test_fig17_text_quotes_the_live_figures():
    text = case.MISSES["fig17_recompute_best_beats_no_recompute_best"]
    with_ = [case._price(case._M145, tp=8, pp=16, global_batch=2 ** i) for i in range(9)]
    without = [case._price(case._M145, tp=8, pp=16, global_batch=2 ** i, recompute="none")
               for i in range(9)]
    best = max(r.layout.global_batch / r.iteration_s for r in with_ if r.fits)
    upto8 = max(r.layout.global_batch / r.iteration_s for r in without[:4])
    cap = without[0].memory_capacity_B / 1e9
    top = max(r.memory.total_B for r in without) / 1e9
    for figure in (f"{best:.2f} / {upto8:.2f} = x{best / upto8:.2f}",
                   f"{without[3].memory.total_B / 1e9:.0f} GB", f"{top:.0f} GB of {cap:.0f}",
                   f"{cap - top:.0f} GB per GPU"):
        assert figure in text, figure


def test_the_rows_note_takes_the_live_text():
    rows, _ = run_case("megatron-orderings")
    missed = {r["quantity"]: r["note"] for r in rows if r["within"] is False}
    assert set(missed) == set(case.MISSES)
    for key, note in missed.items():
        assert note.startswith("MISS: " + case.MISSES[key])


@pytest.mark.parametrize("key", ["nope", ""])
def test_an_unknown_key_is_a_key_error(key):
    with pytest.raises(KeyError):
        case.MISSES[key]
    assert case.MISSES.get(key) is None
