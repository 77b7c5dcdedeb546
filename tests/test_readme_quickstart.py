"""The README's first example shows what the tool prints: the stack's own allreduce
choice, then the flat ring as a what-if, with the figures the text quotes."""

import re
from pathlib import Path

from dlscale.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SECTION = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def _cells(line: str) -> list[str]:
    """A table line's cells; ``0.93 [0.71-0.95]`` (a value and its range) is one."""
    return re.findall(r"\S+ \[[^\]]*\]|\S+", line)


def _row(table: str, nodes: str) -> dict[str, str]:
    """The central values of the row for ``nodes`` (its range left out)."""
    header = next(ln.split() for ln in table.splitlines() if ln.split()[:1] == ["nodes"])
    return dict(zip(header, (c.split(" [")[0] for c in next(
        _cells(ln) for ln in table.splitlines() if ln.split()[:1] == [nodes])), strict=True))


def test_quick_start_shows_the_range():
    """Each time, rate and efficiency has its band after it; the text quotes it."""
    shown = re.findall(r"```text\n(.*?)```", SECTION, re.S)
    line = next(ln for ln in shown[0].splitlines() if ln.split()[:1] == ["4608"])
    eff = next(c for c in _cells(line) if c.startswith(_row(shown[0], "4608")["efficiency"]))
    assert re.fullmatch(r"[\d.]+ \[[\d.]+-[\d.]+\]", eff), eff
    assert f"`{eff}`" in SECTION


def test_quick_start_tables_are_the_tools_output(capsys):
    shown = re.findall(r"```text\n(.*?)```", SECTION, re.S)
    assert len(shown) == 2
    assert main(["predict", "summit", "resnet50", "--nodes", "1-4608"]) == 0
    assert capsys.readouterr().out == shown[0]
    assert "dlscale predict summit resnet50 --nodes 1-4608 --collective ring" in SECTION
    assert main(["predict", "summit", "resnet50", "--nodes", "1-4608", "--collective",
                 "ring"]) == 0
    assert capsys.readouterr().out == shown[1]
    # the sentence quotes the 27,648-GPU rows of both tables
    auto, ring = _row(shown[0], "4608"), _row(shown[1], "4608")
    assert f"efficiency of {auto['efficiency']} ({float(auto['iteration_s']):.3f} s" in SECTION
    assert f"falls to {ring['efficiency']}\n({float(ring['iteration_s']):.3f} s)" in SECTION
    assert auto["allreduce"] == "double-binary-tree" and ring["allreduce"] == "ring"


def test_quick_start_legacy_horovod_figure(capsys):
    assert main(["predict", "summit", "resnet50", "--nodes", "4608", "--runtime",
                 "horovod-legacy-nccl"]) == 0
    out = capsys.readouterr().out
    eff = _row(out, "4608")["efficiency"]
    assert f"the same run gives {eff}." in SECTION
