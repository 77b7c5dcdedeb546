"""Small evaluators and config files for the sweep/plan/API tests.

The evaluators are a plain Hockney ring-allreduce model (no overlap), written here so
the sweep machinery is tested independently of dlscale.perfmodel.training.predict. They live
in an importable module so worker processes (fork or MPI) can unpickle them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_TOML = ROOT / "examples" / "configs" / "cluster-full.toml"

WORKLOAD_TOML = """\
name = "toy-mlp"
batch_per_device = 32
collective = "ring"
epochs = 2

[model]
name = "toy-mlp"
input_shape = [784]
dataset = "mnist"
samples_per_epoch = 60000
layers = [
  {name = "fc1", kind = "fc", params = 200960, forward_flops = 401408.0, activation_elements = 256},
  {name = "fc2", kind = "fc", params = 2570, forward_flops = 5120.0, activation_elements = 10},
]
"""


def write_configs(folder: Path) -> tuple[Path, Path]:
    """A cluster TOML (the README's full example, priced) and a toy workload TOML."""
    cluster = folder / "cluster.toml"
    cluster.write_text(CLUSTER_TOML.read_text().replace("price_per_node_hour = 0.0",
                                                        "price_per_node_hour = 3.0"))
    workload = folder / "workload.toml"
    workload.write_text(WORKLOAD_TOML)
    return cluster, workload


def ring_eval(cluster, workload, nodes, seeds):
    """Compute time from the device's sustained FLOP/s, ring allreduce over the NIC."""
    n = np.asarray(nodes, dtype=float)
    p = n * cluster.node.devices_per_node
    dev = cluster.node.device
    compute = 3 * workload.model.forward_flops * workload.batch_per_device / (
        dev.peak_flops(workload.precision) * dev.sustained_fraction)
    beta = 1.0 / min(cluster.node.nic.bandwidth_Bps, cluster.network.link.bandwidth_Bps)
    comm = 2 * (p - 1) * cluster.node.nic.latency_s + 2 * (p - 1) / p * workload.gradient_bytes * beta
    it = compute + comm
    rate = p * workload.batch_per_device / it
    return [{"devices": int(pi), "iteration_s": float(t), "compute_s": float(compute),
             "comm_s": float(c), "exposed_comm_s": float(c), "samples_per_s": float(r),
             "efficiency": float(compute / t), "memory_per_device_bytes": 1e9,
             "fits": True, "bottleneck": "compute" if compute >= c else "network"}
            for pi, t, c, r in zip(p, it, comm, rate, strict=True)]


def noisy_eval(cluster, workload, nodes, seeds):
    """ring_eval with a seeded multiplicative noise: stands in for the simulator."""
    rows = ring_eval(cluster, workload, nodes, seeds)
    for row, seed in zip(rows, seeds, strict=True):
        f = 1.0 + 0.05 * abs(np.random.default_rng(seed).standard_normal())
        row["iteration_s"] *= f
        row["samples_per_s"] /= f
    return rows


def failing_eval(cluster, workload, nodes, seeds):
    """ring_eval, except that tau = 3 fails (to test that one failure does not stop a sweep)."""
    if workload.tau == 3:
        raise RuntimeError("tau 3 is cursed")
    return ring_eval(cluster, workload, nodes, seeds)


def slow_analytical(cluster, workload, nodes, seeds):
    """The real analytical model after a 100 ms pause: a sweep long enough to interrupt."""
    import time

    from dlscale.sweep_points import analytical

    time.sleep(0.1)
    return analytical(cluster, workload, nodes, seeds)


#: Environment variable naming the folder where :func:`blocking_eval` leaves its marks.
MARKS_ENV = "SWEEP_FAKES_MARKS"


def _mark(name: str) -> None:
    import os

    folder = Path(os.environ[MARKS_ENV])
    tmp = folder / f".{name}.tmp"
    tmp.write_text(str(os.getpid()))
    tmp.rename(folder / name)  # whole, for a test polling the folder


def blocking_eval(cluster, workload, nodes, seeds):
    """ring_eval for tau 1 and 2; from tau 3 on, a chunk that never ends (a chunk of
    15 s or 15 min, seen from a signal): it leaves ``started-TAU`` (holding its pid) in
    ``$SWEEP_FAKES_MARKS`` and waits until it is killed. With ``$SWEEP_FAKES_STUBBORN``
    set it also ignores SIGTERM, leaving ``term-TAU`` when one comes. With
    ``$SWEEP_FAKES_SUICIDE`` set, tau 3 kills its own process instead (as the kernel's
    out-of-memory killer would)."""
    import os
    import signal
    import threading

    if workload.tau < 3:
        return ring_eval(cluster, workload, nodes, seeds)
    if os.environ.get("SWEEP_FAKES_SUICIDE") and workload.tau == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("SWEEP_FAKES_STUBBORN"):
        signal.signal(signal.SIGTERM, lambda *_: _mark(f"term-{workload.tau}"))
    _mark(f"started-{workload.tau}")
    while True:
        threading.Event().wait(3600)
