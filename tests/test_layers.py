"""Imports run one way: kernels <- perfmodel <- simulator <- validation <- API <- CLI.

The design (``shared/DESIGN.md``, "Layers and data flow") says no layer imports one
above it. This test walks every module of the package with :mod:`ast` and lists each
import of a ``dlscale`` module that sits in a higher layer than the importer --
module-level, function-level, relative (``from ..x import``) and
``importlib.import_module("dlscale....")`` with a literal name alike. The layers, by
the package a module lives in:

====  ==========================================  ===========================
rank  packages                                    role
====  ==========================================  ===========================
0     ``dlscale.kernels``                         numba kernels, arrays in/out
1     ``dlscale.perfmodel``                       config, catalogs, closed forms
2     ``dlscale.simulator``                       discrete-event simulation
3     ``dlscale.validation``                      measurements, published cases
4     ``dlscale`` (its own modules: ``api``,      Python API: sweeps, plans,
      ``sweep*``, ``plan``, ``study*``, ...)      studies, results, plots
5     ``dlscale.cli``, ``dlscale.commands``,      command line (argparse)
      ``dlscale.__main__``
====  ==========================================  ===========================
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Source folder -> import name of the package it installs as (pyproject's package-dir).
PACKAGE_DIRS = {"kernels": "dlscale.kernels", "perfmodel": "dlscale.perfmodel",
                "simulator": "dlscale.simulator", "validation": "dlscale.validation",
                "dlscale": "dlscale"}

#: Import-name prefix -> layer rank; the longest matching prefix wins.
LAYERS = {"dlscale.kernels": 0, "dlscale.perfmodel": 1, "dlscale.simulator": 2,
          "dlscale.validation": 3, "dlscale": 4, "dlscale.cli": 5, "dlscale.commands": 5,
          "dlscale.__main__": 5}


def layer(module: str) -> int | None:
    """Layer rank of a dotted module name, or None outside ``dlscale``.

    >>> layer("dlscale.perfmodel.units"), layer("dlscale.commands.predict"), layer("numpy")
    (1, 5, None)
    >>> layer("dlscale"), layer("dlscale.api")
    (4, 4)
    """
    best = None
    for prefix, rank in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[0])):
            best = (prefix, rank)
    return None if best is None else best[1]


def modules() -> list[tuple[str, Path]]:
    """Every source module as (dotted name, path)."""
    out = []
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out.append((".".join([package, *parts]), path))
    return out


def imported_names(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, dotted module name) of each import in the module, at any depth."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` may name a submodule: count the deepest candidate.
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            out.append((node.lineno, node.args[0].value))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.JoinedStr)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            head = node.args[0].values[0] if node.args[0].values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                out.append((node.lineno, head.value.rstrip(".")))  # the literal prefix
    return out


def violations() -> list[str]:
    """Each import of a higher layer, as ``path:line: importer imports name``."""
    found = []
    for name, path in modules():
        own = layer(name)
        assert own is not None
        for line, target in imported_names(name, path):
            rank = layer(target)
            if rank is not None and rank > own:
                found.append(f"{path.relative_to(ROOT)}:{line}: {name} (layer {own}) "
                             f"imports {target} (layer {rank})")
    return found


def test_every_layer_is_found():
    names = [n for n, _ in modules()]
    for prefix in ("dlscale.kernels.", "dlscale.perfmodel.", "dlscale.simulator.",
                   "dlscale.validation.", "dlscale.commands.", "dlscale.api"):
        assert any(n.startswith(prefix) for n in names), prefix


def test_imports_run_down_the_layers():
    found = violations()
    assert not found, "imports up the layers:\n" + "\n".join(found)


def test_checker_sees_function_level_and_relative_imports(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from ..commands.common import parse_nodes\n"
                   "    import importlib\n    importlib.import_module('dlscale.cli')\n")
    names = imported_names("dlscale.simulator.x", src)
    assert (2, "dlscale.commands.common.parse_nodes") in names
    assert (4, "dlscale.cli") in names
    assert [layer(n) for _, n in names] == [5, None, 5]


@pytest.mark.parametrize("module,expected", [("dlscale.kernels.sgd", 0),
                                             ("dlscale.output", 4), ("dlscale.cli", 5)])
def test_layer_ranks(module, expected):
    assert layer(module) == expected


def private_imports() -> list[str]:
    """Each ``from dlscale.<other package> import _name``: a private name used across packages."""
    found = []
    for name, path in modules():
        own_package = name.rpartition(".")[0] if path.name != "__init__.py" else name
        for line, target in imported_names(name, path):
            mod, _, leaf = target.rpartition(".")
            if (leaf.startswith("_") and not leaf.startswith("__") and mod.startswith("dlscale")
                    and layer(mod) != layer(own_package)):
                found.append(f"{path.relative_to(ROOT)}:{line}: {name} imports {target}")
    return found


def test_no_private_names_across_layers():
    """One formula, one place: a layer calls another's public functions, not its helpers."""
    found = private_imports()
    assert not found, "private names imported across layers:\n" + "\n".join(found)


def test_importing_a_lower_layer_does_not_load_the_api():
    """``import dlscale.kernels`` (or the model) does not first import the API, plan,
    sweep and study layers: ``dlscale/__init__`` binds its public names on first use."""
    import subprocess
    import sys
    code = ("import sys, dlscale.kernels, dlscale.perfmodel.training.predict, dlscale.simulator; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['dlscale', 'api'], ['dlscale', 'plan'], ['dlscale', 'sweep'], "
            "['dlscale', 'study'], ['dlscale', 'cli'], ['dlscale', 'commands']))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_public_names_still_resolve():
    import dlscale
    import dlscale.sweep as _loaded  # noqa: F401  (the submodule of the same name)
    from dlscale import api
    for name in dlscale.__all__:
        if name != "__version__":
            assert getattr(dlscale, name) is not None
    assert dlscale.sweep is api.sweep and dlscale.plan is api.plan
    assert dlscale.ConfigError is __import__("dlscale.perfmodel.errors",
                                             fromlist=["x"]).ConfigError


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines of ``if TYPE_CHECKING:`` blocks: imports that never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", ""))
                == "TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {module it imports at run time (any depth): line}, inside ``dlscale``.

    ``from pkg import name`` counts the deepest module that exists; imports under
    ``if TYPE_CHECKING:`` are left out (they never run).
    """
    mods = dict(modules())
    graph: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        skip = _type_checking_lines(ast.parse(path.read_text(), str(path)))
        edges = graph.setdefault(name, {})
        for line, target in imported_names(name, path):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name and line not in skip:
                edges.setdefault(target, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_counting_function_level_imports():
    """A module never reaches itself through imports, at module or function level."""
    graph = import_graph()
    found = circles(graph)
    lines = []
    for comp in found:
        members = set(comp)
        lines.append("circle: " + ", ".join(comp))
        lines += [f"  {a} -> {b} (line {graph[a][b]})" for a in comp for b in graph[a]
                  if b in members]
    assert not found, "\n".join(lines)


def test_circle_check_sees_a_function_level_circle():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b": 1}, "b": {}}) == []
