"""Sweeps answer network what-ifs: both fidelities move with the fabric, and say which
network model they used."""

import json

import pytest

import dlscale.api as dl


def _study(fidelity, collective="ring"):
    return {"name": f"bw-{fidelity}", "cluster": "summit", "workload": "resnet50",
            "nodes": "64", "fidelity": fidelity,
            "vary": {"network.link.bandwidth_GBps": [1.0, 12.5], "collective": [collective]}}


@pytest.mark.parametrize("fidelity", ["analytical", "simulated"])
def test_a_sweep_over_link_bandwidth_gives_different_rows(tmp_path, fidelity):
    res = dl.sweep(_study(fidelity), tmp_path, executor="serial", plots=False)
    rows = {r["network.link.bandwidth_GBps"]: r for r in res.to_rows() if r["status"] == "ok"}
    assert set(rows) == {1.0, 12.5}
    assert rows[1.0]["comm_s"] > 1.5 * rows[12.5]["comm_s"]
    assert rows[1.0]["iteration_s"] > rows[12.5]["iteration_s"]
    want = "analytical" if fidelity == "analytical" else "fast"
    assert {r["network"] for r in rows.values()} == {want}
    meta = json.loads((tmp_path / "results.json").read_text())["meta"]
    assert meta["network"] == want and meta["fidelity"] == fidelity


def test_simulated_and_analytical_sweeps_agree_on_a_fat_tree(tmp_path):
    ana = dl.sweep(_study("analytical", "rabenseifner"), tmp_path / "a", executor="serial",
                   plots=False).to_rows()
    sim = dl.sweep(_study("simulated", "rabenseifner"), tmp_path / "s", executor="serial",
                   plots=False).to_rows()
    for a, s in zip(ana, sim, strict=True):
        assert s["iteration_s"] == pytest.approx(a["iteration_s"], rel=0.05)
