"""Hardware catalog: devices, links, nodes, clusters, registries, rows."""

import pytest

from dlscale.perfmodel import catalog
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
from dlscale.perfmodel.catalog.devices import FRACTION_SOURCES, solve_fraction
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Link, NetworkSpec, NodeSpec
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.workload import Workload

#: Cited machine sizes: OLCF guide / TOP500 (Summit 4,608), NERSC / TOP500 (Cori KNL
#: 9,688), TACC guide (Stampede2 KNL 4,200 and SKX 1,736), single servers.
CITED_NODES = {
    "summit": 4608, "cori-knl": 9688, "cori-knl-flat": 9688, "stampede2-knl": 4200,
    "stampede2-skx": 1736, "k80-8gpu": 1, "dgx1-p100": 1, "dgx1-v100": 1,
    "pcie-4xp100": 1, "pcie-8xp100": 1, "pcie-4xv100": 1, "pcie-8xv100": 1,
    "p100-cluster": 648,
    # docs.nersc.gov (1,536 A100 40 GB nodes), OLCF Frontier user guide (9,856 nodes),
    # NVIDIA DGX SuperPOD RA (4 SU, 127 DGX H100)
    "perlmutter": 1536, "frontier": 9856, "dgx-h100-superpod": 127,
}


def test_contract_cluster_names_present():
    for name in ("summit", "cori-knl", "stampede2-knl", "stampede2-skx", "k80-8gpu",
                 "p100-cluster", "dgx1-p100", "dgx1-v100", "pcie-4xp100"):
        assert isinstance(get_cluster(name), Cluster)


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_every_cluster_constructs_with_cited_size(name):
    cluster = get_cluster(name)
    assert cluster.max_nodes == CITED_NODES[name]
    cluster.check_nodes(cluster.max_nodes)
    with pytest.raises(ConfigError, match=f"more than cluster '{name}' holds"):
        cluster.check_nodes(cluster.max_nodes + 1)


def test_every_entry_has_a_source():
    for registry in (DEVICES, LINKS, NODES, CLUSTERS, NETWORKS):
        for name, entry in registry.items():
            assert entry.source.strip(), name


def test_unknown_names_list_valid_ones_and_suggest():
    with pytest.raises(ConfigError, match=r"^cluster: unknown name 'sumit'; valid: cori-knl, "
                                          r".*summit.* \(did you mean 'summit'\?\)$"):
        get_cluster("sumit")
    with pytest.raises(ConfigError, match=r"^device: unknown name 'v100'; valid: .*v100-sxm2"):
        get_device("v100")
    with pytest.raises(ConfigError, match=r"^link: unknown name 'nvlink3'; valid: .*"
                                          r"\(did you mean 'nvlink2'\?\)"):
        get_link("nvlink3")
    with pytest.raises(ConfigError, match=r"^node: unknown name 'x'; valid: "):
        get_node("x")


def test_datasheet_figures():
    v100 = get_device("v100-sxm2")
    assert (v100.peak_fp32_flops, v100.peak_fp64_flops, v100.peak_fp16_flops) == (
        15.7e12, 7.8e12, 125e12)
    assert (v100.memory_bytes, v100.memory_bandwidth_Bps) == (16e9, 900e9)
    knl = get_device("xeon-phi-7250-flat")
    assert knl.cores == 68
    assert knl.peak_fp64_flops == pytest.approx(3.0464e12)      # Intel: 3.05 TFLOPS fp64
    assert knl.training_memory_bytes == 16e9                    # flat mode: MCDRAM
    assert get_device("xeon-phi-7250-cache").training_memory_bytes == 96e9
    assert get_device("xeon-phi-7230-flat").cores == 64
    assert get_device("xeon-8160").peak_fp64_flops == pytest.approx(1.6128e12)
    # K80 is one GK210: half the board's 8.73 TFLOPS fp32 and 24 GB
    k80 = get_device("k80")
    assert (k80.peak_fp32_flops, k80.memory_bytes) == (pytest.approx(4.365e12), 12e9)
    assert get_device("p100-sxm2").peak_fp32_flops == 10.6e12
    assert get_device("p100-pcie").peak_fp32_flops == 9.3e12
    assert get_device("k20x").peak_fp32_flops == 3.95e12


#: The cited single-device measurements, typed here from the sources (devices.py
#: comments): (FRACTION_SOURCES label, model, batch, precision, images/s).
CITED_RATES = [
    ("p100-sxm2", "resnet50", 64, "fp32", 219.0),              # TF benchmarks, DGX-1 P100
    ("k80", "resnet50", 64, "fp32", 52.0),                     # TF benchmarks, GCE K80
    ("v100-sxm2", "resnet50", 64, "fp32", 1.26 * 219.0),       # Dell EMC guide, 1.26 x P100
    ("v100-sxm2 (fp16)", "resnet50", 256, "fp16", 1075.0),     # NVIDIA blog, May 2018
    ("xeon-phi-7250-cache", "alexnet", 256, "fp32", 444.0),    # intel/caffe#132
    ("2x-xeon-e5-2699v3", "alexnet", 256, "fp32", 256.0),      # 01org/caffe#16
    ("k40", "alexnet", 256, "fp32", 250.0),                    # Caffe perf notes, 4 ms/image
    ("a100-sxm4-80gb", "resnet50", 256, "fp32", 938.0),        # NVIDIA DLE RN50, 1 GPU TF32
    ("a100-sxm4-80gb (fp16)", "resnet50", 256, "fp16", 2470.0),  # NVIDIA DLE RN50, 1 GPU AMP
]


def _one_device_cluster(device):
    link = Link("l", 10e9, 1e-6)
    return Cluster("one", NodeSpec("n", device, 1, link, link), NetworkSpec("x", Crossbar(2), link))


@pytest.mark.parametrize(("label", "model", "batch", "precision", "rate"), CITED_RATES)
def test_each_sustained_fraction_reproduces_its_source_through_predict(label, model, batch,
                                                                       precision, rate):
    src = FRACTION_SOURCES[label]
    assert (src.model.name, src.batch, src.precision) == (model, batch, precision)
    work = Workload("w", catalog.get_model(model), batch, precision=precision)
    got = float(predict(_one_device_cluster(src.device), work, 1).samples_per_s[0])
    assert got == pytest.approx(rate, rel=0.02)
    # the fraction is the GEMM one: in (0, 1], and the one every device it applies to uses
    for name in src.applies_to:
        dev = get_device(name.removesuffix(" (fp16)"))
        assert 0 < dev.sustained_fraction_for(precision) <= 1
        assert dev.sustained_fraction_for(precision) == src.device.sustained_fraction_for(precision)
        assert FRACTION_DERIVATIONS[name].endswith(f"{dev.sustained_fraction_for(precision):.3f}")


def test_every_catalog_device_has_a_cited_source():
    covered = {n for s in FRACTION_SOURCES.values() for n in s.applies_to}
    assert set(DEVICES) <= covered
    assert {"v100-sxm2 (fp16)", "v100-pcie (fp16)"} <= covered


def test_a_rate_no_fraction_can_reach_is_refused():
    p100 = get_device("p100-sxm2")
    with pytest.raises(ConfigError, match=r"sustained_fraction of p100-sxm2: 5000 samples/s of "
                                          r"resnet50 at batch 64 needs more than the whole fp32"):
        solve_fraction(p100, catalog.get_model("resnet50"), "fp32", 64, 5000.0)


def test_links():
    assert get_link("pcie-gen3-x16").bandwidth_Bps == pytest.approx(15.754e9, rel=1e-3)
    assert get_link("nvlink2").bandwidth_Bps == 25e9
    assert get_link("nvlink1").bandwidth_Bps == 20e9
    assert get_link("ib-edr").bandwidth_Bps == 12.5e9
    assert get_link("ib-hdr").bandwidth_Bps == 25e9
    assert get_link("ib-fdr").bandwidth_Bps == pytest.approx(6.82e9, rel=1e-3)
    assert get_link("omnipath-100").bandwidth_Bps == 12.5e9
    for rate in (10, 25, 50, 100):
        tcp, roce = get_link(f"eth-{rate}g-tcp"), get_link(f"eth-{rate}g-roce")
        assert tcp.bandwidth_Bps == roce.bandwidth_Bps == rate * 1e9 / 8
        assert roce.latency_s < tcp.latency_s


def test_summit_node_and_network():
    s = get_cluster("summit")
    assert s.node.device.name == "v100-sxm2" and s.node.devices_per_node == 6
    assert s.node.intra_link.bandwidth_Bps == 50e9
    assert s.node.host_link.bandwidth_Bps == 50e9
    assert s.node.nic.bandwidth_Bps == 23e9
    t = s.network.topology
    assert (t.family, t.levels, t.rails) == ("fat-tree", 3, 2)
    assert all(t.oversubscription(level) == 1.0 for level in (1, 2))


def test_stampede2_partitions_share_one_fabric():
    knl, skx = get_cluster("stampede2-knl"), get_cluster("stampede2-skx")
    assert knl.network.link is skx.network.link
    for c in (knl, skx):
        assert c.network.topology.down_up == ((28, 20),)
        assert c.network.topology.oversubscription(1) == pytest.approx(1.4)
    assert skx.node.devices_per_node == 2 and skx.node.memory_bytes == 192e9
    assert knl.node.device.cores == 68


def test_cori_dragonfly_geometry():
    t = get_cluster("cori-knl").network.topology
    assert (t.family, t.routers_per_group, t.terminals_per_router) == ("dragonfly", 96, 4)
    assert t.groups * t.routers_per_group * t.terminals_per_router >= t.max_nodes


def test_k80_box_is_eight_gk210_on_pcie():
    node = get_cluster("k80-8gpu").node
    assert (node.device.name, node.devices_per_node) == ("k80", 8)
    assert node.intra_link.name == node.host_link.name == "pcie-gen3-x16"


def test_prices_only_where_cited():
    priced = {n for n, c in CLUSTERS.items() if c.price_per_node_hour > 0}
    assert priced == {"k80-8gpu", "dgx1-v100"}
    for name in priced:
        assert "price" in CLUSTERS[name].source


@pytest.mark.parametrize("kind", catalog.CATALOG_KINDS)
def test_catalog_rows_uniform_and_sourced(kind):
    rows = catalog_rows(kind)
    assert rows
    keys = set(rows[0])
    assert all(set(r) == keys for r in rows)
    assert "name" in keys
    if kind not in ("topologies", "algorithms"):
        assert all(r["source"] for r in rows)
    else:
        assert all(r["description"] for r in rows)


def test_catalog_rows_unknown_kind():
    with pytest.raises(ConfigError, match=r"^catalog kind: unknown name 'device'; valid: .*"
                                          r"\(did you mean 'devices'\?\)"):
        catalog_rows("device")


def test_algorithms_list_auto_with_a_description():
    from dlscale.perfmodel.catalog.rows import catalog_rows

    rows = {r["name"]: r for r in catalog_rows("algorithms")}
    assert rows["auto"]["type"] == "collective"
    assert "fastest" in rows["auto"]["description"]
