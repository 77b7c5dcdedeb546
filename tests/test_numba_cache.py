"""numba's on-disk cache on the simulate path (issue 27 item 5), counted, not timed.

Each case runs ``dlscale simulate`` in fresh processes and reads, from numba's own
dispatchers, how many of the compiled functions each process compiled (cache misses)
and how many it loaded from the cache (hits). The timing is
``benchmarks/bench_scale.py`` (cold and warm rows).

- A second process compiles nothing: every function the first one compiled is loaded.
- A package folder that cannot be written (a read-only install): numba keeps the
  cache in the user's cache folder instead, without a word.
- Neither can be written (and no ``NUMBA_CACHE_DIR``): numba refused the decoration
  itself, a ``RuntimeError`` traceback on importing the simulator; now each process
  compiles again, without a word.

Every run gives the same answer, byte for byte, cached or not. Being root does not
make a folder unwritable, so the "read-only" folders here are ``__pycache__`` and
cache paths taken by plain files, which numba cannot write into either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> its folder in an installed package (pyproject's package-dir).
LAYOUT = {"dlscale": "dlscale", "perfmodel": "dlscale/perfmodel",
          "simulator": "dlscale/simulator", "kernels": "dlscale/kernels",
          "validation": "dlscale/validation"}
COMMAND = ["simulate", "summit", "resnet50", "--nodes", "2", "--format", "json"]

#: Runs the command line, then writes what numba compiled and loaded to argv[1].
DRIVER = """
import json, sys
from dlscale.cli import main
status = main(sys.argv[2:])
stats = {}
if "numba" in sys.modules:
    from numba.core.dispatcher import Dispatcher
    for m in list(sys.modules.values()):
        for v in list(getattr(m, "__dict__", {}).values()):
            for d in (v if isinstance(v, list) else [v]):
                if isinstance(d, Dispatcher) and d.signatures:
                    name = d.py_func.__module__ + "." + d.py_func.__qualname__
                    stats[name] = [sum(d.stats.cache_hits.values()),
                                   sum(d.stats.cache_misses.values())]
with open(sys.argv[1], "w") as fh:
    json.dump({"status": status, "file": sys.modules["dlscale"].__file__,
               "numba": stats}, fh)
"""


def _run(tmp: Path, tag: str, env: dict[str, str]) -> tuple[dict, str, str]:
    """(numba's counts and the package used, stdout, stderr) of one fresh process."""
    out = tmp / f"{tag}.json"
    p = subprocess.run([sys.executable, "-c", DRIVER, str(out), *COMMAND], cwd=tmp,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(out.read_text()), p.stdout, p.stderr


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(extra)
    return env


def _compiled(stats: dict) -> int:
    return sum(miss for _, miss in stats["numba"].values())


def _loaded(stats: dict) -> int:
    return sum(hit for hit, _ in stats["numba"].values())


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Two processes sharing an empty NUMBA_CACHE_DIR: (first's counts, second's, answer)."""
    tmp = tmp_path_factory.mktemp("numba-cache")
    env = _env(NUMBA_CACHE_DIR=str(tmp / "cache"))
    first, answer, err1 = _run(tmp, "first", env)
    second, again, err2 = _run(tmp, "second", env)
    assert again == answer and err1 == err2 == ""
    return first, second, answer


def test_a_second_process_compiles_nothing(reference):
    first, second, _ = reference
    assert any(k.startswith("dlscale.simulator.network.fastmode.") for k in first["numba"])
    assert _compiled(first) > 0 and _loaded(first) == 0         # the cache was empty
    assert _compiled(second) == 0                               # all of it from the cache
    # every function the run calls is loaded (one called only by another compiled one,
    # numba's pairwise sum in the route pass, comes inside its caller's machine code)
    assert _loaded(second) > 0 and set(second["numba"]) <= set(first["numba"])


def _read_only_copy(tmp: Path) -> Path:
    """The package laid out as installed, its files linked to the sources, every
    ``__pycache__`` taken by a plain file (no cache can be written next to them)."""
    site = tmp / "site"
    for folder, target in LAYOUT.items():
        for src in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in src.parts:
                continue
            dst = site / target / src.relative_to(ROOT / folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src)
    for d in [p for p in site.rglob("*") if p.is_dir()]:
        (d / "__pycache__").write_text("")
    return site


@pytest.fixture(scope="module")
def read_only_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("read-only")
    return tmp, _read_only_copy(tmp)


def test_a_read_only_package_caches_in_the_users_folder(read_only_site, reference):
    tmp, site = read_only_site
    cache = tmp / "user-cache"
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(cache), HOME=str(tmp / "home"))
    first, answer, err1 = _run(tmp, "ro-first", env)
    second, again, err2 = _run(tmp, "ro-second", env)
    assert Path(first["file"]).is_relative_to(site)            # the copy ran, not the tree
    assert err1 == err2 == ""
    assert answer == again == reference[2]
    assert _compiled(first) > 0 and _compiled(second) == 0
    assert list((cache / "numba").rglob("*.nbi"))


def test_nowhere_to_cache_compiles_each_time_without_a_word(read_only_site, reference):
    tmp, site = read_only_site
    blocked = tmp / "no-cache"
    blocked.write_text("")                      # the user's cache folder cannot be made
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(blocked), HOME=str(blocked))
    stats, answer, err = _run(tmp, "nowhere", env)
    assert Path(stats["file"]).is_relative_to(site)
    assert err == ""
    assert answer == reference[2]
    assert _compiled(stats) > 0 and _loaded(stats) == 0


def test_every_cached_compile_goes_through_kernels_jit():
    """numba's own ``cache=True`` crashes an import where no cache folder can be
    written; kernels/jit.njit falls back. No module may bypass it (the fused fat-tree
    walk and the tree kernel did, from a branch merged beside the fix)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    bad = [f"{p.relative_to(root)}:{i}" for folder in ("kernels", "perfmodel", "simulator",
                                                       "dlscale", "validation")
           for p in sorted((root / folder).rglob("*.py")) if p.name != "jit.py"
           for i, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"cache\s*=\s*True", line.split("#")[0])]
    assert bad == []
