"""The ``dlscale simulate`` subcommand module."""

from __future__ import annotations

import argparse
import json

import networkx as nx
import pytest

from dlscale.commands import simulate
from dlscale.perfmodel.errors import ConfigError


def parse(argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    simulate.add_parser(sub)
    return parser.parse_args(["simulate", *argv])


def test_table_json_output_and_trace(tmp_path, capsys):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    args = parse(["stampede2-knl", "--nodes", "8", "--collective", "ring", "--size-bytes", "1e6",
                  "-o", str(out), "--trace-out", str(trace)])
    assert args.run(args) == 0
    text = capsys.readouterr().out
    assert "allreduce (ring)" in text and "most utilised links" in text
    doc = json.loads(out.read_text())
    assert doc["ranks"] == 8 and doc["time_s"] > 0 and doc["metrics"]["endpoints"] == 8
    assert json.loads(trace.read_text())["traceEvents"]
    args = parse(["stampede2-knl", "--nodes", "4", "--mode", "flow", "--format", "json",
                  "--placement", "random", "--seed", "2", "--collective", "rabenseifner"])
    assert args.run(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "flow" and doc["algorithm"] == "rabenseifner"


def test_graphml_topology(tmp_path, capsys):
    G = nx.star_graph(4)
    for n in range(1, 5):
        G.nodes[n]["kind"] = "host"
    nx.set_edge_attributes(G, 1e9, "bandwidth_Bps")
    nx.set_edge_attributes(G, 1e-6, "latency_s")
    path = tmp_path / "star.graphml"
    nx.write_graphml(G, path)
    args = parse([str(path), "--size-bytes", "4e6", "--format", "json"])
    assert args.run(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == 4 and doc["metrics"]["bisection_exact"] is False


def test_user_errors():
    with pytest.raises(ConfigError, match="workload: unknown name 'resnet5'"):
        args = parse(["summit", "resnet5"])
        args.run(args)
    with pytest.raises(ConfigError, match="nodes"):
        args = parse(["stampede2-knl", "--nodes", "0"])
        args.run(args)
