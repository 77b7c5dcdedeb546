"""README's transformer quick start: the plan it shows is the live command's output,
byte for byte, and the layout it names is predict's answer for it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dlscale.cli import main

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Quick start for a transformer: plan its parallel layout"


def _blocks() -> list[tuple[str, str]]:
    readme = (ROOT / "README.md").read_text()
    text = readme[readme.index(SECTION):]
    text = text[:text.index("\n## ")]
    return re.findall(r"```(sh|text)\n(.*?)\n```", text, re.S)


def test_the_plan_shown_is_the_live_output(capsys):
    blocks = _blocks()
    assert [k for k, _ in blocks[:2]] == ["sh", "text"]
    argv = shlex.split(blocks[0][1])
    assert argv[0] == "dlscale"
    capsys.readouterr()
    assert main(argv[1:]) == 0
    assert capsys.readouterr().out.rstrip("\n") == blocks[1][1]


def test_the_layout_named_is_the_plans_best(capsys):
    blocks = _blocks()
    best = next(ln for ln in blocks[1][1].splitlines() if ln.startswith("best: "))
    argv = shlex.split(blocks[2][1])
    assert argv[:2] == ["dlscale", "predict"]
    flags = dict(zip(argv[4::2], argv[5::2], strict=False))
    layout = best.split(": ")[1]
    assert f"tp {flags['--tp']}, pp {flags['--pp']}," in layout
    assert f"interleaved v {flags['--virtual']}, zero {flags['--zero']}" in layout
    capsys.readouterr()
    assert main(argv[1:]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.lstrip().startswith("64 ")]
    tflops = best.split(": ")[2].split(" TFLOP/s")[0]
    # the best line carries the band as predict prints it: "412.4 [374.5-437.4]"
    assert len(row) == 1 and " [" in tflops and f" {tflops}" in row[0]
