"""Any preset as the TOML that loads back to it (``dlscale catalog show NAME``).

A cluster or a workload is a complete file (``dlscale predict FILE ...`` reads it); a
part (a device, node, link, network, runtime, model, message factors) is the table a
cluster or workload file holds it in (``[node.device]``, ``[runtime]``, ``[model]``,
...), which a file starting from any preset (``base = "summit"``) takes as it is.
Every field is written, resolved (nothing left to a preset name), in SI units
(:mod:`dlscale.perfmodel.machine.tomldump`).

Examples
--------
>>> kind, text = show_preset("ib-edr")
>>> kind
'link'
>>> print(text, end="")  # doctest: +ELLIPSIS
# link preset 'ib-edr': the [network.link] table of a cluster file; a file with ...
[network.link]
name = "ib-edr"
...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlscale.perfmodel.catalog.clusters import CLUSTERS, NETWORKS
from dlscale.perfmodel.catalog.devices import DEVICES
from dlscale.perfmodel.catalog.links import LINKS
from dlscale.perfmodel.catalog.models import MODELS
from dlscale.perfmodel.catalog.nodes import NODES
from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.catalog.workloads import WORKLOADS
from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.tomldump import to_toml
from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS

__all__ = ["PRESET_KINDS", "preset_table", "show_preset"]

#: Kind -> (registry, table it is written as ("" for a whole file), the file it
#: belongs in). A name in several registries is found in this order.
PRESET_KINDS: dict[str, tuple[Mapping[str, Any], str, str]] = {
    "cluster": (CLUSTERS, "", "cluster"),
    "workload": (WORKLOADS, "", "workload"),
    "device": (DEVICES, "node.device", "cluster"),
    "network": (NETWORKS, "network", "cluster"),
    "runtime": (RUNTIMES, "runtime", "cluster"),
    "model": (MODELS, "model", "workload"),
    "node": (NODES, "node", "cluster"),
    "link": (LINKS, "network.link", "cluster"),
    "message-factors": (MESSAGE_FACTORS, "network.message_factors", "cluster"),
}


def preset_table(kind: str) -> str:
    """The table a preset of ``kind`` is written as ("" for a whole file)."""
    return PRESET_KINDS[kind][1]


def _find(name: str, kind: str | None) -> tuple[str, list[str]]:
    """The kind of preset ``name`` (``kind`` if given) and the other kinds it names."""
    if kind is not None:
        if kind not in PRESET_KINDS:
            raise unknown_name("--kind", kind, PRESET_KINDS)
        if name not in PRESET_KINDS[kind][0]:
            raise unknown_name(kind, name, PRESET_KINDS[kind][0])
        return kind, []
    kinds = [k for k, (reg, _, _) in PRESET_KINDS.items() if name in reg]
    if not kinds:
        every = sorted({n for reg, _, _ in PRESET_KINDS.values() for n in reg})
        raise unknown_name("preset", name, every)
    return kinds[0], kinds[1:]


def _unset(obj: Any, path: str) -> list[str]:
    """Dotted names of the fields of ``obj`` (and its parts) that are ``None``."""
    import dataclasses

    out = []
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if value is None:
            out.append(where)
        elif dataclasses.is_dataclass(value):
            out += _unset(value, where)
    return out


def _noise_note(obj: Any, text: str) -> str:
    """``text`` (a whole cluster file) with its ``noise = ""`` line, if any, replaced by
    a comment saying what an empty ``noise`` means: not described, so the cited default
    (:func:`~dlscale.perfmodel.compute.variability.cluster_noise`) applies. A file
    without the key loads back to the same empty ``noise``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("summit")
    >>> print(_noise_note(c, 'name = "summit"\\nnoise = ""\\n'), end="")  # doctest: +ELLIPSIS
    name = "summit"
    # noise: not described, so the default applies: lognormal:0.0148... (the GPUs' cited ...
    """
    if not isinstance(obj, Cluster) or obj.noise:
        return text
    spec = cluster_noise(obj)
    why = ("the GPUs' cited rate spread, Sinha et al. SC'22" if obj.node.device.kind == "gpu"
           else "no spread is cited for this device")
    note = (f"# noise: not described, so the default applies: {spec} ({why}); set noise "
            f"= \"none\", \"lognormal:SIGMA\" or \"empirical:FILE\" to describe it\n")
    return text.replace('\nnoise = ""\n', "\n" + note, 1)


def show_preset(name: str, kind: str | None = None) -> tuple[str, str]:
    """``(kind, TOML)`` of the preset ``name`` (the first kind that has it, or ``kind``).

    Raises
    ------
    ConfigError
        An unknown name or kind (with the valid ones and the closest).
    """
    kind, others = _find(name, kind)
    registry, table, home = PRESET_KINDS[kind]
    if table:
        how = (f"the [{table}] table of a {home} file; a file with `base = \"...\"` (any "
               f"{home} preset) and this table loads it")
    else:
        how = f"a complete {home} file (load it with `dlscale predict` or `base = FILE`)"
    head = f"# {kind} preset {name!r}: {how}\n"
    unset = _unset(registry[name], table)
    if unset and table:
        head += (f"# not set (none): {', '.join(unset)}; over a base that sets them, the "
                 f"base's stay\n")
    if others:
        head += ("# also a " + ", ".join(others) + " preset: "
                 + ", ".join(f"--kind {k}" for k in others) + "\n")
    return kind, head + _noise_note(registry[name], to_toml(registry[name], table))
