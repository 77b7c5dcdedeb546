"""Software stacks (runtimes): the framework and communication library a machine runs.

A :class:`Runtime` names the terms a stack adds to a synchronous data-parallel
iteration, each a field with its cited default in :mod:`.catalog.runtimes`:

``coordination``
    How the ranks agree that a fused buffer is ready on every rank:
    ``"rank0"`` (Horovod before its response cache: a linear gather of requests at
    rank 0 and a binomial broadcast of the response, ``(P - 1 + ceil(log2 P))
    alpha``), ``"cache"`` (Horovod's response cache, steady state: one
    recursive-doubling allreduce of a bit vector, one bit per cached tensor plus
    :data:`CACHE_STATUS_BITS`, in 64-bit words) or ``"none"`` (the framework issues
    each collective itself, in the same order on every rank).
``cycle_s``
    Period of the background loop that picks up ready tensors (Horovod's
    ``HOROVOD_CYCLE_TIME``); a buffer waits half of it on average. 0: no loop.
``fusion_cap_bytes``
    Largest message the stack fuses gradients into. The workload's
    ``fusion_threshold_bytes`` applies up to this cap (``inf``: the workload's value,
    as Horovod's ``HOROVOD_FUSION_THRESHOLD`` is; 0: one message per layer).
``algorithms``, ``selection``
    The allreduce algorithms the library has, and how ``collective="auto"`` picks
    among them: ``"model"`` (the library tunes by measurement or by its own cost
    model, as NCCL does: the least time by this project's network model among the
    library's algorithms) or ``"mpich"`` (MPICH's documented rule: recursive
    doubling for messages up to ``short_msg_bytes`` or fewer elements than the
    largest power of two of ranks, Rabenseifner's reduce-scatter + allgather
    otherwise).
``transport``
    ``"rdma"`` (verbs, NCCL's IB transport, PSM2, uGNI) or ``"tcp"`` (sockets). Every
    inter-node link (NIC, network links, dragonfly local and global links) is
    charged at :data:`TRANSPORT_EFFICIENCY` of its rated bandwidth; a TCP stack's
    latency is at least :data:`TCP_LATENCY_S`. A link whose name says ``tcp`` is
    sockets whatever the stack.

``progress_cores``
    Cores of each rank's share of a CPU or KNL device that the stack pins to its own
    communication threads (Intel MLSL's endpoint servers, ``MLSL_NUM_SERVERS``), per
    device kind: ``(("cpu", 2), ("knl", 4))``. The rank computes on the rest: its FLOP
    rate and the work that fills it scale by ``1 - progress / (share x cores)``
    (:meth:`Runtime.compute_fraction`); its memory bandwidth does not. Empty: every
    core computes.

``exchange``
    How gradients are exchanged: ``"allreduce"`` (every term above) or
    ``"parameter-server"``: synchronous parameter servers as TensorFlow 1.x runs them
    (:mod:`.training_ps`), with ``ps_servers`` server tasks (0: one per worker node,
    the TensorFlow benchmarks' "equal numbers of parameter servers and worker
    servers"), placed ``ps_placement`` (``"colocated"``: server ``s`` on worker node
    ``s mod N``; ``"separate"``: on nodes of their own after the workers), with
    variables assigned ``ps_strategy`` (``"round-robin"``, ``tf.train.
    replica_device_setter``'s default; ``"greedy"``, ``GreedyLoadBalancingStrategy``
    with ``byte_size_load_fn``; :mod:`.psplace`). The allreduce terms do not apply
    to it (its preset sets them to none).


``overlap_slowdown``
    How much slower compute runs while the stack's communication runs beside it
    (collective kernels holding SMs, memory-bandwidth contention), per device kind:
    ``(("gpu", central, low, high),)``, a fraction (0.189: 18.9 % longer). It is
    charged on the overlapped part of the backward pass only
    (:func:`.training_sync.sync_sgd_times`). Empty: none.

``fitted``, ``fitted_for``
    Values that ``dlscale fit`` fitted on the user's own run (:mod:`dlscale.perfmodel.
    fitting.scaling`), mechanism -> value, for the runtime named ``fitted_for``:
    ``"transport"`` (the delivered fraction of the inter-node links' bandwidth),
    ``"overlap-slowdown"`` (the slowdown of the device's kind) and ``"overlap"`` (the
    share of the schedule's lead time each gradient's exchange achieved, 1: as the
    schedule allows, 0: none, every exchange after the backward pass:
    :meth:`Runtime.achieved_ready`), ``"input-pipeline"`` (images/s one host core
    decodes, :mod:`dlscale.perfmodel.training.outside`). Each replaces the cited central value; the
    low and high sides of the band stay the cited ones. Values fitted with another
    runtime are refused where the model reads them (:meth:`Runtime.fitted_value`).

Ranges: the transport efficiency and the overlap slowdown are *mechanisms* of
:mod:`.ranges`, each with a central value and the low and high values its sources
give. ``sides`` says which of the three the model uses (``(("transport", "low"),)``;
a mechanism not named: central); :func:`.ranges.corners` sets it to price the band.

Examples
--------
>>> rt = Runtime("toy", "test", "cache", 5e-3, float("inf"), ("ring",), "model", "rdma")
>>> rt.fusion_cap_bytes
inf
>>> Runtime("toy", "test", "gossip", 0.0, 0.0, ("ring",), "model", "rdma")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: runtime 'toy'.coordination: unknown value 'gossip'; valid: cache, none, rank0
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.registry import ALLREDUCE_CHOICES, offered_by

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Cluster, Link

__all__ = ["CACHE_STATUS_BITS", "COORDINATIONS", "EXCHANGES", "FITTED", "PS_PLACEMENTS",
           "PS_STRATEGIES",
           "SELECTIONS", "TCP_LATENCY_S", "TRANSPORTS", "TRANSPORT_EFFICIENCY",
           "TRANSPORT_EFFICIENCY_RANGE", "Runtime", "cache_bitvector_bytes", "mpich_short",
           "transport_efficiency", "with_transport"]

#: How ranks agree a buffer is ready (see the module docstring).
COORDINATIONS = ("rank0", "cache", "none")
#: How ``collective="auto"`` picks among the library's algorithms.
SELECTIONS = ("model", "mpich")
#: Inter-node transports: RDMA (verbs, RoCE, NCCL's IB transport), kernel TCP sockets,
#: and TensorFlow's default gRPC channel (HTTP/2 over TCP or IPoIB).
TRANSPORTS = ("rdma", "tcp", "grpc")
#: How gradients are exchanged (see the module docstring).
EXCHANGES = ("allreduce", "parameter-server")
#: Values ``dlscale fit`` may set on a runtime, name -> (least, greatest) allowed: the
#: fit itself stays inside each mechanism's cited range; these bounds only refuse a
#: profile no fit could have written.
FITTED = {"transport": (0.0, 1.0), "overlap": (0.0, 1.0),
          # assumption: 10, the bound Runtime.overlap_slowdown already refuses beyond
          "overlap-slowdown": (0.0, 10.0),
          # images/s per host core (outside.DECODE_RATE); assumption: 1e6, far above
          # any decode rate (the cited high is 275)
          "input-pipeline": (0.0, 1e6)}
#: Where parameter-server tasks run.
PS_PLACEMENTS = ("colocated", "separate")
#: How variables are assigned to parameter-server tasks (:mod:`.psplace`).
PS_STRATEGIES = ("round-robin", "greedy")

#: Delivered fraction of a link's rated bandwidth for a large message.
#: rdma: 0.97, an InfiniBand verbs stream on a ConnectX-4 100 Gb/s port measured at
#: ~97 Gb/s with ``ib_send_bw`` (Mellanox community forum, MCX456A-ECAT, 64 KiB
#: messages), approx. tcp: 0.941, the goodput limit of TCP/IPv4 over Ethernet with a
#: 1500-byte MTU: 1448 payload bytes (1500 - 20 IP - 20 TCP - 12 timestamp option,
#: RFC 791/793/7323) per 1538 bytes on the wire (+ 14 header, 4 FCS, 8 preamble, 12
#: inter-frame gap, IEEE 802.3); derived. The CPU cost of the kernel stack, which can
#: hold a single stream below this, is not modelled.
#: grpc: 0.237, TensorFlow's default gRPC over IPoIB: Biswas, Lu, Panda, "Accelerating
#: TensorFlow with Adaptive RDMA-based gRPC", HiPC 2018 (abstract: the RDMA design
#: speeds gRPC up "by up to 4.1x" over default gRPC on IPoIB), taken against the rdma
#: figure: 0.97 / 4.1; derived. No runtime of the catalog uses it yet.
TRANSPORT_EFFICIENCY = {"rdma": 0.97, "tcp": 1448 / 1538, "grpc": 0.97 / 4.1}

#: The (low, high) range of each transport's efficiency, around its central value:
#: rdma: NCCL's maintainers give 12 GB/s per 100 Gb/s NIC as the peak busbw
#: (NVIDIA/nccl-tests issue #119, "24GB/s is the peak performance per 200G NIC (12
#: GB/s for 100G NICs)": 12 / 12.5 = 0.96) and 12.2 GB/s as "as good as you can get"
#: on one 100 Gb/s EDR card (nccl-tests issue #29: 12.2 / 12.5 = 0.976).
#: tcp: the same framing arithmetic as the central value, from 1500-byte frames
#: (0.941, the default MTU) to 9000-byte jumbo frames (8948 / 9038 = 0.990); derived,
#: the frame size being the unknown. grpc: from 0.97 / 6 (Jia et al., "Improving the
#: Performance of Distributed TensorFlow with RDMA", Int. J. Parallel Programming 46
#: (2018) 674-685, abstract: "nearly 6x" over gRPC) to 0.97 / 1.5 (Panda and Lu, "Accelerating
#: TensorFlow with RDMA for high-performance deep learning", talk: RDMA-gRPC speeds
#: gRPC throughput "by up to 1.5x"); derived.
TRANSPORT_EFFICIENCY_RANGE = {"rdma": (0.96, 12.2 / 12.5), "tcp": (1448 / 1538, 8948 / 9038),
                              "grpc": (0.97 / 6, 0.97 / 1.5)}


def transport_efficiency(kind: str, side: str = "central") -> float:
    """The delivered fraction of a link's bandwidth over transport ``kind``.

    Parameters
    ----------
    kind : str
        One of :data:`TRANSPORTS`.
    side : {"low", "central", "high"}
        Which value of its range.

    Examples
    --------
    >>> [round(transport_efficiency("rdma", s), 3) for s in ("low", "central", "high")]
    [0.96, 0.97, 0.976]
    """
    if side == "central":
        return TRANSPORT_EFFICIENCY[kind]
    low, high = TRANSPORT_EFFICIENCY_RANGE[kind]
    return low if side == "low" else high

#: Least zero-byte latency through a kernel TCP stack: ~10 us half round trip
#: (netperf TCP_RR, ~20 us RTT; the figure :mod:`.catalog.links` uses for Ethernet
#: TCP links), approx. (assumption: no single published measurement is cited).
TCP_LATENCY_S = 10e-6

#: Status bits Horovod's cache coordinator appends to the cache bit vector
#: (SHOULD_SHUT_DOWN, UNCACHED_IN_QUEUE, INVALID_IN_QUEUE: horovod/common/
#: response_cache.h, ``CacheCoordinator``, Horovod 0.16.1 and later;
#: github.com/horovod/horovod).
CACHE_STATUS_BITS = 3


@dataclass(frozen=True)
class Runtime:
    """A software stack (see the module docstring for each term).

    ``links_measured``: the cluster's inter-node link figures are already what this
    stack delivers (measured, e.g. by ``dlscale calibrate``), so no transport
    efficiency is applied to them. :func:`with_transport` sets it once it has applied
    the efficiency, so it is never applied twice.
    """

    name: str
    stack: str
    coordination: str
    cycle_s: float
    fusion_cap_bytes: float
    algorithms: tuple[str, ...]
    selection: str
    transport: str
    # MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE default (MPICH 3.x src/mpi/coll/
    # allreduce; Thakur, Rabenseifner, Gropp, IJHPCA 2005)
    short_msg_bytes: float = 2048.0
    links_measured: bool = False
    source: str = ""
    progress_cores: tuple[tuple[str, float], ...] = ()
    exchange: str = "allreduce"
    ps_servers: int = 0
    ps_placement: str = "colocated"
    ps_strategy: str = "round-robin"
    overlap_slowdown: tuple[tuple[str, float, float, float], ...] = ()
    sides: tuple[tuple[str, str], ...] = ()
    fitted: tuple[tuple[str, float], ...] = ()
    fitted_for: str = ""

    def __post_init__(self) -> None:
        owner = f"runtime {self.name!r}"
        for fld, value, valid in (("coordination", self.coordination, COORDINATIONS),
                                  ("selection", self.selection, SELECTIONS),
                                  ("transport", self.transport, TRANSPORTS),
                                  ("exchange", self.exchange, EXCHANGES),
                                  ("ps_placement", self.ps_placement, PS_PLACEMENTS),
                                  ("ps_strategy", self.ps_strategy, PS_STRATEGIES)):
            if value not in valid:
                raise ConfigError(f"{owner}.{fld}: unknown value {value!r}; valid: "
                                  f"{', '.join(sorted(valid))}")
        if not (math.isfinite(self.cycle_s) and self.cycle_s >= 0):
            raise ConfigError(f"{owner}.cycle_s: must be a finite number >= 0, got "
                              f"{self.cycle_s!r}")
        if not (self.fusion_cap_bytes >= 0):
            raise ConfigError(f"{owner}.fusion_cap_bytes: must be >= 0 (inf: no cap), got "
                              f"{self.fusion_cap_bytes!r}")
        if not (math.isfinite(self.short_msg_bytes) and self.short_msg_bytes >= 0):
            raise ConfigError(f"{owner}.short_msg_bytes: must be a finite number >= 0, got "
                              f"{self.short_msg_bytes!r}")
        self._check_progress_cores(owner)
        if isinstance(self.ps_servers, bool) or not isinstance(self.ps_servers, int) \
                or self.ps_servers < 0:
            raise ConfigError(f"{owner}.ps_servers: must be an integer >= 0 (0: one server "
                              f"per worker node), got {self.ps_servers!r}")
        self._check_ranges(owner)
        self._check_fitted(owner)
        flat = [c for c in ALLREDUCE_CHOICES if c != "auto"]
        bad = [a for a in self.algorithms if a not in flat]
        if not self.algorithms or bad:
            raise ConfigError(f"{owner}.algorithms: must be a non-empty list of "
                              f"{', '.join(flat)}; got {list(self.algorithms)!r}")
        if self.selection == "mpich" and not set(offered_by("mpich")) <= set(self.algorithms):
            raise ConfigError(f"{owner}.algorithms: selection 'mpich' needs "
                              f"recursive-doubling and rabenseifner, got {list(self.algorithms)!r}")

    def check_read(self, where: str) -> None:
        """Refuse a field set away from its default where this runtime never reads it.

        The parameter servers' fields with an allreduce exchange, MPICH's short-message
        bound with another selection: a description that would change nothing. Called
        on a cluster file's runtime (:func:`dlscale.perfmodel.machine.config.load_cluster`),
        not on every runtime built: a sweep's grid may cross such fields with the ones
        that make them read (``dlscale.sweep_reads`` refuses a grid no point reads).

        Parameters
        ----------
        where : str
            Prefix of the message (the file and the table).

        Raises
        ------
        ConfigError
            Naming the field, its value and what would read it.

        Examples
        --------
        >>> import dataclasses
        >>> from dlscale.perfmodel.catalog import get_runtime
        >>> dataclasses.replace(get_runtime("nccl"), ps_servers=2).check_read("runtime")
        Traceback (most recent call last):
        ...
        dlscale.perfmodel.errors.ConfigError: runtime.ps_servers: sets a parameter server's tasks; this runtime exchanges gradients by allreduce, so nothing would read 2 (give exchange = 'parameter-server', or leave ps_servers 0)
        """
        owner = where
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        if not self.parameter_server:
            for fld in ("ps_servers", "ps_placement", "ps_strategy"):
                if getattr(self, fld) != defaults[fld]:
                    raise ConfigError(f"{owner}.{fld}: sets a parameter server's tasks; this "
                                      f"runtime exchanges gradients by {self.exchange}, so "
                                      f"nothing would read {getattr(self, fld)!r} (give "
                                      f"exchange = 'parameter-server', or leave {fld} "
                                      f"{defaults[fld]!r})")
        if self.selection != "mpich" and self.short_msg_bytes != defaults["short_msg_bytes"]:
            raise ConfigError(f"{owner}.short_msg_bytes: MPICH's bound between recursive "
                              f"doubling and Rabenseifner, read by selection 'mpich'; this "
                              f"runtime's selection is {self.selection!r}, so nothing would "
                              f"read {self.short_msg_bytes:g} (give selection = 'mpich', or "
                              f"leave it {defaults['short_msg_bytes']:g})")

    def _check_progress_cores(self, owner: str) -> None:
        kinds = ("cpu", "knl", "gpu")
        seen = set()
        for entry in self.progress_cores:
            ok = (isinstance(entry, (tuple, list)) and len(entry) == 2
                  and entry[0] in kinds and entry[0] not in seen
                  and isinstance(entry[1], (int, float)) and math.isfinite(entry[1])
                  and entry[1] >= 0)
            if not ok:
                raise ConfigError(
                    f"{owner}.progress_cores: each entry must be [kind, cores] with kind one "
                    f"of {', '.join(kinds)} (once each) and cores a finite number >= 0, got "
                    f"{list(self.progress_cores)!r}")
            seen.add(entry[0])

    def _check_ranges(self, owner: str) -> None:
        seen = set()
        for entry in self.overlap_slowdown:
            ok = (isinstance(entry, (tuple, list)) and len(entry) == 4  # assumption: kind + 3 values
                  and entry[0] in ("cpu", "knl", "gpu") and entry[0] not in seen
                  and all(isinstance(v, (int, float)) and math.isfinite(v) for v in entry[1:])
                  # assumption: 10 (compute 11x as long) bounds any slowdown, 25x the
                  # 40 % maximum that arXiv 2507.03114 measured
                  and 0 <= entry[2] <= entry[1] <= entry[3] <= 10)
            if not ok:
                raise ConfigError(
                    f"{owner}.overlap_slowdown: each entry must be [kind, central, low, high] "
                    f"with kind one of cpu, knl, gpu (once each) and 0 <= low <= central <= "
                    f"high <= 10, got {list(self.overlap_slowdown)!r}")
            seen.add(entry[0])
        for pick in self.sides:
            if not (isinstance(pick, (tuple, list)) and len(pick) == 2
                    and isinstance(pick[0], str) and pick[1] in ("low", "central", "high")):
                raise ConfigError(f"{owner}.sides: each entry must be [mechanism, low|central|"
                                  f"high], got {list(self.sides)!r}")

    def _check_fitted(self, owner: str) -> None:
        names = [f[0] if isinstance(f, (tuple, list)) and f else f for f in self.fitted]
        for entry in self.fitted:
            ok = (isinstance(entry, (tuple, list)) and len(entry) == 2 and entry[0] in FITTED
                  and isinstance(entry[1], (int, float)) and not isinstance(entry[1], bool)
                  and math.isfinite(entry[1])
                  and FITTED[entry[0]][0] <= entry[1] <= FITTED[entry[0]][1]
                  and names.count(entry[0]) == 1)
            if not ok:
                allowed = ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in FITTED.items())
                raise ConfigError(f"{owner}.fitted: each entry must be [name, value] with "
                                  f"{allowed} (once each), got {list(self.fitted)!r}")

    def fitted_value(self, mechanism: str) -> float | None:
        """The value ``dlscale fit`` fitted for ``mechanism`` where the model is at its
        central side (``None``: not fitted, or a low or high corner of the band).

        Raises
        ------
        ConfigError
            The values were fitted with another runtime than this one.

        Examples
        --------
        >>> rt = Runtime("toy", "test", "none", 0.0, 0.0, ("ring",), "model", "rdma",
        ...              fitted=(("overlap", 0.5),), fitted_for="toy")
        >>> rt.fitted_value("overlap"), rt.fitted_value("transport")
        (0.5, None)
        >>> dataclasses.replace(rt, name="other").fitted_value("overlap")
        Traceback (most recent call last):
        ...
        dlscale.perfmodel.errors.ConfigError: profile: its values were fitted with runtime 'toy'; this run uses runtime 'other' (give --runtime toy, or fit again with this runtime)
        """
        values = dict(self.fitted)
        if mechanism not in values:
            return None
        if self.fitted_for and self.fitted_for != self.name:
            raise ConfigError(f"profile: its values were fitted with runtime "
                              f"{self.fitted_for!r}; this run uses runtime {self.name!r} (give "
                              f"--runtime {self.fitted_for}, or fit again with this runtime)")
        return float(values[mechanism]) if self.side(mechanism) == "central" else None

    def achieved_ready(self, ready: np.ndarray, backward: np.ndarray | float) -> np.ndarray:
        """Ready times of the gradient exchanges with the fitted ``overlap`` achieved:
        ``backward - f (backward - ready)`` (``f`` 1, not fitted: ``ready`` as the
        schedule gives it; 0: every exchange waits for the whole backward pass).

        Examples
        --------
        >>> rt = Runtime("toy", "test", "none", 0.0, 0.0, ("ring",), "model", "rdma",
        ...              fitted=(("overlap", 0.25),))
        >>> rt.achieved_ready(np.array([0.2, 0.6]), 1.0).tolist()
        [0.8, 0.9]
        """
        f = self.fitted_value("overlap")
        if f is None or f == 1.0:
            return ready
        bwd = np.asarray(backward, dtype=float)
        out: np.ndarray = bwd - f * (bwd - np.asarray(ready, dtype=float))
        return out

    def side(self, mechanism: str) -> str:
        """Which value of ``mechanism``'s range the model uses (``"central"`` unless
        :attr:`sides` names it)."""
        return dict(self.sides).get(mechanism, "central")

    def slowdown(self, kind: str) -> float:
        """Fraction by which compute on a ``kind`` device is slowed while communication
        runs beside it, at the side :meth:`side` picks (0 where none is given).

        Examples
        --------
        >>> rt = Runtime("toy", "test", "none", 0.0, 0.0, ("ring",), "model", "rdma",
        ...              overlap_slowdown=(("gpu", 0.189, 0.0, 0.4),))
        >>> rt.slowdown("gpu"), rt.slowdown("cpu")
        (0.189, 0.0)
        >>> dataclasses.replace(rt, sides=(("overlap-slowdown", "high"),)).slowdown("gpu")
        0.4
        """
        for k, central, low, high in self.overlap_slowdown:
            if k == kind:
                fit = self.fitted_value("overlap-slowdown")
                if fit is not None:
                    return fit
                side = self.side("overlap-slowdown")
                return float(central if side == "central" else low if side == "low" else high)
        return 0.0

    def compute_fraction(self, kind: str, cores: float) -> float:
        """Share of a rank's ``cores`` that computes: ``1 - progress / cores``, where
        ``progress`` is :attr:`progress_cores` for the device ``kind``.

        Parameters
        ----------
        kind : str
            The device's kind (``"cpu"``, ``"knl"``, ``"gpu"``).
        cores : float
            Cores of the rank's share of its device (``share x device.cores``).

        Raises
        ------
        ConfigError
            The stack's threads take every core the rank has.

        Examples
        --------
        >>> from dlscale.perfmodel.catalog import get_runtime
        >>> round(get_runtime("mlsl").compute_fraction("cpu", 24), 4)   # 22 of 24 cores
        0.9167
        >>> get_runtime("mlsl").compute_fraction("gpu", 80)
        1.0
        """
        progress = dict(self.progress_cores).get(kind, 0.0)
        if progress == 0:
            return 1.0
        if progress >= cores:
            raise ConfigError(
                f"runtime {self.name!r}.progress_cores: {progress:g} cores per rank for "
                f"communication leave none of the {cores:g} cores a rank has on its "
                f"{kind}; use fewer ranks per node or fewer progress cores")
        return float(1.0 - progress / cores)

    @property
    def parameter_server(self) -> bool:
        """Whether gradients go through parameter servers (``exchange``)."""
        return self.exchange == "parameter-server"

    @property
    def cycle_wait_s(self) -> float:
        """Mean wait of a ready buffer for the background loop: half of ``cycle_s``.

        A buffer becomes ready at a time uniform over the loop's period, so it waits
        ``cycle_s / 2`` on average (0 without a loop). Both fidelities charge it from
        here (:func:`dlscale.perfmodel.training.sync.sync_sgd_times`, the simulator's synchronous SGD).

        >>> from dlscale.perfmodel.catalog import get_runtime
        >>> get_runtime("horovod-nccl").cycle_wait_s   # HOROVOD_CYCLE_TIME 5 ms
        0.0025
        """
        return self.cycle_s / 2

    def fusion_threshold(self, workload_threshold_bytes: float) -> float:
        """The fusion threshold in force: the workload's, capped by the stack's."""
        return float(min(workload_threshold_bytes, self.fusion_cap_bytes))


def cache_bitvector_bytes(tensors: int) -> float:
    """Bytes of Horovod's cache bit vector: one bit per tensor plus the status bits,
    in 64-bit words (``long long``, horovod/common/response_cache.cc).

    Parameters
    ----------
    tensors : int
        Tensors the cache tracks.

    Examples
    --------
    >>> cache_bitvector_bytes(161), cache_bitvector_bytes(61)
    (24.0, 8.0)
    """
    # 8-byte (64-bit) words of the bit vector (github.com/horovod/horovod,
    # horovod/common/response_cache.cc)
    return 8.0 * math.ceil((max(tensors, 0) + CACHE_STATUS_BITS) / 64)


def mpich_short(n_bytes: np.ndarray, ranks: np.ndarray, bytes_per_element: float,
                short_msg_bytes: float) -> np.ndarray:
    """MPICH's allreduce rule (src/mpi/coll/allreduce.c, MPICH 3.x; the default
    ``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`` is 2048 bytes): ``True`` where recursive
    doubling runs (``n_bytes <= short_msg_bytes`` or fewer elements than ``pof2``, the
    largest power of two <= ranks), ``False`` where Rabenseifner runs.

    Examples
    --------
    >>> mpich_short(np.array([1e3, 1e6, 40.0]), np.array([64, 64, 64]), 4, 2048).tolist()
    [True, False, True]
    """
    p = np.maximum(np.asarray(ranks, dtype=float), 1)
    pof2 = np.exp2(np.floor(np.log2(p)))
    n = np.asarray(n_bytes, dtype=float)
    out: np.ndarray = (n <= short_msg_bytes) | (n / bytes_per_element < pof2)
    return out


def _scaled(link: Link, eff: float, floor_s: float) -> Link:
    """``link`` with ``eff`` of its bandwidth and at least ``floor_s`` of latency."""
    return dataclasses.replace(link, bandwidth_Bps=link.bandwidth_Bps * eff,
                               latency_s=max(link.latency_s, floor_s))


def with_transport(cluster: Cluster) -> Cluster:
    """The cluster with its inter-node links as the runtime's transport delivers them.

    NIC, network link and dragonfly local/global bandwidths are multiplied by
    :func:`transport_efficiency` of the transport at the runtime's ``side("transport")``
    (``"tcp"`` for a link named ``...tcp...`` whatever the stack, unless the stack is
    gRPC, which runs over TCP itself); over TCP and gRPC the latency is at least
    :data:`TCP_LATENCY_S`. Intra-node links (NVLink, PCIe, shared memory) are left as
    they are. Nothing changes where the runtime says ``links_measured`` (measured
    figures); the result's runtime says it, so applying this twice changes nothing.

    Parameters
    ----------
    cluster : Cluster
        The machine, with its runtime.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = with_transport(get_cluster("summit"))
    >>> round(c.node.nic.bandwidth_Bps / 1e9, 3), c.runtime.links_measured
    (22.31, True)
    >>> with_transport(c) is c
    True
    """
    rt = cluster.runtime
    if rt.links_measured:
        return cluster
    kept = _DELIVERED.get(id(cluster))
    if kept is not None and kept[0] is cluster:   # the same object again: its answer
        return kept[1]
    out = _delivered(cluster)
    if len(_DELIVERED) >= _DELIVERED_MAX:
        del _DELIVERED[next(iter(_DELIVERED))]
    _DELIVERED[id(cluster)] = (cluster, out)
    return out


#: :func:`with_transport`'s answers by the identity of the cluster asked (each entry
#: holds the cluster, so an id is not reused while kept): a layout search prices
#: thousands of layouts on one cluster, and its memo keys clusters by identity.
_DELIVERED: dict[int, tuple[Cluster, Cluster]] = {}
_DELIVERED_MAX = 256   # numerical: clusters kept, far more than one question asks


def _delivered(cluster: Cluster) -> Cluster:
    """:func:`with_transport`'s cluster, built."""
    rt = cluster.runtime
    side = rt.side("transport")
    fit = rt.fitted_value("transport")   # the user's own run, in place of the central value

    def one(link: Link) -> Link:
        kind = "tcp" if "tcp" in link.name.lower() and rt.transport != "grpc" else rt.transport
        floor = TCP_LATENCY_S if kind in ("tcp", "grpc") else 0.0
        return _scaled(link, transport_efficiency(kind, side) if fit is None else fit, floor)

    node, net = cluster.node, cluster.network
    topo = net.topology.with_link_efficiency(
        transport_efficiency(rt.transport, side) if fit is None else fit)
    return dataclasses.replace(
        cluster, node=dataclasses.replace(node, nic=one(node.nic)),
        network=dataclasses.replace(net, link=one(net.link), topology=topo),
        runtime=dataclasses.replace(rt, links_measured=True))
