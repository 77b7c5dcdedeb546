"""One registry of collectives and algorithms (issue 28): every layer keys on its names.

A second list of algorithm names anywhere in the package fails
:func:`test_no_second_list_of_algorithm_names`; an algorithm registered without its
schedule builder, closed form or kernel fails the tests after it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dlscale.kernels.allreduce import ALGORITHMS as KERNELS
from dlscale.perfmodel.catalog import RUNTIMES
from dlscale.perfmodel.network import registry
from dlscale.perfmodel.network.analytical import COLLECTIVE_ALGORITHMS
from dlscale.perfmodel.network.collectives import ALLREDUCE
from dlscale.perfmodel.network.schedules import ALGORITHMS as SCHEDULES
from dlscale.perfmodel.network.schedules import build_schedule
from dlscale.perfmodel.training.workload import COLLECTIVES

ROOT = Path(__file__).resolve().parents[1]
NAMES = {a.name for a in registry.REGISTRY}


def second_lists(folders=("perfmodel", "simulator", "kernels", "validation", "dlscale")):
    """Each literal tuple, list or set of two or more algorithm names outside the registry."""
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "registry.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
                    values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                    if len(values) == len(node.elts) and all(v in NAMES for v in values):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {values}")
    return found


def test_no_second_list_of_algorithm_names():
    found = second_lists()
    assert not found, "algorithm names listed outside perfmodel/network/registry.py:\n" + \
        "\n".join(found)


def test_the_check_sees_a_second_list(tmp_path):
    (tmp_path / "perfmodel").mkdir()
    (tmp_path / "perfmodel" / "x.py").write_text('ALGS = ("ring", "rabenseifner")\n')
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        assert second_lists(("perfmodel",)) == ["perfmodel/x.py:1: ['ring', 'rabenseifner']"]
    finally:
        ROOT = old


def test_every_layer_keys_on_the_registry():
    assert tuple(ALLREDUCE) == registry.FLAT_ALLREDUCE
    assert COLLECTIVES == registry.ALLREDUCE_CHOICES
    assert tuple(SCHEDULES) == registry.OPERATIONS
    assert set(COLLECTIVE_ALGORITHMS) == set(registry.OPERATIONS)
    kernels = {a.kernel for a in registry.REGISTRY if a.kernel}
    assert set(KERNELS) | {"hierarchical"} == kernels
    for rt in RUNTIMES.values():
        assert set(rt.algorithms) <= set(registry.algorithms("allreduce")), rt.name


@pytest.mark.parametrize("entry", registry.REGISTRY, ids=lambda a: f"{a.operation}:{a.name}")
def test_every_registered_algorithm_builds_a_schedule(entry):
    groups = [np.arange(0, 2), np.arange(2, 4)] if entry.composite else None
    phases = build_schedule(entry.operation, entry.name, 4, 1024.0, groups=groups)
    assert phases and sum(len(ph.src) for ph in phases) > 0


def test_lookup_names_the_valid_algorithms():
    assert registry.get("broadcast", "binomial").operation == "broadcast"
    with pytest.raises(KeyError, match="valid: ring, recursive-doubling"):
        registry.get("allreduce", "butterfly")
    assert registry.algorithms("no-such-operation") == ()


def test_each_runtime_takes_its_algorithms_from_one_librarys_registry_list():
    """The one-list rule for the stacks: every runtime's allreduce algorithms are the
    list :data:`registry.LIBRARIES` registers for its library (RCCL too), and every
    library lists only registered algorithms."""
    for lib, names in registry.LIBRARIES.items():
        assert set(names) <= set(registry.algorithms("allreduce")), lib
    lists = set(registry.LIBRARIES.values()) | {("ring",)}   # the parameter server's ring
    for rt in RUNTIMES.values():
        assert rt.algorithms in lists, rt.name
    assert RUNTIMES["rccl"].algorithms is registry.offered_by("rccl")
    # RCCL implements NCCL's Ring and Tree (ROCm/rccl docs/index.rst)
    assert registry.offered_by("rccl") == registry.offered_by("nccl")
