"""The parameter-server runtime: TensorFlow's placement, the closed form, the flow
simulation beside it, and the refusals (issue 25 item 1, the PS bullet)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_model, get_workload
from dlscale.perfmodel.catalog.runtimes import apply_runtime
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ps import fifo_end, ps_plan, pull_end_s, push_end_s
from dlscale.perfmodel.training.psplace import model_variables, place
from dlscale.simulator.training.run import simulate_training

K80 = "validation/holdout/aws-p2-8xlarge-x8.toml"


def _ps(cluster, **fields):
    c = apply_runtime(cluster, "parameter-server")
    return dataclasses.replace(c, runtime=dataclasses.replace(c.runtime, **fields))


def _w(model, batch=64, **kw):
    return dataclasses.replace(get_workload(model), batch_per_device=batch, **kw)


# --- TensorFlow's placement ------------------------------------------------------------

def test_greedy_places_as_tensorflow_test_expects():
    """tensorflow/contrib/training/python/training/device_setter_test.py: with a
    uniform load the greedy strategy equals round-robin (u, v, w, x -> 0, 1, 0, 1);
    with byte_size_load_fn on shapes [2,2], [2,1], [2,2], [1,3] (4, 2, 4, 3 floats)
    it places them 0, 1, 1, 0 (16 B on 0; then 8 B on 1; then 8 + 16 on 1; then 0)."""
    assert place(np.ones(4), 2, "greedy").tolist() == [0, 1, 0, 1]
    assert place(np.ones(4), 2, "round-robin").tolist() == [0, 1, 0, 1]
    assert place(4.0 * np.array([4, 2, 4, 3]), 2, "greedy").tolist() == [0, 1, 1, 0]


def test_variables_are_the_frameworks_tensors():
    """ResNet-50 has 161 trainable tensors (53 kernels, 53 x (gamma, beta), fc kernel
    and bias: the 161 of Horovod's cache bit vector); VGG-16 has 16 kernels and 16
    biases, fc6's kernel 25088 x 4096."""
    v = model_variables(get_model("resnet50"))
    assert len(v.elements) == 161 and int(v.elements.sum()) == get_model("resnet50").params
    g = model_variables(get_model("vgg16"))
    assert len(g.elements) == 32 and int(g.elements.max()) == 25088 * 4096
    assert g.names[g.elements.argmax()].endswith("/kernel")


def test_round_robin_leaves_vgg16_servers_unequal():
    """Round-robin ignores sizes: at 4 servers VGG-16's fc6 and fc8 kernels (variables
    26 and 30) land on the same server; greedy keeps them apart."""
    b = model_variables(get_model("vgg16")).elements * 4.0
    rr = np.bincount(place(b, 4, "round-robin"), weights=b, minlength=4)
    gr = np.bincount(place(b, 4, "greedy"), weights=b, minlength=4)
    assert rr.max() / rr.mean() > 3.2 and gr.max() < rr.max()


# --- the closed form -------------------------------------------------------------------

def test_fifo_end_is_the_last_byte_of_a_fifo_link():
    assert fifo_end(np.array([0.0, 0.0]), np.array([1.0, 2.0])) == 3.0
    assert fifo_end(np.array([0.0, 5.0]), np.array([1.0, 2.0])) == 7.0
    assert fifo_end(np.array([1.0]), np.array([0.0])) == 0.0


def test_pull_of_a_hand_sized_case():
    """Daint (one P100 per node, no host link): 2 colocated servers, 2 workers. Each
    server sends its variables to the other worker: the most loaded link carries the
    larger server's bytes, after one latency."""
    c = _ps(load_cluster("validation/holdout/piz-daint-p100.toml"))
    plan = ps_plan(c, _w("inception-v3"), 2)
    v = np.bincount(plan.var_node, weights=plan.var_bytes, minlength=2)
    t, limit = pull_end_s(plan)
    assert t == pytest.approx(plan.nic_latency_s + v.max() / plan.nic_Bps, rel=1e-12)
    assert limit in ("server-out", "worker-in")


def test_every_input_moves_the_answer():
    base = _ps(load_cluster(K80))
    w = _w("vgg16")

    def it(cluster, work=w, n=4):
        return float(predict(cluster, work, [n]).iteration_s[0])

    ref = it(base)
    assert it(dataclasses.replace(base, runtime=dataclasses.replace(
        base.runtime, ps_servers=1))) > ref
    assert it(dataclasses.replace(base, runtime=dataclasses.replace(
        base.runtime, ps_placement="separate"))) > ref
    assert it(dataclasses.replace(base, runtime=dataclasses.replace(
        base.runtime, ps_strategy="greedy"))) < ref
    assert it(base, dataclasses.replace(w, overlap=False)) > ref
    assert it(base, n=8) > ref                      # more workers into each server


def test_ps_is_slower_than_its_balanced_bound():
    """Balanced servers move what a ring moves; round-robin over VGG-16's variables
    makes the step slower than the same bytes spread evenly would."""
    c = _ps(load_cluster(K80))
    w = _w("vgg16")
    plan = ps_plan(c, w, 8)
    even = dataclasses.replace(plan, var_node=np.arange(len(plan.var_bytes)) % 8,
                               var_bytes=np.full(len(plan.var_bytes), plan.var_bytes.mean()))
    zero = np.zeros(len(plan.var_bytes))
    assert push_end_s(plan, zero)[0] > 3 * push_end_s(even, zero)[0]


# --- predict against simulate ------------------------------------------------------------

#: predict's links are each bounded on their own and every worker starts its forward
#: pass when the slowest pull ends; the flow simulation delays a message at its next
#: link by max-min sharing at the earlier one (slower) and starts each worker when its
#: own reads are in (faster, where the servers' loads differ): within this of each other
#: (measured: -0.0002% .. +1.03% on the first five cases, +3.87% on AlexNet's 3 servers,
#: where fc6 and fc7 share the workers' outbound links while both servers' inbound
#: links are busy)
TOLERANCE = 0.05

CASES = [
    (K80, "resnet50", 2, {}),
    (K80, "vgg16", 4, {}),
    (K80, "inception-v3", 4, {"ps_strategy": "greedy"}),
    (K80, "resnet50", 3, {"ps_servers": 2, "ps_placement": "separate"}),
    ("validation/holdout/piz-daint-p100.toml", "inception-v3", 8, {}),
    (K80, "alexnet", 8, {"ps_servers": 3}),
]


@pytest.mark.parametrize(("path", "model", "nodes", "fields"), CASES)
def test_predict_and_simulate_agree(path, model, nodes, fields):
    c = _ps(load_cluster(path), **fields)
    w = _w(model)
    p = float(predict(c, w, [nodes]).iteration_s[0])
    s = simulate_training(c, w, nodes, iterations=2, network="flow",
                          efficiency=False).iteration_s
    assert abs(s / p - 1) < TOLERANCE, (model, nodes, fields, p, s)


def test_one_message_at_a_time_is_exact():
    """One worker node, its server on it: only the host links move bytes, one
    variable after another, so the flows are the closed form's FIFO."""
    c = dataclasses.replace(_ps(load_cluster(K80)), noise="none")   # no draws: exact
    w = _w("resnet50")
    p = float(predict(c, w, [1]).iteration_s[0])
    s = simulate_training(c, w, 1, iterations=2, network="flow", efficiency=False)
    assert s.iteration_s == pytest.approx(p, rel=1e-9)


def test_simulation_is_deterministic_with_noise():
    c = _ps(load_cluster(K80))
    w = _w("resnet50")
    a, b = (simulate_training(c, w, 2, iterations=3, network="flow", seed=4,
                              noise="lognormal:0.1", efficiency=False).iteration_times_s
            for _ in range(2))
    assert a.tolist() == b.tolist()


# --- refusals: one line, exit status 2 -------------------------------------------------

@pytest.mark.parametrize(("extra", "needle"), [
    (["--ps-servers", "-1"], "--ps-servers: must be an integer >= 0"),
    (["--ps-servers", "8", "--ps-placement", "separate", "--nodes", "4"],
     "need 12 nodes"),
    (["--collective", "ring"], "collective: 'ring' is an allreduce"),
    (["--algorithm", "sync-easgd"], "has its own master"),
    (["--grouping", "graph-aware"], "grouping: 'graph-aware'"),
])
def test_predict_refuses(extra, needle, capsys):
    argv = ["predict", K80, "resnet50", "--runtime", "parameter-server", "--nodes", "1,2",
            *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err


def test_ps_flags_refused_without_ps_runtime(capsys):
    assert main(["predict", "summit", "resnet50", "--nodes", "2", "--ps-strategy",
                 "greedy"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--ps-strategy" in err and "exchanges gradients by allreduce" in err


def test_simulate_refuses_a_routed_network(capsys):
    assert main(["simulate", K80, "resnet50", "--nodes", "2", "--runtime",
                 "parameter-server", "--network", "fast"]) == 2
    assert "network 'flow'" in capsys.readouterr().err


def test_runtime_fields_refused_in_python():
    rt = get_cluster("summit").runtime
    for field, value in (("exchange", "gossip"), ("ps_servers", 1.5),
                         ("ps_placement", "far"), ("ps_strategy", "random")):
        with pytest.raises(ConfigError, match=field):
            dataclasses.replace(rt, **{field: value})


def test_trace_shows_the_pull_and_the_pushes():
    c = _ps(load_cluster(K80))
    r = simulate_training(c, _w("resnet50"), 2, iterations=2, network="flow",
                          efficiency=False, trace=True, trace_ranks=2)
    names = {e["name"] for e in r.trace["traceEvents"] if e["ph"] == "X"}
    assert {"pull variables (parameter servers)", "push gradients (parameter servers)",
            "forward", "backward", "update"} <= names


@pytest.mark.parametrize("cluster,nodes", [("summit", 1), ("dgx1-v100", 1), ("summit", 2)])
def test_predict_and_simulate_name_the_exchange_alike(cluster, nodes):
    """Six or eight GPUs of one node push and pull through its server: predict named
    the row's exchange "parameter-server" (ranks > 1), simulate "" (worker nodes > 1),
    with the same comm_s priced in both (Summit, one node: 0.0041 s)."""
    c = apply_runtime(dataclasses.replace(get_cluster(cluster), noise="none"),
                      "parameter-server")
    w = get_workload("resnet50")
    row = predict(c, w, [nodes]).to_rows()[0]
    sim = simulate_training(c, w, nodes, iterations=2, efficiency=False,
                            network="flow").to_rows()[0]
    assert row["allreduce"] == "parameter-server"
    assert sim["allreduce"] == row["allreduce"]


def test_a_simulated_sweep_and_the_api_run_the_flows_the_command_runs(tmp_path):
    """``dlscale simulate summit resnet50 --runtime parameter-server`` runs the pushes
    and pulls as flows (network 'flow' by default); the Python API's simulate_training
    and a simulated sweep defaulted to 'fast', which refuses a parameter server, so
    their point was an error row ("network: runtime 'parameter-server' is simulated
    as max-min fair flows ...; got 'fast'") where the command answered."""
    from dlscale.api import sweep

    c = apply_runtime(get_cluster("summit"), "parameter-server")
    w = get_workload("resnet50")
    api = simulate_training(c, w, 2, iterations=2, efficiency=False)
    assert api.network == "flow"
    res = sweep({"name": "ps", "cluster": "summit", "workload": "resnet50", "nodes": [2],
                 "fidelity": "simulated", "plots": [],
                 "vary": {"cluster.runtime": ["parameter-server"]}}, tmp_path / "s",
                executor="serial")
    (row,) = res.rows
    assert row["status"] == "ok", row["error"]
    assert row["network"] == "flow"
    flagged = simulate_training(c, w, 2, iterations=2, efficiency=False, network="flow")
    assert api.iteration_s == flagged.iteration_s
