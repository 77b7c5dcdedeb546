"""Issue 27 item 9, done-when: random sizes up to 10^12 through every size input of every
command; each answers or refuses with one line, under a memory cap.

Each case runs the command line in a forked child (the imports are the parent's, so a
case costs what its question costs) whose address space may grow by at most
:data:`CAP_BYTES` (``RLIMIT_AS``): a question that allocated before refusing, or that
the limits let through although it does not fit, dies of ``MemoryError`` and fails
here. Sizes are drawn from a small range (the command answers) and from beyond the
input's limit up to 10^12 (it must refuse); sizes between the two answer too, but
slowly, and are what the README's and the other tests' runs cover. A case that runs
longer than :data:`HANG_S` counts as hung.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dlscale.cli import main

#: Growth of the child's address space allowed beyond the parent's (a guard, not a
#: budget: what a refused question may allocate is nothing large).
CAP_BYTES = 3 * 2**30

#: A case still running after this long is hung (a generous bound, not a timing check).
HANG_S = 300

TOP = 10**12

SETTINGS = settings(max_examples=3, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _vsize() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")  # pragma: no cover


def run_capped(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Exit status and stderr of ``dlscale ARGV`` in a forked child under the cap."""
    err = tempfile.TemporaryFile()
    cap = _vsize() + CAP_BYTES
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            os.chdir(cwd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(err.fileno(), 2)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
            try:
                code = int(main(argv) or 0)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stderr.flush()
                sys.stdout.flush()
            finally:
                os._exit(code)
    deadline = time.monotonic() + HANG_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"dlscale {' '.join(argv)}: still running after {HANG_S} s")
        time.sleep(0.05)          # polling the child, with a generous bound
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(status), text


def _check(argv: list[str], cwd: Path) -> None:
    rc, err = run_capped(argv, cwd)
    lines = [line for line in err.splitlines() if line.strip()]
    shown = f"dlscale {' '.join(argv)} -> {rc}:\n{err[-3000:]}"
    assert "Traceback" not in err and "Warning" not in err, shown
    assert rc in (0, 2), shown
    if rc == 2:
        assert len(lines) == 1 and "error" in lines[0], shown


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sizes")
    (d / "crossbar.toml").write_text(
        'base = "summit"\nname = "big-crossbar"\n[network]\n'
        f'topology = {{family = "crossbar", max_nodes = {TOP}}}\n')
    (d / "fattree.toml").write_text(
        'base = "summit"\nname = "big-fat-tree"\n[network]\n'
        f'topology = {{family = "fat-tree", levels = 3, nodes_per_leaf = 18, max_nodes = {TOP}}}\n')
    main(["predict", "summit", "resnet50", "--nodes", "2"])   # compile the kernels once
    return d


def _toml(d: Path, name: str, text: str) -> str:
    path = d / name
    path.write_text(text)
    return str(path)


def _small(hi: int = 4) -> st.SearchStrategy[int]:
    return st.integers(1, hi)


def _beyond(lo: int) -> st.SearchStrategy[int]:
    """Sizes beyond a limit up to 10^12, spread over the decades."""
    return st.integers(len(str(lo)) - 1, 12).flatmap(
        lambda e: st.integers(max(lo, 10**e), max(lo, 10 ** (e + 1) - 1) if e < 12 else TOP))


def _sizes(beyond: int | None) -> st.SearchStrategy[int]:
    """Small sizes, and sizes past ``beyond`` (None: any size up to 10^12 answers fast)."""
    return st.one_of(_small(), _beyond(beyond if beyond else 5))


#: ``name -> (argv of a size v and the module's files folder, first size that must be
#: refused, or None where every size answers quickly)``. Node counts: the analytical
#: limit is 1,048,576 ranks (174,762 six-GPU nodes), the simulator's 131,072 graph
#: elements (18,724 nodes of 6 GPUs and a host).
CASES = {
    "predict --nodes": (lambda v, d: ["predict", f"{d}/crossbar.toml", "resnet50",
                                      "--nodes", str(v)], 174_763),
    "predict devices_per_node": (lambda v, d: ["predict", _toml(
        d, "dpn.toml", f'base = "summit"\n[node]\ndevices_per_node = {v}\n'), "resnet50",
        "--nodes", "2"], 1025),
    "predict rails": (lambda v, d: ["predict", _toml(
        d, "rails.toml", 'base = "summit"\n[network]\ntopology = {family = "fat-tree", '
        f'levels = 3, nodes_per_leaf = 18, rails = {v}, max_nodes = 4608}}\n'), "resnet50",
        "--nodes", "2"], 65),
    "predict ranks_per_node": (lambda v, d: ["predict", f"{d}/crossbar.toml", _toml(
        d, "rpn.toml", f'base = "resnet50"\nranks_per_node = {v}\n'), "--nodes", "2"],
        524_289),
    "predict --batch": (lambda v, d: ["predict", "summit", "resnet50", "--nodes", "2",
                                      "--batch", str(v)], None),
    "predict --global-batch": (lambda v, d: ["predict", "summit", "resnet50", "--nodes", "2",
                                             "--global-batch", str(v)], None),
    "simulate --nodes": (lambda v, d: ["simulate", f"{d}/fattree.toml", "--nodes", str(v)],
                         18_725),
    "simulate --size-bytes": (lambda v, d: ["simulate", "summit", "--size-bytes", str(v)], None),
    "simulate --ranks": (lambda v, d: ["simulate", "summit", "--ranks", str(v)], None),
    "simulate --top": (lambda v, d: ["simulate", "summit", "--top", str(v)], None),
    "simulate WORKLOAD --nodes": (lambda v, d: ["simulate", f"{d}/crossbar.toml", "resnet50",
                                                "--nodes", str(v), "--iterations", "2"], 18_725),
    "simulate --iterations": (lambda v, d: ["simulate", "summit", "resnet50", "--iterations",
                                            str(v)], 4_166_667),
    "simulate --hidden": (lambda v, d: ["simulate", "summit", "resnet50", "--cosim",
                                        "--iterations", "2", "--hidden", str(v)], 65_537),
    "simulate --repeats": (lambda v, d: ["simulate", "cori-knl", "googlenet", "--nodes", "2",
                                         "--cosim", "--target-accuracy", "0.5", "--iterations",
                                         "2", "--repeats", str(v)], 25_000_001),
    "simulate --eval-every": (lambda v, d: ["simulate", "summit", "resnet50", "--cosim",
                                            "--iterations", "2", "--eval-every", str(v)], None),
    "plan --max-nodes": (lambda v, d: ["plan", "resnet50", "--cluster", f"{d}/crossbar.toml",
                                       "--collectives", "ring", "--max-nodes", str(v),
                                       "-o", f"{d}/plan.json"], 174_763),
    "sweep max_points": (lambda v, d: ["sweep", _toml(
        d, "points.toml", 'cluster = "summit"\nworkload = "resnet50"\nnodes = "2"\n'
        f'max_points = {v}\n[vary]\n"network.link.bandwidth_GBps" = [10.0, 20.0]\n'),
        "-o", f"{d}/sweep-points-{v}", "--executor", "serial"], 10_000_001),
    "sweep range": (lambda v, d: ["sweep", _toml(
        d, "range.toml", 'cluster = "summit"\nworkload = "resnet50"\nnodes = "2"\n[vary]\n'
        f'"network.link.bandwidth_GBps" = {{start = 1, stop = {v}, step = 1}}\n'),
        "-o", f"{d}/sweep-range-{v}", "--executor", "serial"], 1_000_001),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_size_answers_or_refuses_in_one_line(files, name):
    build, beyond = CASES[name]

    @SETTINGS
    @given(v=_sizes(beyond))
    @example(v=1)
    @example(v=TOP)
    def case(v: int) -> None:
        _check(build(v, files), files)

    case()
