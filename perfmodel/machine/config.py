"""Load clusters and workloads from preset names or TOML files; apply overrides.

A cluster or a workload is given either as the name of a built-in preset
(``summit``, ``resnet50``) or as a path to a TOML file. A file may start from a
preset with ``base = "summit"``, or from another file of the same kind with
``base = "summit-fast.toml"`` (relative to the file; chains are followed, a cycle
is an error), and change only some fields. Keys carry their units
(``bandwidth_GBps``, ``latency_us``, ``memory_GiB``); see :mod:`dlscale.perfmodel.machine.tomlmap`. Both are
parsed once, at the edge, into the frozen dataclasses of :mod:`dlscale.perfmodel.machine.hardware` and
:mod:`dlscale.perfmodel.training.workload`; every error names the file, the dotted field, the value and what
is allowed.

Examples
--------
>>> c = load_cluster("summit")
>>> c2 = apply_overrides(c, {"network.link.bandwidth_GBps": 25.0})
>>> c2.network.link.bandwidth_Bps
25000000000.0
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster, Device, Link, NodeSpec
from dlscale.perfmodel.machine.runtime import Runtime
from dlscale.perfmodel.machine.tomlmap import build
from dlscale.perfmodel.network.msgfactors import MessageFactors, get_message_factors
from dlscale.perfmodel.textfile import read_utf8
from dlscale.perfmodel.training.workload import Model, Workload

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.profile import MachineProfile

_T = TypeVar("_T")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["apply_overrides", "load_cluster", "load_workload", "read_toml"]


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file or a syntax error is a ConfigError.

    The syntax error names the file and the line.

    Parameters
    ----------
    path : str or Path
        The TOML file.

    Returns
    -------
    dict
        The parsed document.

    Raises
    ------
    ConfigError
        A missing, unreadable or non-UTF-8 file, an XML (GraphML) file, or a TOML
        syntax error (with the file and line).
    """
    path = Path(path)
    text = read_utf8(path, "TOML")
    head = text.lstrip()[:200].lower()
    if head.startswith("<"):  # XML; TOML never starts so
        kind = "a GraphML" if "graphml" in text[:2000].lower() else "an XML"
        hint = (" (a GraphML topology simulates one collective, `dlscale simulate "
                "TOPOLOGY.graphml` with no WORKLOAD; training and predict need a cluster "
                "preset or TOML file)" if kind == "a GraphML" else "")
        raise ConfigError(f"{path}: is {kind} file, not TOML{hint}")
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: TOML nested too deeply to read") from None


def _preset(tp: type, name: str, where: str) -> Any:
    """Resolve a preset name for a nested dataclass field."""
    from dlscale.perfmodel import catalog

    getters = {
        Device: catalog.get_device,
        Link: catalog.get_link,
        NodeSpec: catalog.get_node,
        Model: catalog.get_model,
        Cluster: catalog.get_cluster,
        Workload: catalog.get_workload,
        MessageFactors: get_message_factors,
        Runtime: catalog.get_runtime,
    }
    if tp not in getters:
        raise ConfigError(f"{where}: a preset name is not allowed here, got {name!r}")
    try:
        return getters[tp](name)
    except ConfigError as exc:
        if where in ("cluster", "workload"):  # the getter's message names the field
            raise
        raise ConfigError(f"{where}: {exc}") from None


def _is_file_spec(spec: str) -> bool:
    return spec.endswith(".toml") or "/" in spec or Path(spec).is_file()


def _load(tp: type[_T], kind: str, spec: str | Path | _T) -> _T:
    if isinstance(spec, tp):
        return spec
    spec = str(spec)
    if not _is_file_spec(spec):
        preset: _T = _preset(tp, spec, kind)
        return preset
    loaded: _T = _load_file(tp, kind, Path(spec), ())
    if isinstance(loaded, Cluster):   # what the file describes, as a whole, is read
        loaded.runtime.check_read(f"{spec}: cluster.runtime")
    return loaded


#: Longest chain of ``base`` files (each file starting from the next): deep enough for
#: any layering of what-ifs, short enough to stay far from Python's recursion limit.
MAX_BASE_CHAIN = 100


def _load_file(tp: type, kind: str, path: Path, chain: tuple[Path, ...]) -> Any:
    """Build ``tp`` from the TOML file ``path``, starting from its ``base`` if any.

    ``base`` is a preset name or the path of another TOML file of the same kind,
    relative to the file that names it; ``chain`` holds the files already on the way
    (a file met twice is a cycle).
    """
    me = path.resolve()
    if me in chain:
        names = " -> ".join(str(p) for p in (*chain[chain.index(me):], me))
        raise ConfigError(f"{chain[-1]}: {kind}.base: cycle {names}; a base file may not "
                          f"lead back to a file that starts from it")
    table = read_toml(path)
    where = f"{path}: {kind}"
    base = None
    if "base" in table:
        name = table.pop("base")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.base: expected a preset name or the path of a TOML "
                              f"file (relative to this file), got {name!r}")
        target = Path(name) if Path(name).is_absolute() else path.parent / name
        if name.endswith(".toml") or "/" in name or target.is_file():
            if target.is_dir():
                raise ConfigError(f"{where}.base: {target} is a folder, not a TOML file")
            if target.exists() and not target.is_file():
                raise ConfigError(f"{where}.base: {target} is not a regular file (a FIFO or "
                                  f"device); give a TOML file")
            if not target.is_file():
                raise ConfigError(f"{where}.base: file not found: {target} (a base path is "
                                  f"relative to the file that names it)")
            if len(chain) >= MAX_BASE_CHAIN:
                raise ConfigError(f"{where}.base: a chain of more than {MAX_BASE_CHAIN} base "
                                  f"files ({chain[0]} -> ... -> {path} -> {target}); a base "
                                  f"chain may be at most {MAX_BASE_CHAIN} files long")
            base = _load_file(tp, kind, target, (*chain, me))
        else:
            base = _preset(tp, name, f"{where}.base")
    return build(tp, table, where, base=base, lookup=_preset)


def load_cluster(spec: str | Path | Cluster,
                 profile: str | Path | MachineProfile | None = None) -> Cluster:
    """A cluster from a preset name, a TOML path, or a Cluster (returned as is).

    With ``profile`` (a machine profile from ``dlscale calibrate``), the profile's
    measured network and kernel figures replace the description's
    (:func:`dlscale.perfmodel.machine.profile.apply_profile`).

    Parameters
    ----------
    spec : str, Path or Cluster
        A catalog name (``dlscale catalog clusters``), a TOML file, or a Cluster.
    profile : str, Path or MachineProfile, optional
        A calibration profile (JSON file, or one already loaded) whose measurements
        replace catalog figures.

    Returns
    -------
    Cluster
        Validated, in SI units.

    Raises
    ------
    ConfigError
        An unknown name (with the valid ones and the closest), a bad file, an
        unknown key or a bad value (naming the dotted field), or a bad profile.

    Examples
    --------
    >>> load_cluster("sumit")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: cluster: unknown name 'sumit'; valid: ... (did you mean 'summit'?)
    """
    cluster: Cluster = _load(Cluster, "cluster", spec)
    if profile is not None:
        from dlscale.perfmodel.machine.profile import MachineProfile, apply_profile, load_profile

        prof = profile if isinstance(profile, MachineProfile) else load_profile(profile)
        try:
            cluster = apply_profile(cluster, prof)
        except ConfigError as exc:
            text = str(exc)
            if isinstance(profile, MachineProfile) or str(profile) in text:
                raise
            raise ConfigError(f"profile {str(profile)!r}: {text}") from None
        # the profile's network figures are measured through the stack: no transport
        # efficiency on top of them (a profile of fitted values alone, from `dlscale
        # fit`, measured no link: the transport it fitted applies to the described ones)
        if prof.p2p or prof.kernels:
            cluster = dataclasses.replace(
                cluster, runtime=dataclasses.replace(cluster.runtime, links_measured=True))
    return cluster


def load_workload(spec: str | Path | Workload) -> Workload:
    """A workload from a preset name, a TOML path, or a Workload (returned as is).

    Parameters
    ----------
    spec : str, Path or Workload
        A catalog name (``dlscale catalog workloads``), a TOML file, or a Workload.

    Returns
    -------
    Workload
        Validated, in SI units.

    Raises
    ------
    ConfigError
        An unknown name (with the valid ones and the closest), a bad file, an
        unknown key or a bad value (naming the dotted field).

    Examples
    --------
    >>> load_workload("resnet50").precision
    'fp32'
    """
    workload: Workload = _load(Workload, "workload", spec)
    return workload


def _nest(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "a.c": 2}`` -> ``{"a": {"b": 1, "c": 2}}``."""
    nested: dict[str, Any] = {}
    for path, value in overrides.items():
        parts = path.split(".")
        if not all(parts):
            raise ConfigError(f"override {path!r}: empty component in dotted path")
        node = nested
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {path!r}: {part} is set both as a value and a table")
            node = child
        node[parts[-1]] = value
    return nested


def apply_overrides(obj: Any, overrides: Mapping[str, Any], where: str | None = None) -> Any:
    """Return a copy of ``obj`` with fields changed by dotted path.

    Paths use the same keys as the TOML files, units included
    (``"network.topology.max_nodes"``, ``"node.nic.bandwidth_GBps"``,
    ``"batch_per_device"``).

    Parameters
    ----------
    obj : Cluster, Workload or another config dataclass
        What to change (it is not modified).
    overrides : mapping of str to value
        Dotted path -> new value, in the TOML files' keys and units.
    where : str, optional
        Name of ``obj`` in messages (default: its kind).

    Returns
    -------
    same type as ``obj``
        The changed copy, validated again.

    Raises
    ------
    ConfigError
        An unknown path (with the valid keys) or a bad value.

    Examples
    --------
    >>> w = apply_overrides(load_workload("resnet50"), {"batch_per_device": 64})
    >>> w.batch_per_device
    64
    """
    where = where or type(obj).__name__.lower()
    return build(type(obj), _nest(overrides), where, base=obj, lookup=_preset)
