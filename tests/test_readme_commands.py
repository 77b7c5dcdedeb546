"""Every command README.md shows runs, and writes the files it promises (issue 17).

The README is read at collection time, so a new ``sh`` block or inline command is a
new test. How README commands map to what runs (the current interpreter's
``dlscale`` for ``.venv/bin/dlscale``, 2 MPI ranks, at most 64 nodes, small budgets,
the install steps checked instead of rerun) is described in ``tests/readme_harness.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import readme_harness as rh
from mpi_helpers import mpi_or_skip

README = (rh.ROOT / "README.md").read_text()
EXAMPLES = rh.sh_blocks(README) + rh.dollar_lines(README) + rh.inline_commands(README)


def _id(ex: rh.Example) -> str:
    first = ex.lines[0] if ex.lines else ""
    where = "inline" if "inline" in ex.where else ex.where
    return f"{where}:{first[:60]}"


def _params():
    return [pytest.param(ex, id=_id(ex), marks=[pytest.mark.mpi] if ex.mpi else [])
            for ex in EXAMPLES]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    env["PATH"] = f"{rh.BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


def _workdir(tmp_path: Path) -> Path:
    """A folder laid out like the repository root for what the README refers to."""
    for name in ("examples", "benchmarks", "validation"):
        shutil.copytree(rh.ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.out"))
    return tmp_path


def _written(path: Path) -> bool:
    return (path.is_file() and path.stat().st_size > 0) or (path.is_dir() and any(path.iterdir()))


@pytest.mark.parametrize("example", _params())
def test_readme_example_runs(example, tmp_path):
    if example.mpi:
        mpi_or_skip()
    cwd = _workdir(tmp_path)
    for line in example.lines:
        steps = rh.to_steps(line)
        if isinstance(steps, str):  # NOT_RUN, with its reason
            continue
        for step in steps:
            proc = subprocess.run(step.argv, cwd=cwd, env=_env(), capture_output=True,
                                  text=True, timeout=300)
            assert proc.returncode == 0, (
                f"{example.where}: {line}\nran: {' '.join(step.argv)}\n"
                f"exit {proc.returncode}\n{proc.stderr[-3000:]}")
            missing = [o for o in step.outputs if not _written(cwd / o)]
            assert not missing, f"{example.where}: {line}: did not write {missing}"


@pytest.mark.parametrize("block", rh.python_blocks(README), ids=lambda b: b.where)
def test_readme_python_block_runs(block, tmp_path):
    script = _workdir(tmp_path) / "readme_block.py"
    script.write_text(block.lines[0])
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{block.where}:\n{block.lines[0]}\n{proc.stderr[-3000:]}"
    if block.output is not None:        # the text block after it, byte for byte
        assert proc.stdout == block.output, f"{block.where}: prints\n{proc.stdout}"
    for name in re.findall(r"""to_(?:csv|json)\(["']([^"']+)["']\)""", block.lines[0]):
        assert _written(tmp_path / name), f"{block.where}: did not write {name}"


def test_the_harness_examples():
    import doctest

    assert doctest.testmod(rh).failed == 0


def test_the_harness_finds_the_readme_commands():
    lines = [ln for ex in EXAMPLES for ln in ex.lines]
    assert any("mpi4py.futures -m dlscale sweep" in ln for ln in lines)
    assert any(rh.dlscale_words(ln)[:1] == ("calibrate",) for ln in lines)
    assert len(rh.synopsis_keys(README)) >= 8
    assert rh.python_blocks(README)


def test_every_summary_command_has_a_run_example():
    """Each form of the ``## Command line`` summary is run by some README example."""
    assert rh.uncovered(README, EXAMPLES) == []


FAKE = """\
## Command line

```
dlscale predict CLUSTER WORKLOAD [--nodes LIST]
dlscale frobnicate FILE [-o OUT]
mpiexec -n N dlscale calibrate [--budget-s S]
```

```sh
dlscale predict summit resnet50 --nodes 1-4608 -o out/a.json
curl https://example.org | sh
mpiexec -n 4 dlscale calibrate --budget-s 120 -o p.json
```

Prose with `dlscale sweep STUDY.toml` and `dlscale catalog models` and `mpiexec -n 4`.
"""


def test_the_harness_maps_small_and_rejects_what_it_cannot_run():
    ex = rh.sh_blocks(FAKE)[0]
    (predict,) = rh.to_steps(ex.lines[0])
    assert predict.argv[-4:] == ["--nodes", "1-64", "-o", "out/a.json"]
    assert predict.outputs == ["out/a.json"] and not predict.mpi
    with pytest.raises(rh.HarnessError, match=r"shell syntax|unknown program"):
        rh.to_steps(ex.lines[1])
    (cal,) = rh.to_steps(ex.lines[2])
    assert cal.mpi and cal.argv[:3] == [str(rh.MPIEXEC), "-n", "2"]
    assert cal.argv[-5:] == ["--budget-s", "5", "-o", "p.json", "--quick"]
    assert [e.lines for e in rh.inline_commands(FAKE)] == [["dlscale catalog models"]]
    runnable = [rh.Example("fake", [ex.lines[0], ex.lines[2]])]
    assert rh.uncovered(FAKE, runnable) == [("frobnicate",)]
    with pytest.raises(rh.HarnessError, match="shell syntax"):
        rh.uncovered(FAKE, [ex])
    with pytest.raises(rh.HarnessError, match="unknown program 'wget'"):
        rh.to_steps("wget x")
    with pytest.raises(rh.HarnessError, match="no extra"):
        rh.to_steps("pip install -e '.[nope]'")
    assert "75 s" in rh.to_steps(".venv/bin/python benchmarks/run.py")
    assert rh.to_steps(".venv/bin/python benchmarks/run.py predict")


FAKE_DOLLAR = """\
Text.

```
$ dlscale simulate cori-knl googlenet --nodes 16 --cosim --target-accuracy 0.9 --tune --repeats 3
# output, not a command
algorithm  lr
```

```text
$ curl https://example.org
```

Inline `python -m pydoc dlscale.study`, `python -m dlscale`, `mpiexec -n 4`,
`.venv/bin/python benchmarks/run.py time_to_target`.
"""


def test_the_harness_runs_dollar_lines_small_and_rejects_unknown_ones():
    """Issue 26 item 1: ``$`` lines inside text fences were not run at all."""
    cosim, curl = rh.dollar_lines(FAKE_DOLLAR)
    assert cosim.where == "README.md:4" and curl.where == "README.md:10"
    (step,) = rh.to_steps(cosim.lines[0])
    assert step.argv[1:] == ["simulate", "cori-knl", "googlenet", "--nodes", "4", "--cosim",
                             "--target-accuracy", "0.9", "--tune", "--repeats", "3",
                             "--iterations", str(rh.TARGET_ITERATIONS)]
    with pytest.raises(rh.HarnessError, match="unknown program 'curl'"):
        rh.to_steps(curl.lines[0])
    inline = [e.lines[0] for e in rh.inline_commands(FAKE_DOLLAR)]
    assert inline == ["python -m pydoc dlscale.study",
                      ".venv/bin/python benchmarks/run.py time_to_target"]
    (bench,) = rh.to_steps(inline[1])
    assert bench.argv[-2:] == ["time_to_target", "--quick"]
    assert any("--tune" in ex.lines[0] for ex in rh.dollar_lines(README))
