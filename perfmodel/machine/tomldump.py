"""Write a configuration dataclass as the TOML that builds it again (:mod:`dlscale.perfmodel.machine.tomlmap`).

Every field is written under its own SI name (``bandwidth_Bps``, ``latency_s``), which
:func:`dlscale.perfmodel.machine.tomlmap.resolve_key` takes as it is, so a float comes back bit for bit; a
nested dataclass is a sub-table, a tuple of dataclasses (a model's layers) an array
of inline tables, ``None`` is left out (the field's default). ``dlscale catalog show``
prints a preset this way.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Link
>>> print(to_toml(Link("edr", 12.5e9, 1e-6, "IB spec"), "network.link"), end="")
[network.link]
name = "edr"
bandwidth_Bps = 12500000000.0
latency_s = 1e-06
source = "IB spec"
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

__all__ = ["to_toml"]


def _fields(obj: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of the fields the TOML sets: ``family`` first (it picks the
    topology's class), then every init field that is not ``None``."""
    out = [("family", obj.family)] if hasattr(obj, "family") and isinstance(obj.family, str) \
        else []
    for f in dataclasses.fields(obj):
        if f.init and f.name != "family":
            value = getattr(obj, f.name)
            if value is not None:
                out.append((f.name, value))
    return out


def _string(text: str) -> str:
    # JSON's escapes are TOML's basic-string escapes; DEL must be escaped in TOML too
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v: Any) -> str:
    """One TOML value (scalar, array or inline table)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (tuple, list)):
        if v and all(dataclasses.is_dataclass(x) for x in v):
            return "[\n" + "".join(f"  {_value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if dataclasses.is_dataclass(v):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in _fields(v)) + "}"
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as TOML")


def to_toml(obj: Any, table: str = "") -> str:
    """``obj`` (a dataclass) as TOML; under ``[table]`` when ``table`` is given.

    Parameters
    ----------
    obj : dataclass instance
        A cluster, workload or any of their parts.
    table : str, optional
        Dotted name of the table to write it as (``"node.device"``); top level if "".

    Returns
    -------
    str
        The document, ending in a newline.
    """
    scalars, tables = [], []
    for name, value in _fields(obj):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            tables.append((name, value))
        else:
            scalars.append(f"{name} = {_value(value)}")
    lines = ([f"[{table}]"] if table else []) + scalars
    text = "\n".join(lines) + ("\n" if lines else "")
    for name, value in tables:
        text += "\n" + to_toml(value, f"{table}.{name}" if table else name)
    return text
