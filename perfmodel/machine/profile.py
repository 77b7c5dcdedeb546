"""The machine profile: what ``dlscale calibrate`` measured and fitted on a machine.

A :class:`MachineProfile` is written as JSON with a schema version
(:data:`SCHEMA_VERSION`), atomically (a temporary file in the same folder, then
``os.replace``), and checked field by field when loaded. :func:`apply_profile`
returns a new :class:`~dlscale.perfmodel.machine.hardware.Cluster` whose intra-node link,
NIC, network link and device memory bandwidth come from the profile, so that every
prediction and simulation of that machine uses what was measured instead of the
catalog's datasheet figures.

Examples
--------
>>> prof = MachineProfile(
...     p2p={"intra-node": {"latency_s": 1e-6, "bandwidth_Bps": 5e9}},
...     kernels={"stream_triad_Bps": 1e10},
... )
>>> prof.link_params("intra-node")
(1e-06, 2e-10)
>>> MachineProfile.from_dict(prof.to_dict()) == prof
True
"""

from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster, Device, Link
from dlscale.perfmodel.network.msgfactors import MessageFactors, from_segments

__all__ = [
    "KERNEL_FIGURES",
    "KERNEL_TABLES",
    "QUANTILE_POINTS",
    "REGIMES",
    "SCHEMA_VERSION",
    "MachineProfile",
    "apply_profile",
    "load_profile",
    "save_profile",
]

#: Version of the JSON layout; :func:`load_profile` refuses any other.
SCHEMA_VERSION = 1

#: Point-to-point regimes a profile can describe. On a single host only
#: ``"intra-node"`` exists.
REGIMES = ("intra-node", "inter-node")

#: Kernel figures a profile may carry (all optional), name -> what it is.
KERNEL_FIGURES: dict[str, str] = {
    "stream_triad_Bps": "STREAM triad a = b + s*c, bytes moved per second (3 arrays), one rank",
    "stream_triad_host_Bps": "STREAM triad of all ranks of a host at once, summed",
    "gemm_flops": "float32 GEMM FLOP/s of one rank (numpy/BLAS, one thread)",
    "gemm_host_flops": "float32 GEMM FLOP/s of all ranks of a host at once, summed",
    "easgd_Bps": "numba EASGD update, bytes of parameters updated per second",
    "sgd_Bps": "numba SGD update, bytes of parameters updated per second",
    "reduce_Bps": "numba reduction (sum into) kernel, bytes reduced per second",
    "model_fwd_bwd_s": "small real model: forward + backward of one mini-batch, seconds",
}

#: Tables a profile's ``kernels`` may carry besides the figures: ``noise`` (figure
#: -> coefficient of variation of single calls), ``samples`` (figure -> calls timed),
#: ``model`` (the small model measured: layer sizes, batch, parameters),
#: ``quantiles`` (figure -> its single-call times' :data:`QUANTILE_POINTS`
#: quantiles at probabilities 0, 0.001, ..., 1, seconds, non-decreasing).
KERNEL_TABLES = ("noise", "samples", "model", "quantiles")

#: Length of a ``quantiles`` table: probabilities 0 to 1 in steps of 0.001 (fine
#: enough that a bimodal distribution's gap falls between two neighbouring points).
QUANTILE_POINTS = 1001


@dataclass(frozen=True)
class MachineProfile:
    """Measurements and fits of one machine, as ``dlscale calibrate`` writes them.

    Attributes
    ----------
    p2p : dict
        Regime (``"intra-node"``, ``"inter-node"``) -> point-to-point results:
        ``latency_s`` (zero-byte one-way latency) and ``bandwidth_Bps`` (streaming
        bandwidth of the largest messages) are required; ``segments`` (piecewise
        Hockney: list of ``{min_bytes, max_bytes, alpha_s, beta_s_per_B}``),
        ``loggp`` (``{L_s, o_s, g_s, G_s_per_B}``), ``sizes_bytes``,
        ``one_way_s``, ``stream_Bps`` and ``rel_error`` (the fit's error per size)
        are optional. ``easgd_exchange`` (optional; profiles written before issue 16
        lack it) is the Async EASGD master/worker exchange timed directly:
        ``{"ranks", "message_bytes", "exchange_s", "service_s", "spread", "reps"}``
        (the worker's send of its parameters plus its receive of the center, and
        the master's share of it: center update and send).
    collectives : dict
        Collective name (``"allreduce"``, ``"reduce_scatter"``, ``"allgather"``,
        ``"bcast"``) -> ``{"algorithm": ..., "measurements": [{"ranks",
        "sizes_bytes", "times_s", "spread"}], "fit": {efficiencies, residuals}}``.
    kernels : dict
        Name in :data:`KERNEL_FIGURES` -> positive number, plus the tables of
        :data:`KERNEL_TABLES` (``noise``: figure -> coefficient of variation of
        repeated calls, for the straggler model).
    provenance : dict
        Hosts, ranks per host, MPI library and version, mpi4py / numba / numpy
        versions, date and command line of the calibration run.
    notes : list of str
        What the run could not measure and why (for example: one host, so no
        inter-node figures).
    fitted : dict
        What ``dlscale fit`` fitted on the user's own run (empty otherwise):
        ``runtime`` (the runtime it was fitted with), ``values`` (mechanism of
        :data:`dlscale.perfmodel.machine.runtime.FITTED` -> fitted value, which
        :func:`apply_profile` sets on the runtime) and the fit's report (``held``,
        ``residuals``, ``inputs``, ...), which nothing applies.
    schema_version : int
        :data:`SCHEMA_VERSION` at writing time.
    """

    p2p: dict[str, dict[str, Any]] = field(default_factory=dict)
    collectives: dict[str, dict[str, Any]] = field(default_factory=dict)
    kernels: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fitted: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        _check(self)

    def link_params(self, regime: str = "intra-node") -> tuple[float, float]:
        """Hockney ``(alpha_s, beta_s_per_B)`` of ``regime``.

        A regime the profile lacks raises :class:`ConfigError` (no fallback from
        inter-node to intra-node: shared memory is not a network).
        """
        if regime not in self.p2p:
            have = ", ".join(self.p2p) or "none"
            raise ConfigError(f"profile.p2p: no {regime!r} measurements (has: {have})")
        entry = self.p2p[regime]
        return float(entry["latency_s"]), 1.0 / float(entry["bandwidth_Bps"])

    @property
    def gamma_s_per_B(self) -> float:
        """Reduction cost per byte, ``1 / reduce_Bps`` (0.0 where not measured)."""
        rate = self.kernels.get("reduce_Bps")
        return 1.0 / float(rate) if rate else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (``schema_version`` first)."""
        d = asdict(self)
        if not d["fitted"]:   # a calibration's profile: as written before `dlscale fit`
            del d["fitted"]
        return {"schema_version": d.pop("schema_version"), **d}

    @classmethod
    def from_dict(cls, data: Any, where: str = "profile") -> MachineProfile:
        """Build from a dictionary, checking the schema version and every field."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: must be a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"{where}.schema_version: must be {SCHEMA_VERSION}, got {version!r} "
                "(re-run `dlscale calibrate` with this version of dlscale)"
            )
        known = {"schema_version", "p2p", "collectives", "kernels", "provenance", "notes",
                 "fitted"}
        extra = sorted(set(data) - known)
        if extra:
            raise ConfigError(f"{where}: unknown fields {extra}; valid: {sorted(known)}")
        for name, kind in (("p2p", dict), ("collectives", dict), ("kernels", dict),
                           ("provenance", dict), ("notes", list), ("fitted", dict)):
            if name in data and not isinstance(data[name], kind):
                raise ConfigError(
                    f"{where}.{name}: must be a JSON {'object' if kind is dict else 'array'}, "
                    f"got {type(data[name]).__name__}"
                )
        return cls(
            p2p=data.get("p2p", {}), collectives=data.get("collectives", {}),
            kernels=data.get("kernels", {}), provenance=data.get("provenance", {}),
            notes=list(data.get("notes", [])), fitted=data.get("fitted", {}),
            schema_version=version,
        )


def _positive(where: str, value: Any) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and math.isfinite(value) and value > 0):
        raise ConfigError(f"{where}: must be a positive number, got {value!r}")


def _check_segments(where: str, segments: Any, keys: tuple[str, ...]) -> None:
    """Fitted segments: a list of objects whose ``keys`` are finite numbers >= 0 (the
    fits constrain them so; a negative one would give negative or shrinking times)."""
    if segments is None:
        return
    if not isinstance(segments, list):
        raise ConfigError(f"{where}: must be a list of segments, got {str(segments)[:80]}")
    for i, seg in enumerate(segments):
        if not isinstance(seg, dict):
            raise ConfigError(f"{where}[{i}]: must be an object, got {seg!r}")
        for key in keys:
            v = seg.get(key)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) and v >= 0):
                raise ConfigError(f"{where}[{i}].{key}: must be a finite number >= 0, got {v!r}")


def _check_quantiles(where: str, qs: Any) -> None:
    ok = (isinstance(qs, list) and len(qs) == QUANTILE_POINTS
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                  and v >= 0 for v in qs))
    if not ok or any(b < a for a, b in itertools.pairwise(qs)):
        raise ConfigError(f"{where}: must be a list of {QUANTILE_POINTS} non-decreasing numbers "
                          f">= 0 (quantiles at 0, 0.001, ..., 1), got {str(qs)[:80]}")


def _check_easgd_exchange(where: str, value: Any) -> None:
    """The optional Async EASGD exchange: an object with positive ``message_bytes``,
    ``exchange_s`` and ``service_s``."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object, got {str(value)[:80]}")
    for key in ("message_bytes", "exchange_s", "service_s"):
        if key not in value:
            raise ConfigError(f"{where}.{key}: missing")
        _positive(f"{where}.{key}", value[key])


def _check_fitted(fitted: dict[str, Any]) -> None:
    """``fitted``: a runtime name and values each within its allowed range."""
    from dlscale.perfmodel.machine.runtime import FITTED

    rt = fitted.get("runtime")
    if not isinstance(rt, str) or not rt:
        raise ConfigError(f"profile.fitted.runtime: must be the name of the runtime the "
                          f"values were fitted with, got {rt!r}")
    values = fitted.get("values")
    if not isinstance(values, dict):
        raise ConfigError(f"profile.fitted.values: must be an object (mechanism -> value), "
                          f"got {str(values)[:80]}")
    for name, value in values.items():
        if name not in FITTED:
            raise ConfigError(f"profile.fitted.values: unknown mechanism {name!r}; valid: "
                              f"{', '.join(FITTED)}")
        lo, hi = FITTED[name]
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and lo <= value <= hi)
        if not ok:
            raise ConfigError(f"profile.fitted.values.{name}: must be a number in [{lo:g}, "
                              f"{hi:g}], got {value!r}")


def _check(prof: MachineProfile) -> None:
    if prof.schema_version != SCHEMA_VERSION:
        raise ConfigError(
            f"profile.schema_version: must be {SCHEMA_VERSION}, got {prof.schema_version!r}"
        )
    if not prof.p2p and not prof.kernels and not prof.fitted:
        raise ConfigError("profile: has neither p2p nor kernels figures nor fitted values; "
                          "nothing to apply")
    if prof.fitted:
        _check_fitted(prof.fitted)
    for regime, entry in prof.p2p.items():
        if regime not in REGIMES:
            raise ConfigError(
                f"profile.p2p: unknown regime {regime!r}; valid: {', '.join(REGIMES)}"
            )
        if not isinstance(entry, dict):
            raise ConfigError(f"profile.p2p.{regime}: must be an object, got {entry!r}")
        for key in ("latency_s", "bandwidth_Bps"):
            if key not in entry:
                raise ConfigError(f"profile.p2p.{regime}.{key}: missing")
        if not (isinstance(entry["latency_s"], (int, float)) and entry["latency_s"] >= 0):
            raise ConfigError(
                f"profile.p2p.{regime}.latency_s: must be a number >= 0, got {entry['latency_s']!r}"
            )
        _positive(f"profile.p2p.{regime}.bandwidth_Bps", entry["bandwidth_Bps"])
        _check_segments(f"profile.p2p.{regime}.segments", entry.get("segments"),
                        ("alpha_s", "beta_s_per_B"))
        _check_easgd_exchange(f"profile.p2p.{regime}.easgd_exchange", entry.get("easgd_exchange"))
        exchange = entry.get("exchange")
        if isinstance(exchange, dict):
            _check_segments(f"profile.p2p.{regime}.exchange.segments",
                            exchange.get("segments"), ("alpha_s", "beta_s_per_B"))
    for name, coll in prof.collectives.items():
        fit = coll.get("fit") if isinstance(coll, dict) else None
        if isinstance(fit, dict):
            _check_segments(f"profile.collectives.{name}.fit.segments", fit.get("segments"),
                            ("latency_factor", "bandwidth_factor", "reduction_factor"))
    for key, value in prof.kernels.items():
        if key in KERNEL_TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"profile.kernels.{key}: must be an object, got {value!r}")
            if key == "quantiles":
                for name, qs in value.items():
                    _check_quantiles(f"profile.kernels.quantiles.{name}", qs)
            continue
        if key not in KERNEL_FIGURES and not key.startswith("x_"):
            raise ConfigError(
                f"profile.kernels: unknown figure {key!r}; valid: "
                f"{', '.join(sorted(KERNEL_FIGURES))}, {', '.join(KERNEL_TABLES)}"
            )
        _positive(f"profile.kernels.{key}", value)


def save_profile(profile: MachineProfile, path: str | os.PathLike[str]) -> Path:
    """Write ``profile`` as JSON at ``path`` atomically; return the path.

    The JSON goes to a temporary file in the same folder, is flushed to disk, then
    renamed over ``path`` (:func:`~dlscale.perfmodel.output.atomicio.atomic_write_with`: a
    symbolic link is written through, a device or FIFO written directly, the mode
    is that of any new file), so a reader never sees half a file.

    Parameters
    ----------
    profile : MachineProfile
        What ``dlscale calibrate`` measured.
    path : str or PathLike
        Where to write it.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ConfigError
        A path that cannot be written (a folder, a missing permission).
    """
    from dlscale.perfmodel.output.atomicio import atomic_write_with

    text = json.dumps(profile.to_dict(), indent=2, sort_keys=False, allow_nan=False) + "\n"

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    atomic_write_with(path, write)
    return Path(path)


def load_profile(path: str | os.PathLike[str]) -> MachineProfile:
    """Read and check a profile written by :func:`save_profile`.

    Raises :class:`ConfigError` naming the file and the field for a missing file,
    invalid JSON, a different schema version or a bad field.

    Parameters
    ----------
    path : str or PathLike
        A profile JSON file.

    Returns
    -------
    MachineProfile

    Raises
    ------
    ConfigError
        See above.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"profile: no such file {str(p)!r}") from None
    except OSError as exc:
        raise ConfigError(f"profile: cannot read {str(p)!r}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"profile {str(p)!r}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                          f"offset {exc.start}); a profile is JSON from `dlscale calibrate`") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"profile {str(p)!r}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ConfigError(f"profile {str(p)!r}: JSON nested too deeply to read") from None
    return MachineProfile.from_dict(data, where=f"profile {str(p)!r}")


def _link(old: Link, entry: dict[str, Any], regime: str, host: str) -> Link:
    return Link(
        name=f"{old.name}@profile",
        bandwidth_Bps=float(entry["bandwidth_Bps"]),
        latency_s=float(entry["latency_s"]),
        source=f"measured {regime} by dlscale calibrate on {host}",
    )


def _measured_device(device: Device, k: dict[str, Any], devices_per_node: int) -> Device:
    """``device`` with the host STREAM triad and GEMM figures (CPU and KNL only)."""
    per_device = 1.0 / devices_per_node
    triad = k.get("stream_triad_host_Bps") or k.get("stream_triad_Bps")
    gemm = k.get("gemm_host_flops") or k.get("gemm_flops")
    if device.kind in ("cpu", "knl"):
        if triad:
            if device.kind == "knl" and device.fast_memory_bandwidth_Bps > 0:
                device = replace(device, fast_memory_bandwidth_Bps=float(triad) * per_device)
            else:
                device = replace(device, memory_bandwidth_Bps=float(triad) * per_device)
        if gemm:
            fraction = min(1.0, float(gemm) * per_device / device.peak_fp32_flops)
            device = replace(device, sustained_fraction=fraction)
    return device


def _factors(entry: dict[str, Any], regime: str, host: str) -> MessageFactors:
    """The per-size factors of a regime's piecewise fit; a segment without a bandwidth
    (``beta <= 0``, written by a calibration before it merged such segments) refused
    with the fit it came from and what to do."""
    segs = entry["segments"]
    for i, seg in enumerate(segs):
        if not float(seg["beta_s_per_B"]) > 0:
            raise ConfigError(
                f"p2p.{regime}.segments[{i}].beta_s_per_B: {seg['beta_s_per_B']!r} in the "
                f"piecewise Hockney fit of {regime} ping-pongs on {host} ("
                f"{float(seg['min_bytes']):.0f}-{float(seg['max_bytes']):.0f} B: no size "
                "dependence, so no bandwidth for the per-size message factors); re-run "
                "`dlscale calibrate` (it merges such segments now), or delete "
                f"p2p.{regime}.segments from the file to cost messages at its latency_s and "
                "bandwidth_Bps alone")
    return from_segments(segs, float(entry["latency_s"]), float(entry["bandwidth_Bps"]),
                         name=f"calibrated@{host}",
                         source=f"piecewise Hockney fit of {regime} ping-pongs on {host}")


def apply_profile(cluster: Cluster, profile: MachineProfile) -> Cluster:
    """A copy of ``cluster`` whose network and memory figures come from ``profile``.

    - ``node.intra_link`` <- the ``intra-node`` latency and bandwidth;
    - ``node.nic`` and ``network.link`` <- the ``inter-node`` figures, where the
      profile has them (a one-host calibration has none: the catalog's stay), and
      ``network.message_factors`` <- their piecewise fit (``segments``) as per-size
      factors (:func:`dlscale.perfmodel.network.msgfactors.from_segments`), so that every message between
      nodes costs what the fit says at its size, in both fidelities; on a machine of
      one node (``max_nodes`` 1), where every message is intra-node, a profile
      without inter-node figures gives the factors of its ``intra-node`` fit;
    - for CPU and KNL devices only (the kernels run on the host CPU, so they say
      nothing about a GPU): the device's memory bandwidth (MCDRAM's on a KNL,
      where the training state lives) <- the host STREAM triad bandwidth
      (``stream_triad_host_Bps``, else ``stream_triad_Bps``) divided by
      ``devices_per_node``; ``sustained_fraction`` <- the host GEMM FLOP/s
      (``gemm_host_flops``, else ``gemm_flops``) over ``devices_per_node`` fp32
      peaks (at most 1).

    Nothing else changes; the input is not modified.

    Parameters
    ----------
    cluster : Cluster
        The description to start from (not modified).
    profile : MachineProfile
        The measurements.

    Returns
    -------
    Cluster
        The copy with measured figures.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import Crossbar, Device, NetworkSpec, NodeSpec
    >>> dev = Device("cpu", "cpu", 2, 2e9, 1e11, 2e11, 2e11, 8e9, 2e10, 0.5)
    >>> node = NodeSpec("n", dev, 2, Link("shm", 1e10, 1e-6), Link("nic", 1e10, 2e-6))
    >>> cl = Cluster("c", node, NetworkSpec("x", Crossbar(4), Link("l", 1e10, 1e-7)))
    >>> prof = MachineProfile(p2p={"intra-node": {"latency_s": 4e-7, "bandwidth_Bps": 6e9}},
    ...                       kernels={"stream_triad_Bps": 1.2e10, "gemm_flops": 5e10})
    >>> new = apply_profile(cl, prof)   # 2 devices per node share the host figures
    >>> new.node.intra_link.bandwidth_Bps, new.node.device.memory_bandwidth_Bps
    (6000000000.0, 6000000000.0)
    >>> new.node.nic == cl.node.nic, new.node.device.sustained_fraction
    (True, 0.125)
    """
    if not isinstance(profile, MachineProfile):
        raise ConfigError(f"profile: must be a MachineProfile, got {type(profile).__name__}")
    host = ",".join(profile.provenance.get("hosts", [])) or "an unnamed host"
    node = cluster.node
    network = cluster.network
    if "intra-node" in profile.p2p:
        node = replace(node, intra_link=_link(node.intra_link, profile.p2p["intra-node"],
                                              "intra-node", host))
    intra = profile.p2p.get("intra-node", {})
    if "inter-node" not in profile.p2p and cluster.max_nodes == 1 and intra.get("segments"):
        # a machine of one node: every message is intra-node, so the per-size costs of
        # the MPI stack there (the piecewise fit of its ping-pongs) are every message's
        network = replace(network, message_factors=_factors(intra, "intra-node", host))
    if "inter-node" in profile.p2p:
        inter = profile.p2p["inter-node"]
        node = replace(node, nic=_link(node.nic, inter, "inter-node", host))
        network = replace(network, link=_link(network.link, inter, "inter-node", host))
        if inter.get("segments"):
            # the piecewise fit as per-size factors on the link figures just set
            network = replace(network, message_factors=_factors(inter, "inter-node", host))
    device = _measured_device(node.device, profile.kernels, node.devices_per_node)
    if device is not node.device:
        node = replace(node, device=device)
    runtime = cluster.runtime
    if profile.fitted:
        # what `dlscale fit` fitted, for the runtime it was fitted with (refused with
        # another where the model reads it: Runtime.fitted_value)
        runtime = replace(runtime, fitted=tuple(
            (str(k), float(v)) for k, v in sorted(profile.fitted["values"].items())),
            fitted_for=str(profile.fitted["runtime"]))
    return replace(cluster, node=node, network=network, runtime=runtime,
                   source=f"{cluster.source} + profile from {host}".strip(" +"))
