"""The README's worked example of fitting shows what the tool prints today."""

import re
import shlex
from pathlib import Path

from dlscale.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SECTION = README.split("### Fitting the costs of your own small run", 1)[1].split("\n### ", 1)[0]


def test_fitting_example_is_the_tools_output(capsys, monkeypatch, tmp_path):
    for name in ("examples", "validation"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    commands = re.search(r"```sh\n(.*?)```", SECTION, re.S).group(1).splitlines()
    shown = re.search(r"```text\n(.*?)```", SECTION, re.S).group(1)
    got = []
    for line in commands:
        args = shlex.split(line)
        assert args[0] == "dlscale"
        assert main(args[1:]) == 0
        got.append(capsys.readouterr().out)
    assert [a.split()[1] for a in commands] == ["fit", "predict"]
    assert "".join(got) == shown


def test_fitting_figures_in_the_text_follow_the_output():
    shown = re.search(r"```text\n(.*?)```", SECTION, re.S).group(1)
    row = next(ln for ln in shown.splitlines() if ln.strip().startswith("8 "))
    rate = re.search(r"(\d+,\d{3}) \[", row).group(1)
    # the published 64-GPU rate (examples/fit/tf-k80-resnet50.toml) against the shown one
    error = int(rate.replace(",", "")) / 2744 - 1
    assert f"against {rate} ({100 * error:+.1f} %" in SECTION
