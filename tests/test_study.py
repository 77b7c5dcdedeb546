"""Study files: parsing, validation messages, grid expansion."""

from __future__ import annotations

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.study import load_study, parse_study, point_key

BASE = {"cluster": "summit", "workload": "resnet50", "nodes": [1, 4]}


def study(**kw):
    return parse_study({**BASE, **kw}, "s.toml")


def test_grid_is_product_in_file_order_nodes_innermost():
    s = study(vary={"tau": [1, 2], "collective": ["ring", "rabenseifner", "hierarchical"]})
    assert len(s) == 2 * 3 * 2
    pts = list(s.points())
    assert [p.index for p in pts] == list(range(12))
    assert pts[0].params == {"workload.tau": 1, "workload.collective": "ring"}
    assert [p.nodes for p in pts[:4]] == [1, 4, 1, 4]
    assert pts[2].params["workload.collective"] == "rabenseifner"
    assert pts[6].params["workload.tau"] == 2


def test_prefix_inferred_or_explicit():
    s = study(vary={"network.link.bandwidth_GBps": [10.0], "cluster.node.nic.bandwidth_Gbps": [100]})
    assert s.param_names == ["cluster.network.link.bandwidth_GBps", "cluster.node.nic.bandwidth_Gbps"]


def test_ranges():
    s = study(vary={"batch_per_device": {"start": 32, "stop": 128, "step": 32},
                    "fusion_threshold_MiB": {"start": 16, "stop": 128, "factor": 2},
                    "tau": {"start": 1, "stop": 100, "num": 3, "scale": "log"},
                    "momentum": {"start": 0.0, "stop": 0.5, "num": 3}})
    values = {names[0]: [v[0] for v in vals] for names, vals in s.axes}
    assert values["workload.batch_per_device"] == [32, 64, 96, 128]
    assert values["workload.fusion_threshold_MiB"] == [16, 32, 64, 128]
    assert values["workload.tau"] == [1, 10, 100]
    assert values["workload.momentum"] == [0.0, 0.25, 0.5]


def test_zip_moves_together():
    s = study(zip=[{"node.nic.bandwidth_Gbps": [100, 200], "price_per_node_hour": [3.0, 4.5]}])
    assert len(s) == 2 * 2
    combos = [p for _, p in s.groups()]
    assert combos == [{"cluster.node.nic.bandwidth_Gbps": 100, "cluster.price_per_node_hour": 3.0},
                      {"cluster.node.nic.bandwidth_Gbps": 200, "cluster.price_per_node_hour": 4.5}]


def test_nodes_string_and_relative_paths(tmp_path):
    f = tmp_path / "st.toml"
    f.write_text('cluster = "c/cluster.toml"\nworkload = "resnet50"\nnodes = "1-16"\n'
                 '[vary]\ncluster = ["summit", "x.toml"]\n')
    s = load_study(f)
    assert s.nodes == [1, 2, 4, 8, 16]
    assert s.cluster == str(tmp_path / "c" / "cluster.toml")
    assert s.axes[0][1] == [("summit",), (str(tmp_path / "x.toml"),)]
    assert s.name == "st"


@pytest.mark.parametrize("extra, match", [
    ({"vary": {"tau": []}}, r"s\.toml: vary\.tau: empty list; give at least one value"),
    ({"fidelity": "exact"}, r"s\.toml: fidelity: unknown value 'exact'; valid: analytical, simulated, hybrid"),
    ({"fidelity": "hybrid"}, r"simulate_best: hybrid fidelity needs simulate_best >= 1, got 0"),
    ({"rank_by": "speed"}, r"rank_by: unknown metric 'speed'; valid: time_to_train_s"),
    ({"vary": {"bandwith": [1]}}, r"vary\.bandwith: unknown parameter 'bandwith'; a dotted path"),
    ({"vary": {"name": ["a"]}}, r"'name' is a field of both cluster and workload"),
    ({"vary": {"tau": [1], "workload.tau": [2]}}, r"'workload\.tau' is varied twice"),
    ({"vary": {"tau": {"start": 4, "stop": 1, "step": 1}}}, r"vary\.tau: range stop 1 is below start 4"),
    ({"vary": {"tau": {"start": 1, "stop": 4}}}, r"vary\.tau: range keys \['start', 'stop'\] not allowed"),
    ({"vary": {"tau": 3}}, r"vary\.tau: expected a list of values or a range table, got 3"),
    ({"zip": [{"tau": [1, 2], "collective": ["ring"]}]}, r"zip\[0\]: zipped lists must have equal lengths, got workload\.tau: 2, workload\.collective: 1"),
    ({"nodes": [0]}, r"nodes: node counts must be integers >= 1, got 0"),
    ({"nodes": "8-2"}, r"nodes: range '8-2' ends before it starts"),
    ({"seed": -1}, r"seed: must be an integer >= 0, got -1"),
    ({"plots": ["pie"]}, r"plots: expected a list from scaling, heatmap, pareto, got \['pie'\]"),
    ({"heatmap": ["tau", "collective"]}, r"heatmap: 'workload\.tau' is not varied"),
    ({"colour": "red"}, r"s\.toml: colour: unknown key; valid: name, cluster"),
])
def test_validation_messages(extra, match):
    with pytest.raises(ConfigError, match=match):
        study(**extra)


def test_missing_key():
    with pytest.raises(ConfigError, match=r"s\.toml: missing required key 'nodes'"):
        parse_study({"cluster": "summit", "workload": "resnet50"}, "s.toml")


def test_point_key_stable_and_distinct():
    a = point_key({"workload.tau": 1, "cluster.x": 2.5}, 4, "analytical")
    assert a == point_key({"cluster.x": 2.5, "workload.tau": 1}, 4, "analytical")
    assert a != point_key({"workload.tau": 1, "cluster.x": 2.5}, 4, "simulated")
    assert len(a) == 16
