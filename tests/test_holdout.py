"""The out-of-sample trial (``validation/holdout/``): its files load, its script runs.

Not a test of the error sizes: those are the trial's result, reported in
``validation/holdout/README.md``, and no figure here is compared with a published one.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from dlscale.perfmodel.config import load_cluster, load_workload
from dlscale.perfmodel.hardware import Cluster
from dlscale.perfmodel.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = ROOT / "validation" / "holdout"

CLUSTER_FILES = ("uber-horovod-pascal.toml", "uber-horovod-pascal-tcp.toml",
                 "big-basin-50gbe.toml", "mn1-p100-fdr.toml")
WORKLOAD_FILES = ("resnet50-chainermn.toml", "vgg16-no-overlap.toml")


def _script():
    spec = importlib.util.spec_from_file_location("run_holdout", HOLDOUT / "run_holdout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_holdout"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_toml_is_classified():
    assert sorted(p.name for p in HOLDOUT.glob("*.toml")) == sorted(
        CLUSTER_FILES + WORKLOAD_FILES)


@pytest.mark.parametrize("name", CLUSTER_FILES)
def test_cluster_files_load(name):
    cluster = load_cluster(str(HOLDOUT / name))
    assert isinstance(cluster, Cluster)
    assert cluster.name != cluster.node.name  # each file names its machine


@pytest.mark.parametrize("name", WORKLOAD_FILES)
def test_workload_files_load(name):
    assert isinstance(load_workload(str(HOLDOUT / name)), Workload)


def test_chainermn_runtime_is_one_buffer_ring():
    """The MN-1 file's runtime table reaches the cluster: one packed buffer, ring only."""
    runtime = load_cluster(str(HOLDOUT / "mn1-p100-fdr.toml")).runtime
    assert runtime.name == "chainermn-pure-nccl"
    assert runtime.algorithms == ("ring",)
    assert runtime.fusion_cap_bytes == float("inf")
    assert runtime.coordination == "none" and runtime.cycle_s == 0.0


def test_every_case_has_a_source_and_existing_files():
    cases = _script().CASES
    assert len({c.name for c in cases}) == len(cases)
    for case in cases:
        assert case.source and case.basis and case.published > 0
        assert case.kind in ("efficiency", "throughput", "time")
        for arg in case.argv:
            if arg.endswith(".toml"):
                assert (ROOT / arg).is_file(), f"{case.name}: {arg} missing"


def test_error_sign_and_tolerance():
    mod = _script()
    eff = mod.Case("e", "q", "efficiency", 0.80, "stated", "s", ("x",), "efficiency", 1)
    assert mod.error(eff, 0.86)[0] == pytest.approx(6.0)
    assert mod.error(eff, 0.86)[1:] == ("pp", False)
    assert mod.error(eff, 0.76)[2] is True
    rate = mod.Case("r", "q", "throughput", 100.0, "stated", "s", ("x",), "samples_per_s", 1)
    assert mod.error(rate, 85.0) == (pytest.approx(-15.0), "%", True)
    assert mod.error(rate, 120.0)[2] is False


def test_one_case_end_to_end():
    """The cheapest case runs through the real command and gives a complete row."""
    mod = _script()
    case = next(c for c in mod.CASES if c.name == "goyal-backward-p100")
    rows = mod.run_all((case,))
    row = rows[0]
    assert row["command"].startswith("dlscale predict validation/holdout/big-basin-50gbe.toml")
    assert 0 < row["predicted"] < row["iteration_s"]
    assert row["compute_s"] >= row["predicted"]
    text = mod.format_rows(rows)
    assert "goyal-backward-p100" in text and "within tolerance:" in text
    assert mod.format_rows(rows, markdown=True).startswith("| case |")


def test_a_failing_command_names_itself():
    mod = _script()
    with pytest.raises(RuntimeError, match="dlscale predict no-such-cluster"):
        mod.predict_json(("no-such-cluster", "resnet50", "--nodes", "1"))
