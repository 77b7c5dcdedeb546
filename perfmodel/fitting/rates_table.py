"""A small table of measured rates at a few node counts, for ``dlscale fit``.

Two forms, each checked field by field (a bad value is one line naming the file, the
row or key and what is allowed, before any fit runs):

- **CSV**: a header row naming ``nodes`` and one or more of :data:`QUANTITIES`; each
  further row a node count and its measured values (an empty cell: not measured).
  Lines starting with ``#`` are comments.
- **TOML**: ``[[point]]`` tables with ``nodes`` and one or more of
  :data:`QUANTITIES`; optionally ``source = "..."`` (where the figures come from) and
  a ``[single_device]`` table with ``samples_per_s`` and ``batch`` (the rate one device
  alone trained at, which then sets the model's compute).

``efficiency`` is measured against the baseline the command names (one node, or one
device alone).

Examples
--------
>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "rates.csv"
>>> _ = p.write_text("nodes,samples_per_s\\n1,229\\n2,459\\n")
>>> t = read_rates(p)
>>> [(o.nodes, o.quantity, o.value) for o in t.points]
[(1, 'samples_per_s', 229.0), (2, 'samples_per_s', 459.0)]
>>> _ = p.write_text("nodes,samples_per_s\\n1,-3\\n")
>>> read_rates(p)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: ...rates.csv: row 2, samples_per_s: must be a finite number > 0, got '-3'
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.textfile import read_utf8

__all__ = ["MAX_POINTS", "QUANTITIES", "Observation", "RatesTable", "read_rates",
           "timeline_observations"]

#: What a table may give per node count: samples/s over all devices, seconds per
#: iteration, scaling efficiency (against the command's baseline); and, from a
#: Horovod timeline, the collective and exposed seconds per iteration.
QUANTITIES = ("samples_per_s", "iteration_s", "efficiency")
#: Most rows a table may hold (a fit evaluates the model at each distinct node count).
MAX_POINTS = 64
#: Greatest node count a row may name.
MAX_NODES = 1 << 20


@dataclass(frozen=True)
class Observation:
    """One measured figure: ``quantity`` (a result field of a prediction row) at
    ``nodes`` nodes."""

    nodes: int
    quantity: str
    value: float
    source: str = ""
    size_bytes: float = 0.0     # one collective's message (quantity "allreduce_s")


@dataclass(frozen=True)
class RatesTable:
    """The rows of a rates table and, where given, the single-device rate."""

    points: tuple[Observation, ...]
    single_device: tuple[float, int] | None = None
    source: str = ""


def _value(where: str, key: str, raw: Any) -> float:
    try:
        v = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise ConfigError(f"{where}, {key}: must be a finite number > 0, got {raw!r}")
    if key == "efficiency" and v > 2:
        raise ConfigError(f"{where}, efficiency: must be a fraction in (0, 2] (0.9 for 90%), "
                          f"got {raw!r}")
    return v


def _nodes(where: str, raw: Any) -> int:
    text = str(raw).strip()
    ok = (isinstance(raw, int) and not isinstance(raw, bool)) or (
        isinstance(raw, str) and text.isascii() and text.isdigit())
    n = int(text) if ok else 0
    if not 1 <= n <= MAX_NODES:
        raise ConfigError(f"{where}, nodes: must be an integer from 1 to {MAX_NODES}, got {raw!r}")
    return n


def _rows(path: Path, text: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (dicts with their position) and the TOML document's other keys."""
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: TOML syntax error: {exc}") from None
        extra = sorted(set(doc) - {"point", "source", "single_device"})
        if extra:
            raise ConfigError(f"{path}: unknown keys {extra}; valid: point, source, single_device")
        points = doc.get("point", [])
        if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
            raise ConfigError(f"{path}: point: must be [[point]] tables")
        return [{**p, "_where": f"{path}: point[{i}]"} for i, p in enumerate(points)], doc
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    if not reader:
        raise ConfigError(f"{path}: empty; a header row 'nodes,samples_per_s' and one row per "
                          f"node count")
    head = [h.strip() for h in reader[0]]
    bad = [h for h in head if h != "nodes" and h not in QUANTITIES]
    if "nodes" not in head or bad or len(set(head)) != len(head):
        raise ConfigError(f"{path}: header {head!r}: must name nodes and one or more of "
                          f"{', '.join(QUANTITIES)}, each once")
    rows = []
    for i, cells in enumerate(reader[1:], start=2):
        if len(cells) != len(head):
            raise ConfigError(f"{path}: row {i}: {len(cells)} cells, the header has {len(head)}")
        rows.append({**{h: c.strip() for h, c in zip(head, cells, strict=True) if c.strip()},
                     "_where": f"{path}: row {i}"})
    return rows, {}


def _single(path: Path, doc: dict[str, Any]) -> tuple[float, int] | None:
    sd = doc.get("single_device")
    if sd is None:
        return None
    if not isinstance(sd, dict) or set(sd) != {"samples_per_s", "batch"}:
        raise ConfigError(f"{path}: single_device: must be a table with samples_per_s and "
                          f"batch (samples per device), got {sd!r}")
    batch = sd["batch"]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"{path}: single_device.batch: must be a positive integer, got "
                          f"{batch!r}")
    return _value(f"{path}: single_device", "samples_per_s", sd["samples_per_s"]), batch


def read_rates(path: str | Path) -> RatesTable:
    """Read and check a rates table (CSV, or TOML by its ``.toml`` suffix).

    Parameters
    ----------
    path : str or Path
        The table.

    Returns
    -------
    RatesTable

    Raises
    ------
    ConfigError
        A missing or unreadable file, a bad header, row, key or value, a node count
        and quantity given twice, no row, or more than :data:`MAX_POINTS` rows.
    """
    path = Path(path)
    text = read_utf8(path, "rates table")
    rows, doc = _rows(path, text)
    src = doc.get("source", "")
    if not isinstance(src, str):
        raise ConfigError(f"{path}: source: must be a string, got {src!r}")
    points: list[Observation] = []
    seen: set[tuple[int, str]] = set()
    for row in rows:
        where = row.pop("_where")
        extra = sorted(set(row) - {"nodes", *QUANTITIES})
        if extra:
            raise ConfigError(f"{where}: unknown keys {extra}; valid: nodes, {', '.join(QUANTITIES)}")
        n = _nodes(where, row.get("nodes"))
        given = [q for q in QUANTITIES if q in row]
        if not given:
            raise ConfigError(f"{where}: no measured value; give one of {', '.join(QUANTITIES)}")
        for q in given:
            if (n, q) in seen:
                raise ConfigError(f"{where}: {q} at {n} nodes given twice")
            seen.add((n, q))
            points.append(Observation(n, q, _value(where, q, row[q]), str(path)))
    if not points:
        raise ConfigError(f"{path}: no rows; one row per node count (nodes and a measured value)")
    if len(points) > MAX_POINTS:
        raise ConfigError(f"{path}: {len(points)} values, at most {MAX_POINTS}")
    return RatesTable(tuple(points), _single(path, doc), src)


def timeline_observations(path: str | Path, devices_per_node: int,
                          layer_bytes: dict[str, float] | None = None) -> list[Observation]:
    """A Horovod timeline's measured collective and exposed seconds per iteration, as
    observations of ``comm_s`` and ``exposed_comm_s`` at the node count its ranks make,
    and its collectives' durations against their sizes
    (:func:`dlscale.perfmodel.compute.horovod.read_horovod_timeline`, which refuses
    bad input in one line).

    Parameters
    ----------
    path : str or Path
        The timeline (``HOROVOD_TIMELINE``).
    devices_per_node : int
        Ranks per node of the run (one per device).
    layer_bytes : dict, optional
        The model's gradient bytes per layer name: each collective whose tensors all
        name a layer is an ``allreduce_s`` observation of its size
        (:func:`message_observations`).

    Raises
    ------
    ConfigError
        A bad timeline, one without rank ticks, or ranks that are not whole nodes.
    """
    from dlscale.perfmodel.compute.horovod import read_horovod_timeline

    h = read_horovod_timeline(path)
    if h.ranks < 2 or h.ranks % devices_per_node:
        raise ConfigError(f"{path}: {h.ranks} ranks in the timeline's negotiation ticks; a fit "
                          f"needs a multi-rank run of whole nodes ({devices_per_node} ranks per "
                          f"node)")
    n = h.ranks // devices_per_node
    src = f"{path} ({h.describe()})"
    out = [Observation(n, "comm_s", h.allreduce_s, src)] if h.allreduce_s > 0 else []
    out += message_observations(h, n, layer_bytes or {}, src)
    if h.exposed_s > 0:
        out.append(Observation(n, "exposed_comm_s", h.exposed_s, src))
    if not out:
        raise ConfigError(f"{path}: no collective time measured; nothing to fit")
    return out


def message_observations(h: Any, nodes: int, layer_bytes: dict[str, float],
                         source: str) -> list[Observation]:
    """Each collective of a Horovod timeline (``h.messages``) whose tensors all name a
    layer of the model, as an ``allreduce_s`` observation of its duration at its size:
    the gradient bytes of the distinct layers it carried (a layer's weight and bias
    tensors are one layer's bytes). A tensor that names no layer leaves its collective
    out (its size is not known).

    Examples
    --------
    >>> class H:
    ...     messages = ((("grad_fc_w", "grad_fc_b"), 2e-3), (("grad_x",), 1e-3))
    >>> [(o.quantity, o.size_bytes, o.value) for o in
    ...  message_observations(H(), 2, {"fc": 4e6, "conv1": 1e5}, "t")]
    [('allreduce_s', 4000000.0, 0.002)]
    """
    from dlscale.perfmodel.compute.horovod import HorovodTimeline

    out = []
    for tensors, seconds in h.messages:
        names = [HorovodTimeline(0, 0, 0, 0.0, 0.0, 0.0, ((t, 0.0),)).layer_ready(
            list(layer_bytes)) for t in tensors]
        if seconds <= 0 or not all(names):
            continue
        layers = {n[0][0] for n in names}
        out.append(Observation(nodes, "allreduce_s", float(seconds), source,
                               float(sum(layer_bytes[x] for x in layers))))
    return out
