"""Reading Chrome-trace files safely: size cap, compressed input, value types, span lookup.

Shared by the profiler-trace reader (:mod:`dlscale.perfmodel.compute.traces`) and the Horovod-timeline reader
(:mod:`dlscale.perfmodel.compute.horovod`). :func:`load_events` reads a file (plain or gzip, decompressed in
chunks) of at most :data:`MAX_TRACE_BYTES` bytes of JSON, and checks the types of the
fields both readers use, so that every malformed input is one line naming the file,
the event and the field, never a traceback.

Examples
--------
>>> s = Spans([(0, 2), (1, 3), (5, 6)])
>>> [t in s for t in (0.5, 3, 4, 6, 7)]
[True, True, False, True, False]
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import zlib
from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from dlscale.perfmodel.errors import ConfigError

__all__ = ["MAX_TRACE_BYTES", "Spans", "event_args", "finite", "intervals_union_s",
           "load_events", "shown"]

#: Most bytes of JSON text (after decompression) a trace may hold. Parsed, a trace
#: takes about 5.5 times its text in Python objects (``benchmarks/bench_traces.py``: a
#: 200 MB trace peaks at 1.15 GB resident), so 512 MiB of text keeps a read near 3 GB;
#: a profiler run of a few steps (``torch.profiler.schedule(active=2)``) writes tens of
#: MB. A compressed trace is expanded in chunks and refused as soon as it passes this.
MAX_TRACE_BYTES = 512 << 20

_CHUNK = 16 << 20
_STRING_FIELDS = ("ph", "cat", "name")
_ID_FIELDS = ("pid",)  # tid is not used (the sample trace has a list there)


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for a one-line message.

    Examples
    --------
    >>> shown(list(range(100)), 20)
    '[0, 1, 2, 3, 4, 5...'
    """
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def finite(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or float (not a bool) with a finite float value.

    Examples
    --------
    >>> finite(3), finite(float("nan")), finite(10 ** 400), finite(True), finite("1")
    (True, False, False, False, False)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def intervals_union_s(spans: Iterable[tuple[float, float]]) -> float:
    """Total length covered by ``(start, end)`` intervals (overlaps counted once).

    Examples
    --------
    >>> intervals_union_s([(0, 2), (1, 3), (5, 6)])
    4.0
    """
    total, end = 0.0, -math.inf
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return float(total)


class Spans:
    """Closed intervals, merged and sorted once, for ``t in spans`` in O(log n)."""

    def __init__(self, spans: Iterable[tuple[float, float]]) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        for a, b in sorted(spans):
            if self.ends and a <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], b)
            else:
                self.starts.append(a)
                self.ends.append(b)

    def __contains__(self, t: float) -> bool:
        i = bisect_right(self.starts, t) - 1
        return i >= 0 and t <= self.ends[i]


def event_args(ev: dict[str, Any]) -> dict[str, Any]:
    """The event's ``args`` object (``{}`` where absent or not an object)."""
    args = ev.get("args")
    return args if isinstance(args, dict) else {}


def _read_stream(path: Path, stream: BinaryIO, compressed: int, limit: int) -> bytearray:
    raw = bytearray()
    while chunk := stream.read(_CHUNK):
        raw += chunk
        if len(raw) > limit:
            raise ConfigError(f"{path}: {compressed:,} bytes of gzip expand to more than the "
                              f"limit of {limit:,} bytes of trace JSON (MAX_TRACE_BYTES); "
                              f"record fewer steps")
    return raw


def _read_capped(path: Path, limit: int) -> bytearray:
    """The file's bytes, gzip expanded, refused past ``limit`` before holding more."""
    try:
        with open(path, "rb") as f:
            size = Path(path).stat().st_size
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=f) as gz:
                    return _read_stream(path, gz, size, limit)  # type: ignore[arg-type]
            if size > limit:
                raise ConfigError(f"{path}: {size:,} bytes, over the limit of {limit:,} bytes "
                                  f"of trace JSON (MAX_TRACE_BYTES); record fewer steps")
            return _read_stream(path, f, size, limit)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise ConfigError(f"{path}: broken gzip file: {exc or 'truncated'}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _parse(path: Path, raw: bytearray, kind: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte at offset {exc.start}); a {kind} "
                          f"must be Chrome-trace JSON") from None
    del raw
    head = text[:64].lstrip()
    tail = text[-64:].rstrip()
    if head.startswith("[") and not tail.endswith("]"):
        # an unterminated list (Horovod writes "]" only on a clean shutdown)
        text = text.rstrip(",\n\r\t ") + "]"
    collecting = gc.isenabled()
    gc.disable()  # millions of new dicts with no cycles: the collector would only rescan them
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column "
                          f"{exc.colno}); a {kind} must be Chrome-trace JSON") from None
    except ValueError as exc:  # e.g. an integer past Python's digit limit
        raise ConfigError(f"{path}: not readable JSON ({str(exc).splitlines()[0]}); a {kind} "
                          f"must be Chrome-trace JSON") from None
    except RecursionError:
        raise ConfigError(f"{path}: JSON nested too deeply to read; a {kind} is a list of "
                          f"flat event objects") from None
    finally:
        if collecting:
            gc.enable()


def _check_event(path: Path, i: int, ev: Any) -> None:
    if not isinstance(ev, dict):
        raise ConfigError(f"{path}: traceEvents[{i}]: expected an object, got {shown(ev)}")
    for key in _STRING_FIELDS:
        v = ev.get(key)
        if v is not None and not isinstance(v, str):
            raise ConfigError(f"{path}: traceEvents[{i}].{key}: must be a string, got {shown(v)}")
    for key in _ID_FIELDS:
        v = ev.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, str))):
            raise ConfigError(f"{path}: traceEvents[{i}].{key}: must be an integer or a "
                              f"string, got {shown(v)}")
    c = event_args(ev).get("correlation")
    if c is not None and (isinstance(c, bool) or not isinstance(c, (int, str))):
        raise ConfigError(f"{path}: traceEvents[{i}].args.correlation: must be an integer "
                          f"(the launch's id), got {shown(c)}")


def load_events(path: str | Path, kind: str = "trace",
                limit: int | None = None) -> list[dict[str, Any]]:
    """The event list of a Chrome-trace file (object with ``traceEvents``, or a list).

    At most ``limit`` bytes of JSON (default :data:`MAX_TRACE_BYTES`), gzip expanded in
    chunks and refused as soon as it passes the limit. An unterminated list (Horovod
    writes ``]`` only on a clean shutdown) is closed. The fields both readers use are
    type-checked (``ph``, ``cat``, ``name`` strings; ``pid`` an integer or a
    string; ``args.correlation`` an integer). Every failure is a one-line ConfigError
    naming the file.
    """
    path = Path(path)
    data = _parse(path, _read_capped(path, MAX_TRACE_BYTES if limit is None else limit), kind)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ConfigError(f"{path}: traceEvents: expected a list of events, got "
                          f"{type(events).__name__}; a {kind} must be Chrome-trace JSON")
    for i, ev in enumerate(events):
        _check_event(path, i, ev)
    return events
