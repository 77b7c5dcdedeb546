"""The A100 GEMM pricing beside published per-shape measurements (issue 29): the table
in validation/megatron_mechanisms.md is the live output, the transcription maps each
printed product to the right shape, and the finding it records (the model above every
measurement but its own ceiling's source) is held."""

from __future__ import annotations

import pytest

from dlscale.perfmodel.catalog.devices_2020s import BASE_2020S
from dlscale.perfmodel.compute.gemm import gemm_time_s
from dlscale.perfmodel.training.parallel_time import HBM_ACHIEVABLE_FRACTION
from dlscale.validation import gemm_measurements as gm

#: The elapsed seconds the cookbook's files print beside each rate (4 decimals):
#: ``sample_results/transformer.out`` and ``sample_results/bmm.out``.
PRINTED_S = {
    "qkv_transform": 0.0034, "attention_score (K = d 256)": 0.0011,
    "attention_over_value (n = d 256)": 0.0006, "attention_linear_projection": 0.0012,
    "mlp_h_to_4h": 0.0046, "mlp_4h_to_h": 0.0043, "logit_block": 0.0135,
    "bmm 128 x (1024 x 1024 x 1024)": 0.0012, "bmm 128 x (1024 x 1024, K 2048)": 0.0023,
}


def test_markdown_block_is_the_live_output():
    """Regenerate with ``python -m dlscale.validation.gemm_measurements --write``."""
    text = gm.MARKDOWN.read_text()
    assert text.count(gm.BEGIN) == 1
    assert gm.spliced(text) == text


def test_each_transcribed_shape_does_the_printed_work_in_the_printed_time():
    """2 M N K batch / rate reproduces the file's elapsed time to its rounding: a row
    whose M, N, K or batch were mapped wrongly from the script's argument order
    would miss it by a factor."""
    by_label = {x.label: x for x in gm.MEASUREMENTS}
    assert set(PRINTED_S) <= set(by_label)
    for label, printed in PRINTED_S.items():
        x = by_label[label]
        seconds = 2.0 * x.m * x.n * x.k * x.batch / (x.tflops * 1e12)
        assert seconds == pytest.approx(printed, abs=0.00005 + 1e-9), label


def test_model_column_is_gemm_time_s_on_the_a100():
    dev = BASE_2020S["a100-sxm4-80gb"].for_gemms()
    bw = dev.training_memory_bandwidth_Bps * HBM_ACHIEVABLE_FRACTION
    for x, r in zip(gm.MEASUREMENTS, gm.rows(), strict=True):
        t = gemm_time_s(x.m, x.n, x.k, x.batch, dev.sustained_flops("fp16"), bw, dev.cores)
        assert r["model"] == pytest.approx(2.0 * x.m * x.n * x.k * x.batch / t / 1e12,
                                           rel=1e-3)


def test_the_model_is_above_every_measurement_but_its_ceiling_s_source():
    """The finding of megatron_mechanisms.md: one sign over every other row, the
    largest at the shortest reduction (the attention score product, K = 256)."""
    rs = gm.rows()
    assert rs[0]["label"].startswith("8192^3 (ceiling")
    assert abs(float(rs[0]["error"])) < 0.01          # type: ignore[arg-type]
    rest = rs[1:]
    assert all(float(r["error"]) > 0 for r in rest)   # type: ignore[arg-type]
    worst = max(rest, key=lambda r: float(r["error"]))  # type: ignore[arg-type]
    assert worst["label"] == "attention_score (K = d 256)"


def test_splice_refuses_a_file_without_its_markers():
    with pytest.raises(ValueError, match="markers"):
        gm.spliced("no markers here")
