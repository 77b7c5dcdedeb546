"""Every input a user can set moves the answer it should, in the direction it should,
in both fidelities.

Each field of the machine and workload descriptions (:class:`Device`, :class:`Link` in
each of its roles, :class:`NodeSpec`, :class:`NetworkSpec`, the topologies,
:class:`Cluster`, :class:`Runtime`, :class:`Workload`, :class:`Model`, :class:`Layer`)
is either changed here at a configuration where it matters, with the expected
direction of the per-iteration time, or listed in ``DESCRIPTIVE`` with the reason it
cannot move the time (a name, a citation, a figure that only the cost, power or memory
outputs read: those are checked here too). A field added to any of these classes
without an entry fails ``test_every_field_is_covered``.

The analytical model (``predict``) and the simulator (``simulate_training`` on its
routed fast network) are both held to each direction.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.catalog.runtimes import apply_runtime
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Dragonfly,
    FatTree,
    Link,
    NetworkSpec,
    NodeSpec,
    Torus,
)
from dlscale.perfmodel.machine.runtime import Runtime
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.workload import Layer, Model, Workload
from dlscale.simulator.training.run import simulate_training


def _replace(obj: Any, path: str, value: Any) -> Any:
    """``obj`` with the dotted attribute ``path`` set to ``value`` (frozen dataclasses)."""
    head, _, rest = path.partition(".")
    if not rest:
        new = value(getattr(obj, head)) if callable(value) else value
        return dataclasses.replace(obj, **{head: new})
    return dataclasses.replace(obj, **{head: _replace(getattr(obj, head), rest, value)})


def _set(obj: Any, path: str, value: Any) -> Any:
    if path.startswith("model.layers."):
        layers = tuple(_replace(layer, path[len("model.layers."):], value)
                       for layer in obj.model.layers)
        return dataclasses.replace(obj, model=dataclasses.replace(obj.model, layers=layers))
    return _replace(obj, path, value)


@dataclass(frozen=True)
class Setup:
    """A configuration: cluster, workload (with overrides) and node count."""

    cluster: str
    workload: str
    nodes: int
    overrides: dict = field(default_factory=dict)
    simulate: bool = True
    network: str = "fast"
    runtime: str = ""

    def build(self) -> tuple[Cluster, Workload]:
        cluster = get_cluster(self.cluster)
        if self.runtime:
            cluster = apply_runtime(cluster, self.runtime)
        return (cluster, dataclasses.replace(get_workload(self.workload), **self.overrides))


# compute on one node; fp32 (the workloads' default) and fp16
GPU_ONE = Setup("summit", "resnet50", 1)
GPU_ONE_FP16 = Setup("summit", "resnet50", 1, {"precision": "fp16"})
CPU_ONE = Setup("stampede2-skx", "resnet50", 1)
KNL_FLAT = Setup("cori-knl-flat", "alexnet", 1)
# communication exposed (no overlap) across nodes: every link on the path counts
GPU_COMM = Setup("summit", "resnet50", 8, {"overlap": False, "collective": "ring"})
GPU_SMALL_MSGS = Setup("summit", "resnet50", 8, {"overlap": False, "collective": "ring",
                                                 "fusion_threshold_bytes": 0.0})
# 1,000 nodes on a 2:1 tapered level-2 (Stampede2's 28 down / 20 up): Rabenseifner's long
# exchanges cross the spine
CPU_SPINE = Setup("stampede2-skx", "resnet50", 1000, {"overlap": False,
                                                      "collective": "rabenseifner"},
                  simulate=False)
DRAGONFLY = Setup("cori-knl", "googlenet", 512, {"overlap": False,
                                                 "collective": "rabenseifner"}, simulate=False)
# the original EASGD: GPU workers stage their weights through the CPU master
CORI_AUTO = Setup("cori-knl", "googlenet", 64, {"overlap": False, "collective": "auto"})
EASGD_HOST = Setup("k80-8gpu", "alexnet-cifar10", 1, {"algorithm": "easgd"})
# synchronous parameter servers (one per worker node, co-located, round-robin) on 4
# nodes: VGG-16's fully connected kernels make round-robin's servers unequal
PS_VGG = Setup("p100-cluster", "vgg16", 4, network="flow", runtime="parameter-server")


@dataclass(frozen=True)
class Check:
    """Change ``path`` (on the cluster, or on the workload when ``on`` says so) to
    ``value`` (a callable of the old value, or a value) at ``setup``; the iteration
    time must rise (``+1``) or fall (``-1``)."""

    setup: Setup
    value: Any
    direction: int
    on: str = "cluster"


def _times(setup: Setup, cluster: Cluster, workload: Workload) -> tuple[float, float | None]:
    p = predict(cluster, workload, [setup.nodes])
    sim = None
    if setup.simulate:
        sim = simulate_training(cluster, workload, setup.nodes, iterations=3,
                                efficiency=False, network=setup.network).iteration_s
    return float(p.iteration_s[0]), sim


def _double(x: Any) -> Any:
    return 2 * x


def _half(x: float) -> float:
    return 0.5 * x


CHECKS: dict[str, Check] = {
    # the device: peaks, sustained fraction, memory
    "node.device.peak_fp32_flops": Check(GPU_ONE, _double, -1),
    "node.device.peak_fp16_flops": Check(GPU_ONE_FP16, _double, -1),
    "node.device.sustained_fraction": Check(CPU_ONE, _half, +1),
    "node.device.sustained_fraction_fp16": Check(GPU_ONE_FP16, _half, +1),
    "node.device.memory_bandwidth_Bps": Check(GPU_ONE, _half, +1),
    "node.device.cores": Check(CPU_ONE, _double, +1),   # more cores: a batch fills less
    "node.device.fast_memory_bandwidth_Bps": Check(KNL_FLAT, _half, +1),
    # a measured streaming share below the common one: memory-bound layers slower
    "node.device.stream_fraction": Check(GPU_ONE, 0.5, +1),
    # the node's links
    "node.devices_per_node": Check(GPU_COMM, lambda n: n // 2, -1),   # fewer ranks to reduce
    "node.intra_link.bandwidth_Bps": Check(GPU_COMM, _half, +1),
    "node.intra_link.latency_s": Check(GPU_SMALL_MSGS, lambda x: 100 * x, +1),
    "node.nic.bandwidth_Bps": Check(GPU_COMM, _half, +1),
    "node.nic.latency_s": Check(GPU_SMALL_MSGS, lambda x: 100 * x, +1),
    "node.host_link.bandwidth_Bps": Check(EASGD_HOST, _half, +1),
    "node.host_link.latency_s": Check(EASGD_HOST, lambda x: 1e4 * x, +1),
    # real data read over 1 Gb/s feeds 814 images/s, fewer than Summit's 6 V100 train
    "node.storage_read_Bps": Check(GPU_ONE, 1e9 / 8, +1),
    # the fabric
    "network.link.bandwidth_Bps": Check(CPU_SPINE, _half, +1),
    "network.hop_latency_s": Check(Setup("summit", "resnet50", 64,
                                         {"overlap": False, "collective": "ring",
                                          "fusion_threshold_bytes": 0.0}),
                                   lambda x: 100 * x, +1),
    "network.topology.rails": Check(CPU_SPINE, 2, -1),
    "network.topology.down_up": Check(CPU_SPINE, ((28, 28),), -1),   # taper removed
    "network.topology.local_bandwidth_Bps": Check(DRAGONFLY, _half, +1),
    "network.topology.global_bandwidth_Bps": Check(DRAGONFLY, _half, +1),
    # Valiant routing sends each message through a random intermediate group: twice
    # the global hops, but Rabenseifner's group-to-group exchanges, which minimal routing
    # crowds onto the few direct global links, spread over every group's links
    "network.topology.routing": Check(DRAGONFLY, "valiant", -1),
    # the software stack
    # MPICH's rule on Cori (runtime mpi): recursive doubling up to short_msg_bytes,
    # which moves log2 P times the vector instead of Rabenseifner's 2 (P - 1) / P
    "runtime.short_msg_bytes": Check(CORI_AUTO, lambda x: 1e9, +1),
    # the fastest algorithm the model knows instead of MPICH's rule: at 3 nodes some of
    # GoogLeNet's per-layer messages go faster than by the algorithm the rule picks
    "runtime.selection": Check(Setup("cori-knl", "googlenet", 3,
                                     {"overlap": False, "collective": "auto",
                                      "fusion_threshold_bytes": 0.0}), "model", -1),
    # MLSL's endpoint servers on their own cores: fewer cores compute
    "runtime.progress_cores": Check(CPU_ONE, (("cpu", 2.0),), +1),
    # the figures are taken as delivered: no transport efficiency
    "runtime.links_measured": Check(GPU_COMM, True, -1),
    "runtime.cycle_s": Check(GPU_SMALL_MSGS, lambda x: 10 * x, +1),
    "runtime.coordination": Check(GPU_SMALL_MSGS, "rank0", +1),
    "runtime.transport": Check(GPU_COMM, "tcp", +1),
    # the low end of the transport efficiency's cited range (perfmodel.training.ranges)
    "runtime.sides": Check(GPU_COMM, (("transport", "low"),), +1),
    # compute beside the overlapped allreduces runs 40 % slower
    "runtime.overlap_slowdown": Check(Setup("summit", "resnet50", 8),
                                      (("gpu", 0.4, 0.4, 0.4),), +1),
    "runtime.fusion_cap_bytes": Check(Setup("summit", "resnet50", 8, {"overlap": False,
                                                                      "collective": "ring"}),
                                      0.0, +1),
    "runtime.algorithms": Check(Setup("summit", "resnet50", 64, {"overlap": False}),
                                ("binomial-tree",), +1),
    # parameter servers instead of NCCL's allreduce: balanced, they move what a ring
    # moves ((W - 1) / W of the model in, then out); round-robin over VGG-16's unequal
    # variables leaves one server with fc6 and fc8, whose link bounds the step
    "runtime.exchange": Check(Setup("p100-cluster", "vgg16", 4, network="flow"),
                              "parameter-server", +1),
    "runtime.ps_servers": Check(PS_VGG, 1, +1),             # one server takes every byte
    "runtime.ps_placement": Check(PS_VGG, "separate", +1),  # nothing stays on a node
    "runtime.ps_strategy": Check(PS_VGG, "greedy", -1),     # fc6 and fc8 apart
    # the workload
    "batch_per_device": Check(GPU_ONE, _double, +1),
    "precision": Check(GPU_ONE, "fp16", -1),
    # Sync EASGD: a tree reduce + broadcast of W (log2 P steps of W each) against the
    # ring allreduce's 2W(P-1)/P
    "algorithm": Check(GPU_COMM, "sync-easgd", +1),
    "collective": Check(Setup("summit", "resnet50", 64, {"overlap": False}),
                        "binomial-tree", +1),
    "fusion_threshold_bytes": Check(GPU_COMM, 0.0, +1),
    "overlap": Check(Setup("summit", "resnet50", 8), False, +1),
    "tau": Check(Setup("summit", "resnet50", 8, {"algorithm": "sync-easgd", "overlap": False}),
                 4, -1),
    # 4 ranks share a node of 2 sockets (more ranks than devices: the simulator's
    # analytical network): each device's batch is split between its ranks, which fill
    # their halves of the cores less well, and 4 ranks allreduce instead of 2
    "ranks_per_node": Check(Setup("stampede2-skx", "resnet50", 1, network="analytical"), 4, +1),
    "scaling": Check(Setup("summit", "resnet50", 8, {"global_batch": 192}), "strong", -1),
    "global_batch": Check(Setup("summit", "resnet50", 8, {"scaling": "strong",
                                                          "global_batch": 192}),
                          384, +1),
    "momentum": Check(GPU_ONE, 0.0, -1),   # no velocity to read and write in the update
    "model.layers.params": Check(GPU_COMM, _double, +1),
    "model.layers.forward_flops": Check(GPU_ONE, _double, +1),
    "model.layers.activation_elements": Check(GPU_ONE, _double, +1),
}
for _name in ("batch_per_device", "precision", "algorithm", "collective", "momentum",
              "fusion_threshold_bytes", "overlap", "tau", "ranks_per_node", "scaling",
              "global_batch", "model.layers.params", "model.layers.forward_flops",
              "model.layers.activation_elements"):
    CHECKS[_name] = dataclasses.replace(CHECKS[_name], on="workload")

#: fields that cannot move the iteration time, and why (what reads them instead)
DESCRIPTIVE: dict[str, str] = {
    "name": "a label",
    "source": "a citation",
    "kind": "selects the device class (its batch-utilization curve): checked by cores",
    "clock_hz": "documents the clock of the peak figures; the peaks are inputs themselves",
    "peak_fp64_flops": "no fp64 training precision is offered (fp32, fp16)",
    "memory_bytes": "memory fit (test_memory_moves_fit)",
    "fast_memory_bytes": "memory fit in flat mode (test_memory_moves_fit)",
    "memory_mode": "selects which bandwidth applies: checked by fast_memory_bandwidth_Bps",
    "tdp_w": "not read: a node's power is NodeSpec.power_w (test_power_and_price_move_plan)",
    "gemm_fraction_fp16": "read by the transformer path only "
                          "(test_parallel_time: test_the_gemm_ceiling_moves_the_transformer_time)",
    "power_w": "plan's power column (test_power_and_price_move_plan)",
    "price_per_node_hour": "plan's cost column (test_power_and_price_move_plan)",
    "device": "a container of the device fields above",
    "intra_link": "a container", "nic": "a container", "host_link": "a container",
    "node": "a container", "network": "a container", "topology": "a container",
    "link": "a container", "runtime": "a container", "model": "a container",
    "layers": "a container of the layer fields", "family": "set by the topology class",
    "levels": "fat-tree depth follows from down_up",
    "nodes_per_leaf": "the leaf's down ports (down_up[0][0]); placement",
    "max_nodes": "a limit: bigger node counts are refused (test_predict's bad node counts)",
    "groups": "dragonfly size: a limit like max_nodes",
    "routers_per_group": "dragonfly placement: routes within a group",
    "terminals_per_router": "dragonfly placement",
    "global_links_per_router": "dragonfly global link count per router: in the link loads",
    "dims": "torus shape: hop counts (test_netmodel's torus grid)",
    "latency_s@network.link": "a fabric link's latency is not read: a message's latency is "
                              "its NIC's (end to end) plus network.hop_latency_s per switch",
    "noise": "stragglers: test_noise_moves_both_fidelities",
    "message_factors": "measured per-size factors: test_msgfactors",
    "stack": "a label of the software stack",
    "epochs": "time to train (test_epochs_move_time_to_train)",
    "sparse_as_dense": "sparse gradients: test_sim_training_sync sparse gather",
    "grouping": "bucket grouping: test_netmodel / test_sim_training_agreement",
    "kind@Layer": "layer kind: per-kind efficiency (test_compute)",
    "sparse_gradient": "sparse gradients: test_sim_training_sync sparse gather",
    "algo": "convolution algorithm family: per-kind efficiency (test_compute)",
    "input_shape": "documents the model's input",
    "dataset": "a label",
    "samples_per_epoch": "time to train (test_epochs_move_time_to_train)",
    "sparse_rows_per_sample": "sparse gradients: test_sim_training_sync",
    "measured": "measured compute: test_measured",
    "devices_per_host_link": "parameter servers' staging over a shared host uplink, both "
                             "fidelities through ps_plan: test_host_uplink "
                             "(test_sharing_moves_eight_gpus_below_linear)",
    "storage_path": "network file system or local disk, both fidelities: test_storage "
                    "(test_local_disk_delivers_its_rated_rate)",
    "host_cores": "input-pipeline bound, both fidelities: test_outside "
                  "(test_host_cores_from_a_node_description, test_loader_bounds_the_step_...)",
    "data": "input-pipeline bound on or off: test_outside.test_loader_bounds_the_step_...",
    "loader_rate": "measured loader, both fidelities: test_outside.test_measured_loader_rate_...",
    "dispatch_per_op_s": "dispatch floor: test_outside.test_dispatch_floor_moves_small_layers_only",
    "evals_per_epoch": "time to train: test_outside.test_time_to_train_counts_evaluation_...",
    "startup_s": "time to train: test_outside.test_time_to_train_counts_evaluation_and_startup",
    "fitted": "values dlscale fit fitted: test_fit (overlap 0 is the serial schedule in both "
              "fidelities; transport and decode rate recovered from data they made)",
    "fitted_for": "the runtime the fitted values are for: test_fit (another runtime refused)",
}

CLASSES = (Device, Link, NodeSpec, NetworkSpec, Cluster, Runtime, FatTree, Dragonfly, Torus,
           Crossbar, Workload, Model, Layer)


def test_every_field_is_covered():
    covered = {path.rsplit(".", 1)[-1] for path in CHECKS} | set(DESCRIPTIVE)
    covered |= {k.split("@")[0] for k in DESCRIPTIVE}
    missing = [f"{cls.__name__}.{f.name}" for cls in CLASSES for f in dataclasses.fields(cls)
               if f.name not in covered]
    assert not missing, f"fields with no sensitivity check and no reason: {missing}"


@pytest.mark.parametrize("path", sorted(CHECKS))
def test_each_input_moves_the_iteration_time(path):
    chk = CHECKS[path]
    cluster, workload = chk.setup.build()
    if chk.on == "workload":
        changed = (cluster, _set(workload, path, chk.value))
    else:
        changed = (_set(cluster, path, chk.value), workload)
    base = _times(chk.setup, cluster, workload)
    new = _times(chk.setup, *changed)
    for fidelity, b, n in zip(("predict", "simulate"), base, new, strict=True):
        if b is None:
            continue
        assert math.isfinite(n), (path, fidelity)
        moved = np.sign(n - b) if abs(n - b) > 1e-9 * b else 0
        assert moved == chk.direction, (
            f"{path} at {chk.setup}: {fidelity} {b:.6g} s -> {n:.6g} s, expected "
            f"{'slower' if chk.direction > 0 else 'faster'}")


def test_memory_moves_fit():
    """The device's memory (and MCDRAM in flat mode) decides ``fits``, not the time."""
    for name, path in (("summit", "node.device.memory_bytes"),
                       ("cori-knl-flat", "node.device.fast_memory_bytes")):
        cluster = get_cluster(name)
        w = dataclasses.replace(get_workload("resnet50"), batch_per_device=64)
        need = float(predict(cluster, w, [1]).memory_per_device_bytes[0])
        big = _set(cluster, path, 2 * need)
        small = _set(cluster, path, 0.5 * need)
        pb, ps = predict(big, w, [1]), predict(small, w, [1])
        assert bool(pb.fits[0]) and not bool(ps.fits[0]), (name, path, need)
        assert pb.iteration_s[0] == ps.iteration_s[0]


def test_power_and_price_move_plan():
    """A node's power and price scale the plan's power and cost columns."""
    from dlscale.plan import plan

    cluster = get_cluster("summit")
    dear = dataclasses.replace(cluster, price_per_node_hour=2.0,
                               node=dataclasses.replace(cluster.node, power_w=2000.0))
    cheap = dataclasses.replace(dear, price_per_node_hour=1.0,
                                node=dataclasses.replace(cluster.node, power_w=1000.0))
    a = plan("resnet50", [dear], nodes=[4], epochs=1).rows[0]
    b = plan("resnet50", [cheap], nodes=[4], epochs=1).rows[0]
    assert a["cost"] == pytest.approx(2 * b["cost"])
    assert a["power_w"] == pytest.approx(2 * b["power_w"]) == 8000.0
    assert a["time_s"] == b["time_s"]


def test_epochs_and_samples_per_epoch_move_time_to_train():
    from dlscale.plan import plan

    w = get_workload("resnet50")
    base = plan(w, ["summit"], nodes=[4]).rows[0]["time_s"]
    more = dataclasses.replace(w, epochs=2 * w.epochs)
    bigger = dataclasses.replace(w, model=dataclasses.replace(
        w.model, samples_per_epoch=2 * w.model.samples_per_epoch))
    for changed in (more, bigger):
        assert plan(changed, ["summit"], nodes=[4]).rows[0]["time_s"] == pytest.approx(2 * base)


def test_noise_moves_both_fidelities():
    """Stragglers slow a synchronous iteration in both fidelities, more with more spread."""
    cluster = get_cluster("summit")
    w = get_workload("resnet50")
    times = []
    for noise in ("none", "lognormal:0.05", "lognormal:0.2"):
        c = dataclasses.replace(cluster, noise=noise)
        sim = simulate_training(c, w, 4, iterations=20, efficiency=False).iteration_s
        times.append((float(predict(c, w, [4]).iteration_s[0]), sim))
    for fidelity in (0, 1):
        assert times[0][fidelity] < times[1][fidelity] < times[2][fidelity], times
