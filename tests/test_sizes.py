"""Size limits of issue 15: no function over 80 lines of code, no module over 500.

Lines of code, not lines (issue 28): docstrings, comment-only lines and blank lines are
not counted, so documenting a module never forces a split along a size line instead of
a concept line. A function's code lines are those from its ``def`` line to its last
(decorators not counted); nested functions and methods are counted on their own, and
also inside their parent. Every ``.py`` file under the source folders of the
installed package is checked.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Source folders of the package (``dlscale/`` holds the API and the CLI).
FOLDERS = ("perfmodel", "simulator", "kernels", "validation", "dlscale")

MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500

#: ``path`` (a module) or ``path:qualname`` (a function) -> its length when listed,
#: the most it may have until it is split.
ALLOWED: dict[str, int] = {}


def code_lines(text: str, tree: ast.AST) -> set[int]:
    """Line numbers that hold code: not blank, not only a comment, not in a docstring."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                lines -= set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _functions(tree: ast.AST, code: set[int], prefix: str = "") -> list[tuple[str, int, int]]:
    """``(qualname, def line, code lines)`` of every function and method under ``tree``."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            assert node.end_lineno is not None
            span = range(node.lineno, node.end_lineno + 1)
            out.append((name, node.lineno, sum(1 for n in span if n in code)))
            out += _functions(node, code, name + ".")
        elif isinstance(node, ast.ClassDef):
            out += _functions(node, code, prefix + node.name + ".")
        else:
            out += _functions(node, code, prefix)
    return out


def measure(root: Path = ROOT) -> dict[str, int]:
    """Length of every module (key ``path``) and function (key ``path:qualname``)."""
    sizes: dict[str, int] = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=rel)
            code = code_lines(text, tree)
            sizes[rel] = len(code)
            for name, _line, length in _functions(tree, code):
                key = f"{rel}:{name}"
                sizes[key] = max(length, sizes.get(key, 0))   # a redefinition: the longer
    return sizes


def _limit(key: str) -> int:
    return MAX_FUNCTION_LINES if ":" in key else MAX_MODULE_LINES


def offenders(sizes: dict[str, int], allowed: dict[str, int]) -> list[str]:
    """One line per size over its limit (or over its allowance), and per stale allowance."""
    bad = []
    for key, n in sorted(sizes.items()):
        if n <= _limit(key):
            continue
        if key not in allowed:
            bad.append(f"{key}: {n} lines, over the limit of {_limit(key)}; split it")
        elif n > allowed[key]:
            bad.append(f"{key}: {n} lines, grew past its allowance of {allowed[key]}")
    for key, n in sorted(allowed.items()):
        if key not in sizes:
            bad.append(f"{key}: allowed {n} lines but no longer exists; remove it from ALLOWED")
        elif sizes[key] <= _limit(key):
            bad.append(f"{key}: now {sizes[key]} lines, within the limit of {_limit(key)}; "
                       "remove it from ALLOWED")
    return bad


def test_no_function_over_80_and_no_module_over_500_lines():
    bad = offenders(measure(), ALLOWED)
    assert not bad, "\n".join(bad)


def test_the_check_sees_long_functions_methods_and_modules(tmp_path):
    pkg = tmp_path / "perfmodel"
    pkg.mkdir()
    for folder in FOLDERS[1:]:
        (tmp_path / folder).mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    (pkg / "a.py").write_text(
        f"def long():\n{body}\n\n\nclass C:\n    def m(self):\n        def inner():\n"
        + "\n".join(f"            y{i} = {i}" for i in range(79)) + "\n        return 1\n"
        + "".join(f"z{i} = {i}\n" for i in range(400)))
    sizes = measure(tmp_path)
    assert sizes["perfmodel/a.py:long"] == 81
    assert sizes["perfmodel/a.py:C.m.inner"] == 80
    assert sizes["perfmodel/a.py:C.m"] == 82
    assert offenders(sizes, {}) == [
        "perfmodel/a.py: 564 lines, over the limit of 500; split it",
        "perfmodel/a.py:C.m: 82 lines, over the limit of 80; split it",
        "perfmodel/a.py:long: 81 lines, over the limit of 80; split it"]


def test_docstrings_comments_and_blank_lines_are_not_counted(tmp_path):
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
    doc = "\n".join(f"    line {i} of prose" for i in range(200))
    (tmp_path / "perfmodel" / "b.py").write_text(
        f'"""Module.\n\n{doc}\n"""\n\n# a comment\n\n\ndef f(x):\n    """Doc.\n\n{doc}\n    """\n'
        "    # why\n    return (x +\n            1)\n" + "\n" * 300)
    sizes = measure(tmp_path)
    assert sizes["perfmodel/b.py:f"] == 3
    assert sizes["perfmodel/b.py"] == 3
    assert offenders(sizes, {}) == []


@pytest.mark.parametrize("allowed, message", [
    ({"perfmodel/a.py:long": 81}, ""),
    ({"perfmodel/a.py:long": 80}, "perfmodel/a.py:long: 81 lines, grew past its allowance of 80"),
    ({"perfmodel/a.py:long": 81, "perfmodel/a.py:short": 90},
     "perfmodel/a.py:short: now 2 lines, within the limit of 80; remove it from ALLOWED"),
    ({"perfmodel/a.py:long": 81, "perfmodel/b.py": 600},
     "perfmodel/b.py: allowed 600 lines but no longer exists; remove it from ALLOWED"),
])
def test_the_allow_list_cannot_go_stale(allowed, message):
    sizes = {"perfmodel/a.py": 100, "perfmodel/a.py:long": 81, "perfmodel/a.py:short": 2}
    assert offenders(sizes, allowed) == ([message] if message else [])
