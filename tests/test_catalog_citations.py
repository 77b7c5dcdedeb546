"""Every number in the catalog and the model's presets has a source comment (issue 13).

Issue 13 asks that no per-case constant hide in ``perfmodel/``: "a reviewer can check:
every number in ``perfmodel/catalog`` has a source comment". This test is that reviewer.
It reads every module of ``perfmodel/catalog/`` and the presets of
``perfmodel/compute/efficiency.py``, ``perfmodel/machine/runtime.py``, ``perfmodel/machine/noise.py`` and
``perfmodel/network/msgfactors.py`` with :mod:`ast` and :mod:`tokenize` and fails on every
numeric literal that no citation comment covers.

Which literals are checked
    Every ``int`` or ``float`` literal in the module's code (a leading minus sign is
    part of the literal), module level and function bodies alike, except:

    - the integers 0, 1, 2 and -1 (counts, halves and doublings, structural
      constants: ``x[0]``, ``n - 1``, ``2 * a``). The floats 0.0 and 1.0 are exempt
      too (the bounds of a fraction); every other float is checked, 2.0 and 0.5
      included;
    - integer subscripts and slice bounds (``pair[3]``) and the digits argument of
      ``round``: positions, not quantities;
    - unit conversions: a power of 1000 (1e3 ... 1e15) or of 1024 (1024 ... 1024**4)
      as an operand of ``*`` or ``/`` (``x / 1e9`` for GB), and 1024 as the base of
      ``**``;
    - literals inside strings, docstrings and doctests (they are text, not code).

Where a citation may stand
    A literal is covered by

    - a comment on its own line (a trailing ``# ...``);
    - a comment on the first line of any expression or statement that encloses it
      (the line a catalog entry's constructor call opens on);
    - the comment block immediately above its own line, or immediately above the
      first line of any enclosing expression or statement (consecutive comment-only
      lines ending on the line before); for an enclosing ``def`` or ``class``, the
      block above it and its docstring, so that a model builder citing its paper
      covers the layer widths in its body;
    - the ``source`` string of an enclosing call: the ``source=`` keyword, or the
      positional argument of a same-module function whose parameter is named
      ``source`` (``_gpu(..., "NVIDIA Tesla K40 datasheet")``): the citation the
      catalog entry itself carries and ``dlscale catalog`` prints.

    The module docstring does not cover anything: it is too far from the numbers.

What a citation is
    The covering text cites a source when it contains at least one of

    - a year from 1950 to 2049;
    - a URL or a domain name (``https://...``, ``tensorflow.org``, ``docs.nersc.gov``);
    - a locator or a kind of source: ``Table N``, ``Sec. N`` / ``section``, ``Fig. N``,
      ``p. N`` / ``pp. N``, ``eq. N``, ``datasheet``, ``whitepaper``, ``user guide``,
      ``manual``, ``spec``, ``arXiv``, ``doi``, ``ARK`` (Intel's product database),
      ``RFC N``, ``IEEE N`` (a standard's number), ``product brief``, ``README``, a
      GitHub issue or pull request (``#123``);
    - an explicit statement that no source exists: ``assumption`` / ``assumed`` (a
      figure chosen without a published one, e.g. "assumption: ..., no published
      figure"), ``definition:`` / ``by definition`` (true by the definition of the
      quantity: one multiply-add is 2 FLOPs, a mean-one lognormal's shift), or
      ``numerical:`` (a parameter of a numerical method: a bisection tolerance, a
      quadrature grid, a cache size). These are allowed so that an unsourced figure
      is said to be one, in the open; :func:`assumptions` lists them and the issue
      report names them.

    A comment that only restates a value ("# 1.61 TFLOPS") or names a unit is not a
    citation. The rule is textual: it checks that a source is named, not that the
    source says what the number is (a reviewer's job).

Run as a script (``python tests/test_catalog_citations.py``) it prints every uncited
literal and every literal covered only by an assumption.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The modules whose numbers must carry a source.
FILES: tuple[str, ...] = (
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "perfmodel" / "catalog").glob("*.py")),
    "perfmodel/compute/efficiency.py",
    "perfmodel/machine/runtime.py",
    "perfmodel/machine/noise.py",
    "perfmodel/network/msgfactors.py",
)

_EXEMPT_INTS = frozenset({0, 1, 2, -1})
_EXEMPT_FLOATS = frozenset({0.0, 1.0})

_CITATION = re.compile(
    r"""
    \b(19[5-9]\d|20[0-4]\d)\b                       # a year
    | https?://                                     # a URL
    | \b[\w-]+\.(org|com|edu|gov|io|net|ch|de)\b    # a domain name
    | \bTable\s*[0-9IVX]+\b | \bsec(tion|s|\.)?\s*[0-9IVX]+\b | \bsection\b | §
    | \bfig(ure|s|\.)?\s*\d | \bp\.\s*\d | \bpp\.\s*\d | \beq(uation|\.)?\s*\(?\d
    | datasheet | data\ sheet | whitepaper | white\ paper | user\ guide | \bmanual\b
    | product\ brief | \bREADME\b
    | \bspec(ification)?\b | arXiv | \bdoi\b | \bARK\b | \bRFC\s*\d | \bIEEE\s*\d{3}
    | \#\d+                                          # GitHub issue / pull request
    | \bassum(ption|ed|es)\b | by\ definition | \bdefinition: | \bnumerical:
    """,
    re.IGNORECASE | re.VERBOSE,
)
_ASSUMPTION = re.compile(r"\bassum(ption|ed|es)\b|by definition|\bdefinition:|\bnumerical:",
                         re.IGNORECASE)


def is_citation(text: str) -> bool:
    """Whether a comment block's text names a source (see the module docstring).

    Examples
    --------
    >>> is_citation("NVIDIA Tesla V100 datasheet: 900 GB/s")
    True
    >>> is_citation("1.61 TFLOPS (AVX-512, 2 FMA units)")
    False
    """
    return bool(_CITATION.search(text))


@dataclass(frozen=True)
class Literal:
    """A numeric literal of a scanned module and the comment text that covers it."""

    path: str
    line: int
    value: float
    source_line: str
    comment: str            # the covering comment texts joined ("" if none)

    @property
    def cited(self) -> bool:
        return is_citation(self.comment)

    @property
    def assumption_only(self) -> bool:
        """Covered, but only by a comment that states an assumption."""
        without = _ASSUMPTION.sub("", self.comment)
        return self.cited and not is_citation(without)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.value!r}: {self.source_line.strip()}"


def _comments(source: str) -> tuple[dict[int, str], set[int]]:
    """Line -> comment text on it; and the lines that hold nothing but a comment."""
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER):
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    only = {line for line in comments if line not in code_lines}
    return comments, only


def _block_above(line: int, comments: dict[int, str], only: set[int]) -> list[str]:
    """The comment-only lines that end on ``line - 1`` (nearest last)."""
    out = []
    k = line - 1
    while k in only:
        out.append(comments[k])
        k -= 1
    return out[::-1]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _exempt_positions(tree: ast.AST) -> set[int]:
    """ids of literal nodes in positions, not quantities (subscripts, round's digits)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            for sub in ast.walk(node.slice):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, int):
                    ids.add(id(sub))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "round" and len(node.args) == 2):
            ids.update(id(sub) for sub in ast.walk(node.args[1]))
    return ids


def _source_strings(tree: ast.AST) -> dict[int, str]:
    """id of a Call -> the string it passes as ``source`` (keyword, or positionally to a
    function of the same module whose parameter of that position is ``source``)."""
    positions = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.posonlyargs + node.args.args]
            if "source" in names:
                positions[node.name] = names.index("source")
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        arg: ast.AST | None = next((k.value for k in node.keywords if k.arg == "source"), None)
        name = getattr(node.func, "id", None)
        if arg is None and name in positions and positions[name] < len(node.args):
            arg = node.args[positions[name]]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out[id(node)] = arg.value
    return out


def _unit_factor(node: ast.Constant, parent: ast.AST | None) -> bool:
    """A power of 1000 or of 1024 multiplying or dividing: a unit conversion."""
    v = node.value
    powers = {10.0 ** (3 * k) for k in range(1, 6)} | {1024.0 ** k for k in range(1, 5)}
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow):
        return v == 1024 and parent.left is node
    return (float(v) in powers and isinstance(parent, ast.BinOp)
            and isinstance(parent.op, (ast.Mult, ast.Div)))


def scan(path: str) -> list[Literal]:
    """Every checked numeric literal of ``path`` (relative to the repository root)."""
    source = (ROOT / path).read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    comments, only = _comments(source)
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    skip = _docstring_nodes(tree) | _exempt_positions(tree)
    sources = _source_strings(tree)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
            continue
        if id(node) in skip:
            continue
        value: float = node.value
        at: ast.AST = node
        parent = parents.get(id(node))
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
            value, at = -value, parent
        if (type(value) is int and value in _EXEMPT_INTS) or (
                type(value) is float and value in _EXEMPT_FLOATS):
            continue
        if _unit_factor(node, parent):
            continue
        line = node.lineno
        texts = [comments.get(line, ""), *_block_above(line, comments, only)]
        anc: ast.AST | None = at
        while anc is not None and not isinstance(anc, ast.Module):
            start = getattr(anc, "lineno", None)
            if id(anc) in sources:
                texts.append(sources[id(anc)])
            if start is not None:
                texts.append(comments.get(start, ""))
                texts.extend(_block_above(start, comments, only))
                if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    first = min([start] + [d.lineno for d in anc.decorator_list])
                    texts.extend(_block_above(first, comments, only))
                    texts.append(" ".join((ast.get_docstring(anc) or "").split()))
            anc = parents.get(id(anc))
        out.append(Literal(path, line, value, lines[line - 1],
                           " | ".join(t for t in dict.fromkeys(texts) if t)))
    return sorted(out, key=lambda lit: lit.line)


def uncited() -> list[Literal]:
    """Every checked literal of :data:`FILES` with no citation comment."""
    return [lit for path in FILES for lit in scan(path) if not lit.cited]


def assumptions() -> list[Literal]:
    """Every checked literal covered only by a stated assumption, definition or
    numerical parameter (no source)."""
    return [lit for path in FILES for lit in scan(path) if lit.assumption_only]


def _marker(lit: Literal) -> str:
    for kind, pattern in (("assumption", r"\bassum"), ("definition", r"definition"),
                          ("numerical", r"numerical:")):
        if re.search(pattern, lit.comment, re.IGNORECASE):
            return kind
    return "?"


def test_every_catalog_and_preset_number_cites_a_source():
    missing = uncited()
    assert not missing, (
        f"{len(missing)} numeric literal(s) without a citation comment (a source with a "
        "year, URL, Table/Sec/page, datasheet/whitepaper/manual, arXiv, or an explicit "
        "'assumption: ...'; see tests/test_catalog_citations.py):\n"
        + "\n".join(map(str, missing)))


def test_the_scan_finds_numbers_and_their_comments(tmp_path, monkeypatch):
    # the rule itself: a cited entry passes, a bare figure fails, counts are exempt,
    # and a comment block above a multi-line constructor covers its continuation lines
    src = tmp_path / "perfmodel" / "catalog"
    src.mkdir(parents=True)
    (src / "fake.py").write_text(
        '"""Doc with 42 in it."""\n'
        "A = 7.5  # NVIDIA Tesla V100 datasheet\n"
        "B = 3.3  # 3.3 TFLOPS\n"
        "# Intel ARK Xeon 8160 (2017)\n"
        "C = dict(\n"
        "    x=24,\n"
        "    y=2.1,\n"
        ")\n"
        "D = [0, 1, 2, -1, 0.0, 1.0][3]\n"
        "E = -0.25  # assumption: no published figure\n"
        "def f(n):\n"
        "    return n * 17\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = {(lit.line, lit.value): lit for lit in scan("perfmodel/catalog/fake.py")}
    assert set(found) == {(2, 7.5), (3, 3.3), (6, 24), (7, 2.1), (10, -0.25), (12, 17)}
    assert [k for k, lit in found.items() if not lit.cited] == [(3, 3.3), (12, 17)]
    assert [k for k, lit in found.items() if lit.assumption_only] == [(10, -0.25)]


def test_citation_rule():
    for text in ("Lavin & Gray, CVPR 2016, sec. 4.1", "see https://example.org/x",
                 "tensorflow.org/performance/benchmarks", "Table 3", "OLCF Summit user guide",
                 "intel/caffe#132", "assumption: no published figure", "p. 12"):
        assert is_citation(text), text
    for text in ("1.61 TFLOPS", "6 x DDR4-2666 x 8 B = 128 GB/s", "no faster fp16 math",
                 "replaced by the solved fraction", ""):
        assert not is_citation(text), text


if __name__ == "__main__":
    bad = uncited()
    print(f"{len(bad)} uncited literal(s):")
    print("\n".join(map(str, bad)))
    marked = assumptions()
    for kind in ("assumption", "definition", "numerical"):
        these = [lit for lit in marked if _marker(lit) == kind]
        print(f"\n{len(these)} covered only by '{kind}' (no source):")
        print("\n".join(map(str, these)))
