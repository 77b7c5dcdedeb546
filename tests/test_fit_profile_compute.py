"""A single-device rate that ``dlscale fit`` fitted is applied by ``--profile`` to the
workload it was fitted on, the same way by ``predict``, ``simulate`` and
:func:`dlscale.api.predict`; a compute measured another way wins and is said to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlscale import api
from dlscale.cli import main
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting.fitted_compute import fitted_rate
from dlscale.perfmodel.machine.profile import MachineProfile, load_profile

ROOT = Path(__file__).resolve().parents[1]
K80 = str(ROOT / "validation" / "holdout" / "aws-p2-8xlarge-x8.toml")
ARGS = ["--runtime", "parameter-server", "--batch", "64", "--data", "synthetic"]


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """A fit of TensorFlow's K80 table without its single-device rate (so the
    device's own rate is fitted too)."""
    d = tmp_path_factory.mktemp("fit")
    table = (ROOT / "examples" / "fit" / "tf-k80-resnet50.toml").read_text()
    table = table.replace("[single_device]\nsamples_per_s = 52.4\nbatch = 64\n", "")
    assert "single_device" not in table
    (d / "rates.toml").write_text(table)
    out = d / "fit.json"
    assert main(["fit", K80, "resnet50", "--rates", str(d / "rates.toml"), "--nodes", "1,2,4",
                 *ARGS, "-o", str(out)]) == 0
    return out


def _rows(capsys, argv: list[str]) -> tuple[list[dict], str]:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc["rows"], json.dumps(doc.get("meta", {}))


def test_the_fitted_rate_is_in_the_profile(profile):
    rate, batch, workload = fitted_rate(load_profile(profile))
    assert batch == 64 and workload == "resnet50" and 12.9 < rate < 207


def test_profile_alone_gives_the_answer_of_the_fitted_rate_given_by_hand(profile, capsys):
    rate, batch, _ = fitted_rate(load_profile(profile))
    base = ["predict", K80, "resnet50", "--nodes", "8", *ARGS, "--profile", str(profile)]
    alone, meta = _rows(capsys, base)
    by_hand, _ = _rows(capsys, [*base, "--measured-samples-per-s", f"{rate!r}@{batch}"])
    assert alone == by_hand
    assert "fitted by dlscale fit, profile fit.json" in meta
    without, _ = _rows(capsys, ["predict", K80, "resnet50", "--nodes", "8", *ARGS])
    assert without[0]["samples_per_s"] != alone[0]["samples_per_s"]


def test_the_api_applies_it_as_the_command_does(profile, capsys):
    rows, _ = _rows(capsys, ["predict", K80, "resnet50", "--nodes", "8", *ARGS,
                             "--profile", str(profile)])
    from dlscale.perfmodel.catalog.runtimes import apply_runtime

    cluster = apply_runtime(api.load_cluster(K80, profile=profile), "parameter-server")
    got = api.predict(cluster, "resnet50", [8], profile=profile,
                      workload_overrides={"batch_per_device": 64, "data": "synthetic"})
    assert got.rows[0]["samples_per_s"] == pytest.approx(rows[0]["samples_per_s"], rel=1e-12)


def test_a_measured_rate_given_by_hand_wins_and_is_said_to(profile, capsys):
    capsys.readouterr()
    assert main(["predict", K80, "resnet50", "--nodes", "8", *ARGS, "--profile", str(profile),
                 "--measured-samples-per-s", "40@64"]) == 0
    out = capsys.readouterr().out
    assert "fitted compute" in out and "not applied: --measured-samples-per-s sets" in out


def test_another_workload_does_not_take_it(profile, capsys):
    with_p, _ = _rows(capsys, ["predict", K80, "vgg16", "--nodes", "8", *ARGS,
                               "--profile", str(profile)])
    assert "measured" not in json.dumps(with_p)


def test_simulate_applies_it_too(profile, capsys):
    capsys.readouterr()
    assert main(["simulate", K80, "resnet50", "--nodes", "8", *ARGS, "--profile", str(profile),
                 "--iterations", "2"]) == 0
    assert "samples/s at batch 64 (fitted by dlscale fit, profile fit.json)" in capsys.readouterr().out


def test_a_bad_fitted_compute_is_one_line():
    p = MachineProfile(fitted={"runtime": "nccl", "values": {}, "workload": "resnet50",
                               "compute": {"samples_per_s": -1, "batch": 64}})
    with pytest.raises(ConfigError, match=r"fitted\.compute: needs samples_per_s > 0"):
        fitted_rate(p)
