"""The real MPI training runs of ``validate local``, predicted by the simulator.

:mod:`~dlscale.validation.local_model` predicts each training run with closed forms
written for these runs. This module asks the project's discrete-event simulator
(:func:`dlscale.simulator.simulate_training`) the same question, from the same
profile, through the same cluster description a user gets with ``--profile``
(:func:`dlscale.perfmodel.machine.profile.apply_profile`, with the runtime's links marked as
measured, as :func:`dlscale.perfmodel.machine.config.load_cluster` does):

- the machine (:func:`local_cluster`): one node (the calibrated host) whose devices
  are its cores: one device per rank where the ranks have a core each, else
  ``cores`` devices shared by the ranks (the layout's ``share``); a device's peak
  is the profile's one-rank GEMM rate and its memory bandwidth the one-rank STREAM
  triad, which ``apply_profile`` then replaces by the host figures per device; the
  intra-node link is the profile's; the software stack is an application calling
  ``MPI_Allreduce`` of an MPICH-family library (``mpi`` in the runtime catalog: no
  Horovod cycle, one fusion buffer, MPICH's algorithm selection);
- the workload (:func:`local_workload`): the training model of the runs
  (:data:`~dlscale.validation.kernelbench.TRAINING_MODEL`, a 64-128-10 MLP, as
  two fully connected layers), its batch per rank, no momentum, no overlap of
  communication with the backward pass (the runs compute, then communicate), and
  its compute the profile's measured forward+backward (``model_fwd_bwd_s``, split
  between forward and backward in the roofline's proportion); per-step compute
  noise resampled from the profile's per-call quantiles (mean-one factors of the
  measured distribution, so the simulated compute draws are the measured calls),
  else lognormal with the measured coefficient of variation;
- the algorithm (:data:`SIM_ALGORITHM`): ``sgd-ring`` is synchronous SGD with the
  ring allreduce, ``sgd-allreduce`` with the stack's own choice, ``sync-easgd``
  and ``async-easgd`` the simulator's algorithms of those names; the asynchronous
  run's master is rank 0 of the MPI run but not a rank in the simulator (its
  master is a separate resource), so ``p`` MPI ranks are ``p - 1`` simulated
  workers.

The simulated figure is the median of the simulated iteration times (the
measured one is a median too), ``iterations`` as many as the run timed, seed 0,
the routed ``fast`` network (the ``analytical`` one where the ranks outnumber the
cores: the routed network has one endpoint per device).

Examples
--------
>>> SIM_ALGORITHM["sgd-ring"], simulated_ranks("async-easgd", 4)
(('sync-sgd', 'ring'), 3)
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.compute.roofline import layer_times
from dlscale.perfmodel.errors import ConfigError, DlscaleError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.machine.noise import MAX_SIGMA, Empirical, Lognormal, Noise, NoNoise
from dlscale.perfmodel.machine.profile import MachineProfile, apply_profile
from dlscale.perfmodel.training.workload import Layer, Model, Workload
from dlscale.validation.kernelbench import TRAINING_MODEL

__all__ = [
    "SIM_ALGORITHM",
    "local_cluster",
    "local_workload",
    "simulate_local_run",
    "simulated_fields",
    "simulated_ranks",
]

#: Training run (:data:`~dlscale.validation.mpi_training.TRAINING_ALGORITHMS`) ->
#: (simulator algorithm, allreduce algorithm).
SIM_ALGORITHM: dict[str, tuple[str, str]] = {
    "sgd-ring": ("sync-sgd", "ring"),
    "sgd-allreduce": ("sync-sgd", "auto"),
    "sync-easgd": ("sync-easgd", "auto"),
    "async-easgd": ("async-easgd", "auto"),
}

#: Samples of scikit-learn's 8x8 digits (``sklearn.datasets.load_digits``: 1,797
#: images, scikit-learn user guide, "Optical recognition of handwritten digits").
DIGITS_SAMPLES = 1797


def simulated_ranks(algorithm: str, p: int) -> int:
    """Simulated ranks of a run of ``p`` MPI ranks (the async master is no rank)."""
    return p - 1 if algorithm == "async-easgd" else p


def _kernel(profile: MachineProfile, name: str) -> float:
    value = profile.kernels.get(name)
    if not value:
        raise ConfigError(f"profile.kernels.{name}: missing; the simulator's device needs it "
                          "(re-run `dlscale calibrate` with kernels)")
    return float(value)


def local_cluster(profile: MachineProfile, devices: int) -> Cluster:
    """The calibrated host as a one-node cluster of ``devices`` one-core devices, with
    the profile applied (see the module docstring)."""
    if "intra-node" not in profile.p2p:
        raise ConfigError("profile.p2p.intra-node: missing; the simulator's node needs it")
    host = ",".join(profile.provenance.get("hosts", [])) or "this host"
    gemm = _kernel(profile, "gemm_flops")
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # this host's memory
    dev = Device(
        name=f"core@{host}", kind="cpu", cores=1,
        # nothing in the cost model reads the clock (the peaks are the measured GEMM
        # rate below); Device requires a positive number, so 1 Hz, not this host's clock
        clock_hz=1.0,
        peak_fp64_flops=gemm, peak_fp32_flops=gemm, peak_fp16_flops=gemm,
        memory_bytes=pages / devices,
        memory_bandwidth_Bps=_kernel(profile, "stream_triad_Bps"), sustained_fraction=1.0,
        source=f"one core of {host}: one-rank GEMM and STREAM triad of its profile")
    intra = profile.p2p["intra-node"]
    shm = Link("shm", float(intra["bandwidth_Bps"]), float(intra["latency_s"]),
               source=f"measured intra-node by dlscale calibrate on {host}")
    node = NodeSpec(f"node@{host}", dev, devices, shm, dataclasses.replace(
        shm, name="no-nic", source="one host: no NIC in these runs (the intra-node figures)"))
    cluster = Cluster(f"local@{host}", node, NetworkSpec("one-host", Crossbar(1), shm),
                      source=f"validate local: {host}", runtime=RUNTIMES["mpi"])
    cluster = apply_profile(cluster, profile)
    return dataclasses.replace(
        cluster, runtime=dataclasses.replace(cluster.runtime, links_measured=True))


def _mlp(compute_s: float, batch: int, device: Device) -> Model:
    m = TRAINING_MODEL
    n_in, h, n_out = int(m["n_in"]), int(m["n_hidden"]), int(m["n_out"])
    layers = (Layer("fc1", "fc", n_in * h + h, 2.0 * n_in * h, h),
              Layer("fc2", "fc", h * n_out + n_out, 2.0 * h * n_out, n_out))
    bare = Model("digits-mlp", layers, (n_in,), "digits", DIGITS_SAMPLES)
    lt = layer_times(bare, device, "fp32", float(batch))
    fwd, bwd = float(np.sum(lt.forward_s)), float(np.sum(lt.backward_s))
    share = fwd / (fwd + bwd)
    measured = MeasuredCompute(batch, forward_s=compute_s * share,
                               backward_s=compute_s * (1 - share),
                               source="profile: model_fwd_bwd_s")
    return dataclasses.replace(bare, measured=measured)


def _noise(profile: MachineProfile) -> tuple[Noise, float]:
    """The per-step compute noise and the mean compute time it multiplies."""
    q = profile.kernels.get("quantiles", {}).get("model_fwd_bwd_s")
    if q:
        sample = np.asarray(q, dtype=float)
        return Empirical(sample), float(sample.mean())
    cv = float(profile.kernels.get("noise", {}).get("model_fwd_bwd_s", 0.0))
    compute = _kernel(profile, "model_fwd_bwd_s")
    return (Lognormal(min(cv, MAX_SIGMA)) if cv > 0 else NoNoise()), compute


def local_workload(profile: MachineProfile, cluster: Cluster, algorithm: str,
                   ranks: int) -> Workload:
    """The training run's workload on ``cluster`` with ``ranks`` simulated ranks."""
    sim_algo, collective = SIM_ALGORITHM[algorithm]
    batch = int(TRAINING_MODEL["batch"])
    dpn = cluster.node.devices_per_node
    per_device = batch * ranks / dpn  # ranks sharing devices keep their own batch
    if per_device != int(per_device):
        raise ConfigError(f"ranks: {ranks} ranks on {dpn} cores give {per_device:g} samples "
                          "per core; the simulator's layout needs a whole number")
    _, compute = _noise(profile)
    return Workload(f"validate-local-{algorithm}", _mlp(compute, batch, cluster.node.device),
                    int(per_device), algorithm=sim_algo, collective=collective,
                    ranks_per_node=ranks, overlap=False, momentum=0.0,
                    source="dlscale validate local training run")


def simulate_local_run(profile: MachineProfile, algorithm: str, p: int,
                       iterations: int) -> dict[str, Any]:
    """Simulate one training run of ``p`` MPI ranks; ``{"simulated_s", "simulated_as"}``.

    Raises :class:`~dlscale.perfmodel.errors.DlscaleError` where the run cannot be
    simulated (say why in the report).
    """
    from dlscale.simulator import simulate_training

    if algorithm not in SIM_ALGORITHM:
        raise ConfigError(f"algorithm: the simulator has no counterpart of {algorithm!r}; "
                          f"valid: {', '.join(SIM_ALGORITHM)}")
    ranks = simulated_ranks(algorithm, p)
    cores = int(profile.provenance.get("cores") or ranks)
    cluster = local_cluster(profile, min(ranks, cores))
    workload = local_workload(profile, cluster, algorithm, ranks)
    noise, _ = _noise(profile)
    # more ranks than cores: the routed network has one endpoint per device, so the
    # analytical backend answers (on one node both give the intra-node closed forms)
    network = "analytical" if ranks > cluster.node.devices_per_node else "fast"
    res = simulate_training(cluster, workload, 1, iterations=iterations, seed=0,
                            noise=noise, efficiency=False, network=network)
    if not res.fits:
        raise ConfigError(f"memory: the simulator says the run does not fit ({res.memory})")
    what = (f"{workload.algorithm}, {workload.collective} allreduce, {ranks} rank(s)"
            f"{' + master' if algorithm == 'async-easgd' else ''}, {iterations} iterations, "
            f"{res.network} network, noise {noise.spec or getattr(noise, 'name', 'none')}")
    return {"simulated_s": float(np.median(res.iteration_times_s)), "simulated_as": what}


def simulated_fields(profile: MachineProfile, row: dict[str, Any]) -> dict[str, Any]:
    """The simulator's columns of one training row: ``simulated_s``, ``error_simulated``
    and ``simulated_as``, or ``simulated_note`` saying why it was not simulated."""
    try:
        sim = simulate_local_run(profile, row["algorithm"], int(row["ranks"]),
                                 int(row["iterations"]))
    except DlscaleError as exc:
        return {"simulated_note": f"not simulated: {exc}"}
    return {**sim, "error_simulated": sim["simulated_s"] / row["measured_s"] - 1.0}
