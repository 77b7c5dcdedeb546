"""One place per formula (issue 15): known duplicates may not come back.

Each rule is a regular expression for the code of one formula that was once written
in several modules, and the modules where it may be written (its home first). The
source of every module under the package's folders is searched with docstrings and
comments blanked out (tokenize), so a formula quoted in documentation is not a
duplicate; a rule must still match its home, so a renamed home cannot leave a rule
that matches nothing. ARCHITECTURE.md ("One place per formula") lists where each
lives and what a text search cannot see.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("perfmodel", "simulator", "kernels", "validation", "dlscale")

#: The network model's files (the lead's): per-algorithm collective costs may live there.
_NETWORK = ("perfmodel/network/model.py", "perfmodel/network/schedules.py", "perfmodel/network/linkload.py")

#: name -> (pattern, modules where it may appear; the first must contain it). A rule
#: without modules is written nowhere as such: callers use :data:`USE`'s function.
RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "Horovod rank-0 negotiation (P - 1 + ceil(log2 P)) alpha":
        (r"\(\s*\w+\s*-\s*1\s*\)\s*\+\s*(np\.|math\.)?ceil\(", ("perfmodel/training/sync.py",)),
    "background-cycle wait, half a cycle":
        (r"cycle_s\s*(/\s*2\b|\*\s*0?\.5\b)", ("perfmodel/machine/runtime.py",)),
    "exchange with the master, 2 (alpha + W beta)":
        (r"2\s*\*\s*\(\s*[\w.]*alpha[\w.]*\s*\+\s*[\w.]+\s*\*\s*[\w.]*beta",
         ("perfmodel/training/easgd.py",)),
    "host copy over the host link":
        (r"host_link\.(latency_s|bandwidth_Bps)\s*[+*/]|[+*/]\s*[\w.]*host_link\.bandwidth_Bps",
         ()),
    "master update, k arrays over the memory bandwidth":
        (r"MASTER_ARRAYS\[[^\]]+\]\s*/", ("perfmodel/training/easgd.py",)),
    "2 alpha + 2 n beta (parameter server, recursive-doubling fold)":
        (r"2\s*\*\s*[\w.]*alpha[\w.]*\s*\+\s*2\s*\*",
         ("perfmodel/network/collective_primitives.py", "perfmodel/network/collectives.py", *_NETWORK)),
    "(p - 1) / p share of the data (ring, Rabenseifner, gather, scatter)":
        (r"\(\s*\w+\s*-\s*1\s*\)\s*/\s*\w+",
         ("perfmodel/network/collectives.py", "perfmodel/network/collective_primitives.py", *_NETWORK)),
    "MPICH's short-message rule (fewer elements than pof2)":
        (r"<\s*pof2\b|\bpof2\s*>", ("perfmodel/machine/runtime.py",)),
    "bytes per element table":
        (r"[\"']fp(16|32|64)[\"']\s*:\s*\d", ("perfmodel/units.py",)),
    "W = parameters x bytes per element":
        (r"\.params\s*\*\s*[\w.]*bytes_per_element", ("perfmodel/training/workload.py",)),
    "asynchronous SGD family":
        (r"[\"']async-sgd[\"']\s*,\s*[\"']async-msgd[\"']\s*,\s*[\"']hogwild-sgd[\"']",
         ("perfmodel/training/workload.py",)),
    "EASGD family":
        (r"[\"']easgd[\"']\s*,\s*[\"']sync-easgd[\"']\s*,\s*[\"']async-easgd[\"']",
         ("perfmodel/training/workload.py",)),
}


#: What to call instead, where a rule has no home of its own.
USE = {"host copy over the host link": "perfmodel.training.easgd.host_copy_s (Link.transfer_s)"}


def code_lines(text: str) -> list[str]:
    """The lines of ``text`` with comments and docstrings (triple-quoted) blanked."""
    chars = [list(line) for line in text.splitlines(True)]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        quoted = tok.type == tokenize.STRING and tok.string.lstrip("rbuRBUfF")[:3] in (
            '"""', "'''")
        if tok.type != tokenize.COMMENT and not quoted:
            continue
        (r0, c0), (r1, c1) = tok.start, tok.end
        for r in range(r0, r1 + 1):
            row = chars[r - 1]
            for c in range(c0 if r == r0 else 0, min(c1 if r == r1 else len(row), len(row))):
                if row[c] != "\n":
                    row[c] = " "
    return ["".join(row) for row in chars]


def matches(pattern: str, root: Path = ROOT) -> list[str]:
    """``path:line`` of every code line under ``root``'s folders matching ``pattern``."""
    rx = re.compile(pattern)
    hits = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            for i, line in enumerate(code_lines(path.read_text(encoding="utf-8")), 1):
                if rx.search(line):
                    hits.append(f"{rel}:{i}")
    return hits


@pytest.mark.parametrize("name", list(RULES))
def test_formula_lives_in_one_place(name):
    pattern, homes = RULES[name]
    hits = matches(pattern)
    stray = [h for h in hits if h.split(":")[0] not in homes]
    assert not stray, (f"{name}: written outside {', '.join(homes) or 'its function'}: "
                       f"{', '.join(stray)}; use {homes[0] if homes else USE[name]}")
    if homes:
        assert any(h.split(":")[0] == homes[0] for h in hits), (
            f"{name}: the rule no longer matches its home {homes[0]}; update RULES")


def test_docstrings_and_comments_are_not_code(tmp_path):
    (tmp_path / "perfmodel").mkdir()
    for folder in FOLDERS[1:]:
        (tmp_path / folder).mkdir()
    (tmp_path / "perfmodel" / "m.py").write_text(
        '"""Module: wait = cycle_s / 2 in the docs."""\n\n'
        "def f(rt):\n"
        '    """Half a cycle: ``cycle_s / 2``."""\n'
        "    # cycle_s / 2 in a comment\n"
        "    label = 'cycle_s / 2 in a plain string is code'\n"
        "    return rt.cycle_s / 2\n")
    assert matches(RULES["background-cycle wait, half a cycle"][0], tmp_path) == [
        "perfmodel/m.py:6", "perfmodel/m.py:7"]
