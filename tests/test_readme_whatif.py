"""The README's worked what-if shows what the tool prints today."""

import re
import shlex
from pathlib import Path

from dlscale.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SECTION = README.split("### A worked what-if", 1)[1].split("\n### ", 1)[0]


def test_worked_what_if_table_is_the_tools_output(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = re.search(r"```sh\n(.*?)```", SECTION, re.S).group(1).splitlines()
    shown = re.search(r"```text\n(.*?)```", SECTION, re.S).group(1)
    got = []
    for line in commands:
        args = shlex.split(line)
        if args[:2] != ["dlscale", "predict"]:
            continue
        assert main(args[1:]) == 0
        got.append(capsys.readouterr().out)
    assert len(got) == 3
    assert "".join(got) == shown


def test_worked_what_if_figures_in_the_text_follow_the_table():
    # the efficiencies the paragraph compares are the ones in the table
    shown = re.search(r"```text\n(.*?)```", SECTION, re.S).group(1)
    rows = [[c.split(" [")[0] for c in re.findall(r"\S+ \[[^\]]*\]|\S+", ln)]
            for ln in shown.splitlines() if ln.strip().startswith("4608")]
    col = next(ln.split() for ln in shown.splitlines() if ln.startswith("nodes")).index("iteration_s")
    times = [f"{float(r[col]):.3f}" for r in rows]
    assert times == ["0.154", "0.168", "0.169"]
    assert "0.154 s against 0.168 and 0.169 s" in SECTION
    assert (ROOT / "docs" / "summit-whatif.png").stat().st_size > 10_000
