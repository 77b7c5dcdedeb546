"""Build frozen dataclasses from TOML tables, converting unit-suffixed keys to SI.

A dataclass field named with an SI suffix (``bandwidth_Bps``, ``latency_s``,
``memory_bytes``, ``peak_fp32_flops``, ``clock_hz``) is written in TOML as the stem
plus any unit of the same dimension: ``bandwidth_GBps``, ``latency_us``,
``memory_GiB``, ``peak_fp32_TFLOPS``, ``clock_GHz``. Values are converted once, here.
Unknown keys, wrong types and missing fields raise :class:`ConfigError` naming the
dotted field, the value and what is allowed.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Link
>>> build(Link, {"name": "edr", "bandwidth_GBps": 12.5, "latency_us": 1.0}, "link")
Link(name='edr', bandwidth_Bps=12500000000.0, latency_s=1e-06, source='')
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from dlscale.perfmodel import units as u
from dlscale.perfmodel.errors import ConfigError, closest
from dlscale.perfmodel.limits import MAX_INTEGER
from dlscale.perfmodel.machine.hardware import Device

__all__ = ["UNITS", "build", "resolve_key"]

#: SI suffix of a field name -> {unit written in TOML: factor to SI}.
UNITS: dict[str, dict[str, float]] = {
    "s": {"s": u.s, "ms": u.ms, "us": u.us, "ns": u.ns, "min": u.minute, "h": u.hour},
    "bytes": {"bytes": u.B, "B": u.B, "KB": u.KB, "MB": u.MB, "GB": u.GB, "TB": u.TB,
              "KiB": u.KiB, "MiB": u.MiB, "GiB": u.GiB},
    "Bps": {"Bps": 1.0, "MBps": u.MB, "GBps": u.GB_per_s, "Gbps": u.Gbit_per_s,
            "MiBps": u.MiB, "GiBps": u.GiB},
    "flops": {"flops": 1.0, "MFLOPS": 1e6, "GFLOPS": u.GFLOPS, "TFLOPS": u.TFLOPS},
    "hz": {"hz": 1.0, "MHz": 1e6, "GHz": u.GHz},
    "w": {"w": 1.0, "W": 1.0, "kW": 1e3},
}

#: Resolves a preset name given where a nested dataclass is expected.
PresetLookup = Callable[[type, str, str], Any]


def _si_split(field: str) -> tuple[str, str] | None:
    """``"bandwidth_Bps"`` -> ``("bandwidth", "Bps")``; None for unitless fields."""
    stem, _, suffix = field.rpartition("_")
    if stem and suffix in UNITS:
        return stem, suffix
    return None


def resolve_key(cls: type, key: str, where: str) -> tuple[str, float]:
    """Map a TOML key of ``cls`` to ``(field name, factor to SI)``.

    Parameters
    ----------
    cls : type
        The dataclass the TOML table builds.
    key : str
        The key as written (stem plus unit).
    where : str
        Dotted path of the table, for the message.

    Returns
    -------
    field : str
        The dataclass field.
    factor : float
        Multiplier to SI.

    Raises
    ------
    ConfigError
        An unknown key (listing the valid ones with their units, and the closest).

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import Link
    >>> resolve_key(Link, "latency_us", "link")
    ('latency_s', 1e-06)
    >>> resolve_key(Link, "latency_parsec", "link")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: link.latency_parsec: unknown key; valid: bandwidth_<Bps|MBps|GBps|Gbps|MiBps|GiBps>, latency_<s|ms|us|ns|min|h>, name, source (did you mean 'latency_s'?)
    """
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    if key in fields:
        return key, 1.0
    for name in fields:
        split = _si_split(name)
        if split is None:
            continue
        stem, suffix = split
        if key.startswith(stem + "_") and key[len(stem) + 1:] in UNITS[suffix]:
            return name, UNITS[suffix][key[len(stem) + 1:]]
    shown, concrete = [], []
    for name in sorted(fields):
        split = _si_split(name)
        if split:
            shown.append(f"{split[0]}_<{'|'.join(UNITS[split[1]])}>")
            concrete += [f"{split[0]}_{unit}" for unit in UNITS[split[1]]]
        else:
            shown.append(name)
            concrete.append(name)
    raise ConfigError(f"{where}.{key}: unknown key; valid: {', '.join(shown)}"
                      f"{closest(key, concrete)}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, where: str, lookup: PresetLookup | None,
             base: Any = None) -> Any:
    """Convert a TOML value to the annotated type ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        if len(options) > 1 and all(dataclasses.is_dataclass(a) for a in options):
            return _convert_union_of_dataclasses(options, value, where, lookup, base)
        return _convert(options[0], value, where, lookup, base)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, str):
            if lookup is None:
                raise ConfigError(f"{where}: expected a table, got {value!r}")
            return lookup(tp, value, where)
        if isinstance(value, Mapping):
            if "base" in value and lookup is not None:   # a nested table from a preset
                name = value["base"]
                if not isinstance(name, str) or not name:
                    raise ConfigError(f"{where}.base: expected a preset name, got {name!r}")
                base = lookup(tp, name, f"{where}.base")
                value = {k: v for k, v in value.items() if k != "base"}
            return build(tp, value, where, base=base, lookup=lookup)
        raise ConfigError(f"{where}: expected a table or a preset name, got {value!r}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected an array, got {value!r}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]", lookup) for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{where}: expected {len(args)} values, got {list(value)!r}")
        return tuple(_convert(a, v, f"{where}[{i}]", lookup)
                     for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        raise ConfigError(f"{where}: {len(str(abs(value)))}-digit integer is out of range; "
                          f"TOML integers are 64-bit (at most {MAX_INTEGER:,})")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def _convert_union_of_dataclasses(options: list[Any], value: Any, where: str,
                                  lookup: PresetLookup | None, base: Any) -> Any:
    """A table whose ``family`` key picks one of several dataclasses (topologies)."""
    from dlscale.perfmodel.machine.topologies import FAMILIES

    by_family = {o.__dataclass_fields__["family"].default: o for o in options
                 if "family" in o.__dataclass_fields__}
    if by_family and set(by_family) <= set(FAMILIES):
        # a network topology: every family registered in the one table, also one
        # registered after the type annotation was written
        by_family = {name: f.description for name, f in FAMILIES.items()}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a table with a 'family' key, got {value!r}")
    family = value.get("family", getattr(base, "family", None))
    if family not in by_family:
        raise ConfigError(f"{where}.family: unknown value {family!r}; valid: "
                          f"{', '.join(sorted(by_family))}{closest(str(family), by_family)}")
    rest = {k: v for k, v in value.items() if k != "family"}
    same = base is not None and getattr(base, "family", None) == family
    return build(by_family[family], rest, where, base=base if same else None, lookup=lookup)


def build(cls: type, table: Mapping[str, Any], where: str, *, base: Any = None,
          lookup: PresetLookup | None = None) -> Any:
    """Build a ``cls`` instance from a TOML table, on top of ``base`` if given.

    Parameters
    ----------
    cls : type
        A dataclass.
    table : mapping
        TOML keys (unit-suffixed where the field has an SI suffix) to values.
    where : str
        Dotted path of ``table`` in the file, for error messages.
    base : cls instance, optional
        Values for keys that ``table`` does not set.
    lookup : callable, optional
        ``lookup(type, name, where)`` resolves a preset name where a nested
        dataclass is expected (``device = "v100-sxm2"``).
    """
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, raw in table.items():
        name, factor = resolve_key(cls, key, where)
        if name in values:
            raise ConfigError(f"{where}.{key}: {name} is given twice")
        sub_base = getattr(base, name, None) if base is not None else None
        value = _convert(hints[name], raw, f"{where}.{key}", lookup, sub_base)
        if factor != 1.0:
            value = (tuple(v * factor for v in value) if isinstance(value, tuple)
                     else value * factor)
        values[name] = value
    if base is not None:
        if cls is Device:
            values = _rebased_device(base, values, where)
        built = _checked(where, lambda: dataclasses.replace(base, **values))
        _check_renamed_to_preset(base, built, where, lookup)
        return built
    missing = [f.name for f in dataclasses.fields(cls)
               if f.init and f.name not in values
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ConfigError(f"{where}: missing required field(s): {', '.join(missing)}")
    return _checked(where, lambda: cls(**values))


#: The figures that say which chip a device is: a file that renames a preset device and
#: changes any of them describes another chip.
_CHIP_FIELDS = ("kind", "cores", "clock_hz", "peak_fp64_flops", "peak_fp32_flops",
                "peak_fp16_flops")


def _rebased_device(base: Device, values: dict[str, Any], where: str) -> dict[str, Any]:
    """A device table written over a preset device: what it may not carry over.

    A table that renames the device and changes its chip figures (:data:`_CHIP_FIELDS`)
    describes another chip: the base's sustained fractions were solved from a
    measurement of the base device at its own peaks, and its source cites the base's
    datasheet. Such a table must give ``sustained_fraction`` (one clear error
    otherwise); the mixed-precision fraction falls back to it, and the source and the
    measured streaming share (``stream_fraction``) are cleared unless the table sets them. A rename alone (a memory variant) or changed
    peaks under the same name (a what-if) keep everything else from the base.

    Parameters
    ----------
    base : Device
        The device the table is written over.
    values : dict
        The fields the table sets, already converted to SI.
    where : str
        Dotted path of the table, for the error message.

    Returns
    -------
    dict
        The fields to replace in ``base``.
    """
    name = values.get("name", base.name)
    other_chip = name != base.name and any(
        key in values and values[key] != getattr(base, key) for key in _CHIP_FIELDS)
    if not other_chip:
        return values
    if "sustained_fraction" not in values:
        raise ConfigError(
            f"{where}: device {name!r} has other chip figures than its base {base.name!r}, "
            f"whose sustained_fraction {base.sustained_fraction:.3f} was solved from a "
            f"measurement of {base.name!r}; give sustained_fraction for {name!r} (from a "
            f"measurement of it; `dlscale catalog devices` shows how each preset's was solved)")
    # the base's measured streaming share is the base chip's too: cleared unless given
    return {"sustained_fraction_fp16": 0.0, "source": "", "stream_fraction": 0.0, **values}


def _check_renamed_to_preset(base: Any, built: Any, where: str,
                             lookup: PresetLookup | None) -> None:
    """Refuse a table over ``base`` renamed to another preset's name without being it.

    ``[runtime] name = "gloo"`` over Summit's runtime keeps Horovod-NCCL's figures for
    every field the table does not set, and every output would name the result
    ``gloo``: an answer labelled as a preset's that is not its. A name of its own, or
    the preset itself (``base = "gloo"`` in the table), is what was meant.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_runtime
    >>> from dlscale.perfmodel.machine.runtime import Runtime
    >>> lookup = lambda tp, name, where: get_runtime(name)
    >>> build(Runtime, {"name": "gloo"}, "runtime", base=get_runtime("horovod-nccl"),
    ...       lookup=lookup)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: runtime.name: 'gloo' is the name of a preset, but this table keeps the figures of 'horovod-nccl' where it sets none, so every answer would be labelled 'gloo' without being its; start from it (base = "gloo" in this table) or give it a name of its own
    """
    new, old = getattr(built, "name", None), getattr(base, "name", None)
    if lookup is None or not isinstance(new, str) or new == old:
        return
    try:
        preset = lookup(type(built), new, where)
    except ConfigError:
        return    # not a preset's name (or no presets of this kind): a name of its own
    if preset == built:
        return    # the preset itself, field for field
    raise ConfigError(f"{where}.name: {new!r} is the name of a preset, but this table keeps "
                      f"the figures of {old!r} where it sets none, so every answer would be "
                      f"labelled {new!r} without being its; start from it "
                      f"(base = \"{new}\" in this table) or give it a name of its own")


def _checked(where: str, make: Callable[[], Any]) -> Any:
    """``make()``, with a dataclass's own check failure prefixed by ``where``."""
    try:
        return make()
    except ConfigError as exc:
        if str(exc).startswith(where):
            raise
        raise ConfigError(f"{where}: {exc}") from None
