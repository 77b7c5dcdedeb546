"""Per-message-size latency and bandwidth factors (SimGrid SMPI's message model).

A real MPI or NCCL stack does not move a message at the wire's latency and
bandwidth: small messages pay protocol envelopes and eager copies, large ones switch
to rendezvous, pipelining and registration. SimGrid's SMPI network model captures
this with piecewise-constant factors on the message size ``n`` (Degomme et al.,
"Simulating MPI applications: the SMPI approach", IEEE TPDS 28(8), 2017, section 4):

.. math:: t(n) = f_\\lambda(n)\\,\\lambda + \\frac{n}{f_\\beta(n)\\,B}

where ``lambda`` is the latency of the message's path and ``B`` the bandwidth it
gets. This module holds the factors and that one formula; the analytical model
(:mod:`dlscale.perfmodel.network.model`), the simulator's fast and flow modes and the
``auto`` algorithm choice all apply the same :class:`MessageFactors`. In the flow
model a message moves ``n / f_beta(n)`` bytes, so that alone on its path it takes
``n / (f_beta B)`` and under sharing it weighs its factor's worth on every link.

``smpi-default`` also carries SMPI's semantics around the factors: every message
moves a 16-byte envelope besides its payload and picks its factors at that size, a
size equal to a range's bound takes the range below (SimGrid's thresholds are
exclusive), and each message also loads its reverse route with 5% of its rate
(SimGrid's cross-traffic; :attr:`MessageFactors.cross_traffic`, applied by the
simulator's fast and flow modes and the closed form); in flow mode, flows sharing a
link take shares weighted by their route's latency and length (SimGrid's weight-S,
:attr:`MessageFactors.weight_S_bytes`).

Factors come from a preset (:data:`MESSAGE_FACTORS`), a ``[network.message_factors]``
table in a cluster file, or a calibration: :func:`from_segments` turns the piecewise
Hockney fit of ``dlscale calibrate`` into factors relative to the regime's zero-byte
latency and streaming bandwidth.

Examples
--------
>>> f = MESSAGE_FACTORS["smpi-default"]
>>> lat, bw = f.at([100, 70_000])      # 116 and 70,016 bytes on the wire
>>> [round(x, 6) for x in lat.tolist() + bw.tolist()]   # 0.812084 x 100 / 116, ...
[2.01467, 11.6436, 0.700072, 0.940479]
>>> round(message_time_s(1e-6, 1e-10, 70_000.0, f) * 1e6, 3)   # 11.64 us + 7.44 us
19.087
>>> f.at([65_456, 65_457])[0].tolist()   # 65,472 bytes on the wire: the range below
[3.48845, 11.6436]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.limits import FACTOR_RANGE, check_range

__all__ = ["MESSAGE_FACTORS", "MessageFactors", "effective_hockney", "from_segments",
           "get_message_factors", "message_time_s"]


@dataclass(frozen=True)
class MessageFactors:
    """Piecewise-constant factors on a message's path latency and bandwidth.

    Attributes
    ----------
    name : str
        A label (the preset's name, or where the factors came from).
    min_bytes : tuple of float
        Lower bound of each size range, ascending, the first 0: a message of ``n``
        bytes takes the factors of the last range with ``min_bytes <= n``.
    latency : tuple of float
        Factor on the path latency in each range (>= 0).
    bandwidth : tuple of float
        Factor on the bandwidth in each range (> 0; above 1 where a measurement showed
        more than the nominal figure, as SimGrid's default table does at 5,776 bytes).
    source : str
        Where the factors come from.
    envelope_bytes : float
        Bytes every message carries besides its payload (SMPI's MPI envelope: 16,
        ``payload_size_ = size_ + 16`` in SimGrid's ``src/smpi/mpi/smpi_request.cpp``):
        a message of ``n`` bytes moves ``n + envelope_bytes`` and takes the factors
        of that size.
    exclusive : bool
        Whether a range's lower bound belongs to the range below it (SimGrid's
        ``FactorSet``, ``src/kernel/resource/FactorSet.cpp``: a size ``<=`` a bound
        takes the previous range's factors, a size ``<=`` the first bound, 0, the
        default 1), instead of to its own.
    cross_traffic : float
        Share of a message's rate that also loads every link of the reverse route
        (from its receiver to its sender): SimGrid's ``network/crosstraffic``, on by
        default, expands each flow over its back route with weight 0.05
        (``NetworkCm02Model::comm_action_expand_constraints``,
        ``src/kernel/resource/models/network_cm02.cpp``), the acknowledgements of a
        TCP-like transport. 0: none.
    weight_S_bytes : float
        SimGrid's ``network/weight-S`` (8775 for the SMPI model,
        ``src/kernel/resource/models/network_cm02.cpp``): where above 0, flows
        sharing a link take shares inversely proportional to their *sharing
        penalty*, their route's latency plus ``weight_S_bytes`` over each of its
        links' bandwidths (CM02's RTT-unfairness of TCP); 0: equal shares.

    Raises
    ------
    ConfigError
        Unequal lengths, a first range not starting at 0, ranges not ascending, or a
        factor out of range; the message names the field and the value.
    """

    name: str
    min_bytes: tuple[float, ...]
    latency: tuple[float, ...]
    bandwidth: tuple[float, ...]
    source: str = ""
    envelope_bytes: float = 0.0
    exclusive: bool = False
    cross_traffic: float = 0.0
    weight_S_bytes: float = 0.0

    def __post_init__(self) -> None:
        where = f"message_factors {self.name!r}"
        n = len(self.min_bytes)
        if n == 0:
            raise ConfigError(f"{where}.min_bytes: needs at least one range (starting at 0)")
        for fld in ("latency", "bandwidth"):
            if len(getattr(self, fld)) != n:
                raise ConfigError(f"{where}.{fld}: {len(getattr(self, fld))} values for {n} "
                                  f"ranges in min_bytes; give one per range")
        if self.min_bytes[0] != 0:
            raise ConfigError(f"{where}.min_bytes: the first range must start at 0, got "
                              f"{self.min_bytes[0]!r}")
        for a, b in zip(self.min_bytes, self.min_bytes[1:], strict=False):
            if not (math.isfinite(b) and b > a):
                raise ConfigError(f"{where}.min_bytes: must be finite and strictly ascending, "
                                  f"got {list(self.min_bytes)!r}")
        for i, v in enumerate(self.latency):
            if not (math.isfinite(v) and v >= 0):
                raise ConfigError(f"{where}.latency[{i}]: must be finite and >= 0, got {v!r}")
            if v:
                check_range(v, FACTOR_RANGE, f"{where}.latency[{i}]", "x")
        for i, v in enumerate(self.bandwidth):
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"{where}.bandwidth[{i}]: must be finite and > 0, got {v!r}")
            check_range(v, FACTOR_RANGE, f"{where}.bandwidth[{i}]", "x")
        # assumption: bounds of plausibility only (SMPI's envelope is 16 B, its weight-S
        # 8775 B); far beyond them is a typing mistake
        if not (math.isfinite(self.envelope_bytes) and 0 <= self.envelope_bytes <= 1e6):
            raise ConfigError(f"{where}.envelope_bytes: must be in 0..1e6 bytes, got "
                              f"{self.envelope_bytes!r}")
        if not (math.isfinite(self.weight_S_bytes)  # assumption: plausibility bound
                and 0 <= self.weight_S_bytes <= 1e9):
            raise ConfigError(f"{where}.weight_S_bytes: must be in 0..1e9 bytes, got "
                              f"{self.weight_S_bytes!r}")
        if not (math.isfinite(self.cross_traffic) and 0 <= self.cross_traffic <= 1):
            raise ConfigError(f"{where}.cross_traffic: must be in 0..1 (a share of the "
                              f"message's rate), got {self.cross_traffic!r}")

    def at(self, n_bytes: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(latency factor, bandwidth factor)`` of messages of ``n_bytes`` (vectorized).

        The envelope is folded into the bandwidth factor: ``n / f_bw`` is the bytes
        ``n + envelope_bytes`` move at the factor of that size (an empty message's
        envelope is not counted).
        """
        n = np.asarray(n_bytes, dtype=float)
        m = n + self.envelope_bytes
        bounds = np.asarray(self.min_bytes)
        idx = (np.searchsorted(bounds, m, side="left") if self.exclusive
               else np.searchsorted(bounds, m, side="right")) - 1
        lat = np.append(np.asarray(self.latency), 1.0)[idx]   # idx -1: SimGrid's default 1
        bw = np.append(np.asarray(self.bandwidth), 1.0)[idx]
        if self.envelope_bytes:
            bw = bw * np.where(n > 0, n / np.where(m > 0, m, 1.0), 1.0)
        return lat, bw


def message_time_s(latency_s: npt.ArrayLike, beta_s_per_B: npt.ArrayLike,
                   n_bytes: npt.ArrayLike, factors: MessageFactors | None = None) -> Any:
    """Seconds of a message: ``f_lat(n) latency + n beta / f_bw(n)``.

    Parameters
    ----------
    latency_s : float or array
        Latency of the message's path.
    beta_s_per_B : float or array
        Seconds per byte of its path (its bottleneck).
    n_bytes : float or array
        Message size.
    factors : MessageFactors, optional
        Per-size factors; None for none (plain Hockney).

    Returns
    -------
    float or ndarray
        Broadcast over the inputs.

    Examples
    --------
    >>> round(message_time_s(1e-6, 1e-9, 1000.0) * 1e6, 9)
    2.0
    """
    n = np.asarray(n_bytes, dtype=float)
    if factors is None:
        out = np.asarray(latency_s) + n * np.asarray(beta_s_per_B)
    else:
        fl, fb = factors.at(n)
        out = fl * np.asarray(latency_s) + n * np.asarray(beta_s_per_B) / fb
    return float(out) if np.ndim(out) == 0 else out


def effective_hockney(alpha_s: float, beta_s_per_B: float, n_bytes: float | None,
                      factors: MessageFactors | None) -> tuple[float, float]:
    """``(f_lat(n) alpha, beta / f_bw(n))``: the Hockney pair that gives a message of
    ``n_bytes`` its factored time (unchanged without factors or size).

    Parameters
    ----------
    alpha_s, beta_s_per_B : float
        The path's latency and inverse bandwidth.
    n_bytes : float or None
        The message size (None: no factors).
    factors : MessageFactors or None
        The per-size factors (None: none).

    Examples
    --------
    >>> a, b = effective_hockney(1e-6, 1e-10, 1e5, MESSAGE_FACTORS["smpi-default"])
    >>> round(a * 1e6, 4), round(1 / b / 1e9, 4)    # x 11.6436, x 0.940694 (+ 16 bytes)
    (11.6436, 9.4054)
    """
    if factors is None or n_bytes is None:
        return alpha_s, beta_s_per_B
    fl, fb = factors.at(n_bytes)
    return float(fl) * alpha_s, beta_s_per_B / float(fb)


def _parse_simgrid(spec: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """SimGrid's ``"threshold:value;..."`` option syntax -> ascending (sizes, values)."""
    pairs = sorted((float(a), float(b)) for a, b in (p.split(":") for p in spec.split(";")))
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


# SimGrid's defaults for the SMPI network model, options smpi/lat-factor and
# smpi/bw-factor, as declared in src/simgrid/sg_config.cpp (SimGrid 3.2x-3.3x) and
# documented in "Configuring SimGrid", section "Bandwidth Factors"; fitted by the
# SimGrid team on MPI ping-pongs of a Grid'5000 InfiniBand cluster (Degomme et al.
# 2017, section 4). Not a property of any machine in this catalog: a generic MPI
# stack's shape, for what-ifs and for comparison with SimGrid.
_SG_LAT = "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;" \
          "1426:1.61075;732:1.9503;257:1.95341;0:2.01467"
_SG_BW = "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;" \
         "1426:0.608902;732:0.341987;257:0.338112;0:0.812084"

#: Named factor sets: ``none`` (plain Hockney: the wire's latency and bandwidth at
#: every size) and ``smpi-default`` (SimGrid's default SMPI factors).
MESSAGE_FACTORS: dict[str, MessageFactors] = {
    "none": MessageFactors("none", (0.0,), (1.0,), (1.0,),
                           source="no factors: every message at the path's latency and "
                                  "bandwidth"),
    "smpi-default": MessageFactors(
        "smpi-default", _parse_simgrid(_SG_LAT)[0], _parse_simgrid(_SG_LAT)[1],
        _parse_simgrid(_SG_BW)[1],
        source="SimGrid src/simgrid/sg_config.cpp defaults smpi/lat-factor, smpi/bw-factor "
               "(Degomme et al., IEEE TPDS 2017); SMPI's 16-byte envelope, exclusive "
               "thresholds, 5% cross-traffic and weight-S 8775",
        envelope_bytes=16.0, exclusive=True, cross_traffic=0.05, weight_S_bytes=8775.0),
}


def get_message_factors(name: str) -> MessageFactors:
    """A preset of :data:`MESSAGE_FACTORS` by name.

    Parameters
    ----------
    name : str
        A key of :data:`MESSAGE_FACTORS`.

    Examples
    --------
    >>> get_message_factors("smpi-default").min_bytes[:3]
    (0.0, 257.0, 732.0)
    """
    if name not in MESSAGE_FACTORS:
        raise unknown_name("message factors", name, MESSAGE_FACTORS)
    return MESSAGE_FACTORS[name]


def from_segments(segments: list[dict[str, Any]], latency_s: float, bandwidth_Bps: float,
                  name: str = "calibrated", source: str = "") -> MessageFactors:
    """Factors that turn a regime's base Hockney figures into its piecewise fit.

    Parameters
    ----------
    segments : list of dict
        ``{min_bytes, max_bytes, alpha_s, beta_s_per_B}`` per size range, as
        ``dlscale calibrate`` writes them in a profile's ``p2p`` entry.
    latency_s, bandwidth_Bps : float
        The regime's zero-byte latency and streaming bandwidth (the link figures the
        profile sets).
    name, source : str
        Label and provenance of the result.

    Returns
    -------
    MessageFactors
        ``latency = alpha_s / latency_s`` and ``bandwidth = 1 / (beta_s_per_B *
        bandwidth_Bps)`` per segment; the first range is widened down to 0 bytes.

    Raises
    ------
    ConfigError
        No segments, a non-positive base figure or a segment with ``beta <= 0``.

    Examples
    --------
    >>> segs = [{"min_bytes": 0, "max_bytes": 8192, "alpha_s": 2e-6, "beta_s_per_B": 2e-10},
    ...         {"min_bytes": 8192, "max_bytes": 1e9, "alpha_s": 8e-6, "beta_s_per_B": 1e-10}]
    >>> f = from_segments(segs, 2e-6, 1e10)
    >>> f.latency, f.bandwidth
    ((1.0, 4.0), (0.5, 1.0))
    """
    if not segments:
        raise ConfigError("segments: need at least one {min_bytes, alpha_s, beta_s_per_B} entry")
    if not (latency_s > 0 and bandwidth_Bps > 0):
        raise ConfigError(f"latency_s, bandwidth_Bps: must be > 0, got {latency_s!r}, "
                          f"{bandwidth_Bps!r}")
    segs = sorted(segments, key=lambda s: float(s["min_bytes"]))
    lo, lat, bw = [], [], []
    for i, s in enumerate(segs):
        beta = float(s["beta_s_per_B"])
        if not beta > 0:
            raise ConfigError(f"segments[{i}].beta_s_per_B: must be > 0 to give a bandwidth "
                              f"factor, got {beta!r}")
        lo.append(0.0 if i == 0 else float(s["min_bytes"]))
        lat.append(float(s["alpha_s"]) / latency_s)
        bw.append(1.0 / (beta * bandwidth_Bps))
    return MessageFactors(name, tuple(lo), tuple(lat), tuple(bw), source)
