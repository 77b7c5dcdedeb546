"""One front end (issue 28): the command line asks the Python API, which asks the layers."""

from __future__ import annotations

import dlscale.api
from dlscale import cli


def test_predict_command_asks_the_api(monkeypatch, capsys):
    calls = []
    real = dlscale.api.predict

    def spy(*args, **kwargs):
        calls.append(kwargs.get("baseline"))
        return real(*args, **kwargs)

    monkeypatch.setattr(dlscale.api, "predict", spy)
    assert cli.main(["predict", "summit", "resnet50", "--nodes", "1,4", "--baseline",
                     "device"]) == 0
    assert calls == ["device"]
    out = capsys.readouterr().out
    assert "efficiency against 1 device" in out or "1 device" in out


def test_api_and_command_give_the_same_rows():
    api = dlscale.api.predict("summit", "resnet50", [1, 4])
    model = api.raw.to_rows()
    for row, full in zip(model, api.rows, strict=True):
        assert all(full[k] == v for k, v in row.items())
    assert api.meta["baseline"] == "node"


def test_plan_and_sweep_commands_ask_the_api(monkeypatch, capsys, tmp_path):
    asked = []
    for name in ("plan", "sweep"):
        real = getattr(dlscale.api, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            asked.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(dlscale.api, name, spy)
    assert cli.main(["plan", "resnet50", "--cluster", "summit", "--nodes", "1,2",
                     "--samples", "1e6"]) in (0, 1)
    study = tmp_path / "s.toml"
    study.write_text('name = "front"\ncluster = "summit"\nworkload = "resnet50"\n'
                     'nodes = [1, 2]\n[vary]\ncollective = ["ring", "rabenseifner"]\n')
    assert cli.main(["sweep", str(study), "--executor", "serial", "--quiet",
                     "--no-plots"]) == 0
    assert asked == ["plan", "sweep"]
    capsys.readouterr()
