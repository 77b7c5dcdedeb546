"""Hardware of today in the catalog (issue 29, "Hardware of today, cited").

Every new device, link, node and machine loads; its datasheet figures are the ones the
comments cite; each new figure carries a citation (a stricter reading of
tests/test_catalog_citations.py for the new entries: a named source, or an explicit
assumption that the catalog lists); the fractions without a cited single-device rate
say so; and ``dlscale predict PRESET resnet50 --nodes 1,8`` answers and fits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import (
    CLUSTERS,
    DEVICES,
    FRACTION_DERIVATIONS,
    LINKS,
    NETWORKS,
    NODES,
    catalog_rows,
    get_cluster,
    get_device,
    get_link,
    get_node,
)
from dlscale.perfmodel.catalog.devices import FRACTION_SOURCES
from dlscale.perfmodel.catalog.devices_2020s import BASE_2020S, PRECISION_PEAKS, RATES, STAND_INS
from dlscale.perfmodel.machine.hardware import Dragonfly, FatTree
from tests.test_catalog_citations import scan

ROOT = Path(__file__).resolve().parents[1]

NEW_DEVICES = ("a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200-sxm", "b200",
               "mi250x-gcd", "mi300x")
NEW_LINKS = ("pcie-gen4-x16", "pcie-gen5-x16", "nvlink3-x4", "nvlink3-x12", "nvlink4-x18",
             "nvlink5-x18", "infinity-fabric-x1", "infinity-fabric-x4",
             "infinity-fabric-cpu-gcd", "infinity-fabric-mi300x", "ib-ndr", "ib-xdr",
             "ib-ndr-x8", "eth-200g-roce", "eth-400g-roce", "slingshot-11", "slingshot-11-x4")
NEW_NODES = ("perlmutter-gpu", "frontier", "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-8gpu")
NEW_MACHINES = ("perlmutter", "frontier", "dgx-h100-superpod")


def test_every_new_entry_loads_from_its_registry():
    for name in NEW_DEVICES:
        assert get_device(name).kind == "gpu" and get_device(name).source
    for name in NEW_LINKS:
        assert get_link(name).bandwidth_Bps > 0 and get_link(name).source
    for name in NEW_NODES:
        assert get_node(name).devices_per_node >= 4
    for name in NEW_MACHINES:
        c = get_cluster(name)
        c.check_nodes(c.max_nodes)
        assert c.network.name in NETWORKS
    # appended after the existing entries: the old catalog rows keep their order
    assert list(DEVICES)[-len(NEW_DEVICES):] == list(NEW_DEVICES)
    assert list(LINKS)[-len(NEW_LINKS):] == list(NEW_LINKS)
    assert list(NODES)[-len(NEW_NODES):] == list(NEW_NODES)
    assert list(CLUSTERS)[-len(NEW_MACHINES):] == list(NEW_MACHINES)


def test_datasheet_figures_of_the_new_devices():
    tera = 1e12
    a100 = get_device("a100-sxm4-40gb")
    assert (a100.peak_fp64_flops, a100.peak_fp32_flops, a100.peak_fp16_flops) == (
        9.7 * tera, 156 * tera, 312 * tera)                 # fp32 = TF32 dense
    assert (a100.memory_bytes, a100.memory_bandwidth_Bps, a100.tdp_w) == (40e9, 1555e9, 400)
    assert get_device("a100-sxm4-80gb").memory_bandwidth_Bps == 2039e9
    h100 = get_device("h100-sxm")
    assert h100.peak_fp16_flops == pytest.approx(989.5 * tera)
    assert (h100.memory_bytes, h100.memory_bandwidth_Bps, h100.tdp_w) == (80e9, 3350e9, 700)
    h200 = get_device("h200-sxm")
    assert h200.peak_fp16_flops == h100.peak_fp16_flops and h200.memory_bytes == 141e9
    b200 = get_device("b200")
    assert (b200.peak_fp16_flops, b200.memory_bandwidth_Bps) == (2250 * tera, 8000e9)
    gcd = get_device("mi250x-gcd")        # half an MI250X: 383 / 2, 128 GB / 2
    assert (gcd.peak_fp16_flops, gcd.memory_bytes) == (191.5 * tera, 64e9)
    mi300x = get_device("mi300x")
    assert (mi300x.peak_fp16_flops, mi300x.memory_bytes) == (pytest.approx(1307.4 * tera),
                                                            192e9)
    # dense, never the 2:4-sparse figure; bf16 at the fp16 rate; fp8 where the device has it
    for name, peaks in PRECISION_PEAKS.items():
        assert peaks["bf16"] == peaks["fp16"] == DEVICES[name].peak_fp16_flops, name
        assert peaks["fp64"] == DEVICES[name].peak_fp64_flops
    assert {n for n, p in PRECISION_PEAKS.items() if p["fp8"] > 0} == {
        "h100-sxm", "h200-sxm", "b200", "mi300x"}
    assert PRECISION_PEAKS["h100-sxm"]["fp8"] == 1979 * tera


def test_links_of_today():
    assert get_link("nvlink3-x12").bandwidth_Bps == 300e9      # 600 GB/s both ways
    assert get_link("nvlink4-x18").bandwidth_Bps == 450e9      # 900 GB/s both ways
    assert get_link("nvlink5-x18").bandwidth_Bps == 900e9      # 1.8 TB/s both ways
    for name, gbps in (("ib-hdr", 200), ("ib-ndr", 400), ("ib-xdr", 800), ("slingshot-11", 200),
                       ("eth-200g-roce", 200), ("eth-400g-roce", 400)):
        assert get_link(name).bandwidth_Bps == gbps * 1e9 / 8, name


def test_the_presets_follow_their_public_documents():
    p = get_cluster("perlmutter")
    assert (p.max_nodes, p.node.device.name, p.node.devices_per_node) == (1536, "a100-sxm4-40gb", 4)
    assert p.node.nic.bandwidth_Bps == 4 * 25e9
    t = p.network.topology
    assert isinstance(t, Dragonfly) and (t.groups, t.routers_per_group) == (12, 32)
    assert t.groups * t.routers_per_group * t.terminals_per_router >= t.max_nodes
    f = get_cluster("frontier")
    assert (f.max_nodes, f.node.device.name, f.node.devices_per_node) == (9856, "mi250x-gcd", 8)
    assert isinstance(f.network.topology, Dragonfly) and f.network.topology.groups == 77
    s = get_cluster("dgx-h100-superpod")
    assert (s.max_nodes, s.node.devices_per_node, s.node.intra_link.name) == (127, 8, "nvlink4-x18")
    ft = s.network.topology
    assert isinstance(ft, FatTree) and (ft.rails, ft.oversubscription(1)) == (8, 1.0)


def test_fractions_solved_where_cited_and_stand_ins_said_so():
    solved = {r.device for r in RATES}
    assert solved == {"a100-sxm4-80gb"}
    covered = {n for s in FRACTION_SOURCES.values() for n in s.applies_to}
    for name in NEW_DEVICES:
        assert name in covered and f"{name} (fp16)" in covered
        text = FRACTION_DERIVATIONS[name]
        if name in STAND_INS:
            assert text.startswith("no cited single-device training rate found; assumption")
        else:
            assert "DeepLearningExamples" in text and "assumption" not in text
    rows = {r["name"]: r for r in catalog_rows("devices")}
    assert "stands in" in rows["h100-sxm"]["fraction_derivation"]


# ---- every new figure cites its source -------------------------------------------------
#: (module, the lines that open and close its block of new entries; None: the whole
#: module, or to its end)
NEW_BLOCKS = (("perfmodel/catalog/devices_2020s.py", None, None),
              ("perfmodel/catalog/links.py", "# --- links of the 2020s", None),
              ("perfmodel/catalog/nodes.py", "# --- nodes of the 2020s", None),
              ("perfmodel/catalog/clusters.py", "# --- machines of the 2020s",
               "NETWORKS: dict[str, NetworkSpec]"))
#: a named public source: a URL or domain, a datasheet / user guide / reference
#: architecture / whitepaper / spec / README, a paper (et al. + year, arXiv)
_NAMED = re.compile(r"https?://|\b[\w-]+\.(org|com|gov|net|io)\b|datasheet|data sheet|"
                    r"user guide|reference architecture|\bRA\b|whitepaper|\bspec\b|README|"
                    r"et al\.|arXiv|IEEE", re.IGNORECASE)


def _new_literals(path: str, begin: str | None, end: str | None):
    lines = (ROOT / path).read_text().splitlines()
    first = 1 if begin is None else next(i for i, ln in enumerate(lines, 1) if begin in ln)
    last = len(lines) if end is None else next(i for i, ln in enumerate(lines, 1) if end in ln)
    return [lit for lit in scan(path) if first <= lit.line <= last]


@pytest.mark.parametrize(("path", "begin", "end"), NEW_BLOCKS)
def test_each_new_figure_names_its_source(path, begin, end):
    found = _new_literals(path, begin, end)
    assert len(found) >= 8, path            # the scan sees the new figures at all
    unnamed = [str(lit) for lit in found
               if not _NAMED.search(lit.comment) and not lit.assumption_only]
    assert not unnamed, "\n".join(unnamed)
    assert not [str(lit) for lit in found if not lit.cited]


def test_the_new_source_strings_name_a_document():
    for registry, names in ((DEVICES, NEW_DEVICES), (LINKS, NEW_LINKS), (NODES, NEW_NODES),
                            (CLUSTERS, NEW_MACHINES)):
        for name in names:
            assert _NAMED.search(registry[name].source) or re.search(
                r"\b20[0-4]\d\b", registry[name].source), (name, registry[name].source)


def test_each_new_device_entry_names_its_datasheet_or_reading():
    # the comment block over each entry names the datasheet/whitepaper it is from, and
    # "secondary" where the figure was read from a page reproducing it
    path = "perfmodel/catalog/devices_2020s.py"
    lines = (ROOT / path).read_text().splitlines()
    found = scan(path)
    for name in NEW_DEVICES:
        start = next(i for i, ln in enumerate(lines, 1) if ln.strip().startswith(f'"{name}": _dev('))
        texts = " ".join(lit.comment for lit in found if start < lit.line <= start + 3).lower()
        assert "datasheet" in texts or "data sheet" in texts, name
        assert "secondary" in texts or "whitepaper" in texts, name
    assert set(BASE_2020S) == set(NEW_DEVICES)


@pytest.mark.parametrize("name", NEW_MACHINES)
def test_predict_on_each_new_machine_answers_and_fits(name, capsys):
    assert main(["predict", name, "resnet50", "--nodes", "1,8"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if re.match(r"^\s+[18]\s+\d", ln)]
    assert [r[0] for r in rows] == ["1", "8"]
    header = next(ln.split() for ln in out.splitlines() if ln.lstrip().startswith("nodes"))
    fits = header.index("fits")
    # a column with a [low-high] band is two tokens: index from the right (after fits,
    # allreduce and network_limit are one token each)
    assert all(r[fits - len(header)] == "yes" for r in rows), out


def test_frontier_runs_rccl_listed_with_its_source(capsys):
    """Frontier's MI250X run RCCL, ROCm's port of NCCL: predict's header names it and
    the runtime catalog lists it with its sources."""
    f = get_cluster("frontier")
    assert f.runtime.name == "rccl" and f.runtime.fusion_cap_bytes == 25 * 1024**2
    capsys.readouterr()
    assert main(["predict", "frontier", "resnet50", "--nodes", "1,64"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("on frontier, runtime rccl"), head
    assert main(["catalog", "runtimes", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    rccl = rows["rccl"]
    assert "ROCm/rccl docs/index.rst" in rccl["source"] and "2507.03114" in rccl["source"]
    assert rccl["auto_rule"] == "model fastest of ring, double-binary-tree"
    assert rccl["compute_slowdown"] == rows["nccl"]["compute_slowdown"]
