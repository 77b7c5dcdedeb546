"""Start-up: a command imports what it runs, and no more (issue 28).

The timing is ``benchmarks/bench_startup.py``; here, what is loaded, read from
``python -X importtime`` (every module a process imports, in import order) and from
``sys.modules`` of fresh processes, and the numpy walk of the critical path, which
``predict`` of a few node counts takes instead of loading numba, held to the
compiled one bit for bit.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.network import chainwalk
from dlscale.perfmodel.network.plan import plan_collective
from dlscale.perfmodel.network.stepcost import device_links

UPPER = ("dlscale.api", "dlscale.plan", "dlscale.sweep", "dlscale.study")


def imported(code: str) -> list[str]:
    """The modules ``python -X importtime -c CODE`` imports, in order."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                         text=True, check=True).stderr
    return [line.rsplit("|", 1)[1].strip() for line in err.splitlines()
            if line.startswith("import time:") and line.count("|") == 2
            and not line.rstrip().endswith("package")]


def _under(names: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The ``names`` that are one of ``prefixes`` or start with it (``dlscale.sweep_guard``
    counts as the sweep layer)."""
    return [n for n in names if n.startswith(prefixes)]


def test_importtime_of_the_kernels_loads_no_upper_layer():
    # the package imports a kernel's module when the kernel is first asked for (with
    # importlib, which -X importtime does not list): the module itself here
    names = imported("import dlscale.kernels.allreduce")
    assert "dlscale.kernels" in names and "dlscale.kernels.allreduce" in names
    assert _under(names, UPPER) == []


def test_the_jit_helper_loads_no_kernel():
    # the simulator's fast mode decorates its own functions (dlscale.kernels.jit) and
    # does not load, and decorate, the package's kernels (issue 27 item 5)
    names = imported("import dlscale.kernels.jit")
    assert "dlscale.kernels.jit" in names
    assert _under(names, ("dlscale.kernels.",)) == ["dlscale.kernels.jit"]


def test_help_imports_no_command_and_no_numpy():
    names = imported("import sys; sys.argv = ['dlscale', '--help']\n"
                     "from dlscale.cli import main\n"
                     "try:\n    main()\nexcept SystemExit:\n    pass")
    assert "dlscale.cli" in names
    heavy = [n for n in names if n.split(".")[0] in ("numpy", "scipy", "numba", "networkx",
                                                     "simpy", "matplotlib")]
    assert heavy == []
    assert [n for n in names if n.startswith("dlscale.commands.")] == []


def test_predict_of_a_few_node_counts_loads_only_the_model():
    code = ("import sys; from dlscale.cli import main\n"
            "main(['predict', 'summit', 'resnet50', '--nodes', '8'])\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    mods = out.strip().splitlines()[-1].split()
    assert "dlscale.perfmodel.training.predict" in mods
    # the command asks the API (issue 28, one front end), which loads no plan, sweep or study
    assert "dlscale.api" in mods
    for top in ("numba", "scipy", "networkx", "simpy", "matplotlib", "sklearn",
                "dlscale.simulator", "dlscale.validation", *UPPER[1:]):
        assert not [m for m in mods if m == top or m.startswith(top + ".")], top
    others = {f"dlscale.commands.{c}" for c in ("simulate", "sweep", "plan", "calibrate",
                                                "validate", "catalog")}
    assert not others & set(mods)


def test_the_parser_of_one_command_is_the_full_parsers_own():
    from dlscale.cli import build_parser

    full, one = build_parser(), build_parser("predict", every=False)
    argv = ["predict", "summit", "resnet50", "--nodes", "1-8", "--format", "json"]
    a, b = vars(full.parse_args(argv)), vars(one.parse_args(argv))
    assert a.keys() == b.keys() and {k: v for k, v in a.items() if k != "run"} == \
        {k: v for k, v in b.items() if k != "run"}
    assert full.format_help() == build_parser(None, every=False).format_help()


@pytest.mark.parametrize("algorithm", ["recursive-doubling", "binomial-tree", "rabenseifner"])
@pytest.mark.parametrize("nodes", [2, 5, 12])
def test_the_numpy_walk_of_the_chains_is_the_compiled_one(algorithm, nodes):
    summit = get_cluster("summit")
    plan = plan_collective(summit.network.topology, nodes, 6, device_links(summit, 6),
                           "allreduce", algorithm, "recursive-doubling")
    packed = plan.packed()
    assert packed is not None
    s = packed.steps
    rng = np.random.default_rng(nodes * 31 + len(algorithm))
    cost = 10 ** rng.uniform(-7, -1, (3, s.classes))
    scale = rng.choice([0.0, 1e-10], (3, len(s.plan_ranks))) * rng.uniform(0.5, 2, (3, 1))
    args = (s.plan_ranks, s.plan_steps, s.step_msgs, s.step_cost, s.step_recv, s.src, s.dst,
            s.cls, s.back, cost, scale, s.recv)
    np.testing.assert_array_equal(chainwalk._chains_numpy(*args),
                                  chainwalk._compiled()(*args))
    assert (s.back >= 0).any() or algorithm != "recursive-doubling"
