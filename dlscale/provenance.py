"""What produced an output: the dlscale version, the machine profile, the efficiency baseline.

Every command's output names where its numbers came from, in one form, made here:
a table's header lines (:meth:`Provenance.header_lines`), the ``provenance`` entry of
a JSON ``meta`` (:meth:`Provenance.meta`), the columns a CSV row carries
(:meth:`Provenance.csv_columns`) and a plot's subtitle (:meth:`Provenance.subtitle`).
:func:`load_cluster` loads a cluster with an optional ``--profile`` and returns the
:class:`Provenance` with it: the profile's path, hosts, ranks, the date it was
measured, and every figure of the cluster it replaced (catalog value -> measured
value), so a result that a profile changed tenfold says so next to the number. A
profile measured on one host (no inter-node figures) applied to a cluster of more
than one node gives a warning (:attr:`Provenance.warnings`): its inter-node fabric
keeps the description's figures while the node's are measured.

Nothing here depends on when the command runs: the same inputs give the same
bytes (the profile's own measurement date is an input).

Examples
--------
>>> p = Provenance(version="0.1.0", baseline="efficiency against one node")
>>> p.header_lines()
['dlscale 0.1.0, no profile (catalog figures)', 'baseline: efficiency against one node']
>>> p.meta()["provenance"]["profile"] is None
True
>>> print(p.subtitle())
dlscale 0.1.0, no profile (catalog figures)
baseline: efficiency against one node
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["NO_BASELINE", "ProfileSource", "Provenance", "baseline_phrase", "load_cluster", "profile_source", "replaced_figures",
           "version"]

#: Fields never listed as replaced: labels, citations, and the MessageFactors' tables
#: (the factors are listed by their name).
_SKIP = frozenset({"name", "source", "min_bytes", "latency", "bandwidth", "fitted_for"})


#: The baseline of an output without an efficiency column.
NO_BASELINE = "none (no efficiency in this output)"

#: Figures whose change reads better as a sentence than as ``old -> new``.
_PHRASES = {"runtime.links_measured False -> True":
            "runtime: no transport efficiency on top of the links (they were measured through "
            "the stack)"}


def baseline_phrase(baseline: str = "node", scaling: str = "weak", each: str = "row") -> str:
    """The rule every ``efficiency`` of an output follows, one phrase: each row (point,
    plan) against 1 node, or 1 device alone, of its cluster running the stack's own
    allreduce (``auto``, :func:`dlscale.perfmodel.training.predict.baseline_workload`). An output
    with one baseline run names it with its time instead
    (:meth:`dlscale.perfmodel.training.predict.Prediction.baseline_text`).

    Examples
    --------
    >>> baseline_phrase("node", each="point")
    "efficiency of each point against 1 node of its cluster running the stack's own allreduce (auto)"
    >>> baseline_phrase("device", "strong")
    "efficiency of each row against 1 device alone running the whole global batch, with the stack's own allreduce (auto)"
    """
    if baseline == "device":
        what = ("1 device alone running the whole global batch, with" if scaling == "strong"
                else "1 device alone (same per-device batch), with")
    else:
        what = "1 node of its cluster running"
    return f"efficiency of each {each} against {what} the stack's own allreduce (auto)"


def version() -> str:
    """This dlscale's version (``dlscale.__version__``)."""
    from dlscale.version import __version__

    return __version__


@dataclass(frozen=True)
class ProfileSource:
    """A machine profile as an output names it.

    Attributes
    ----------
    path : str
        The file as the user gave it.
    hosts : tuple of str
        Hosts the calibration ran on.
    ranks : int or None
        MPI ranks of the calibration run.
    date : str
        When it was measured (the profile's own ``provenance.date``; "" if absent).
    held_out_error : float or None
        Median relative error on held-out cases where the profile records one
        (``provenance.held_out_error``), else None: `dlscale validate local` measures it.
    replaced : tuple of str
        Each figure of the cluster the profile replaced, ``field old -> new``.
    """

    path: str
    hosts: tuple[str, ...] = ()
    ranks: int | None = None
    date: str = ""
    held_out_error: float | None = None
    replaced: tuple[str, ...] = ()
    fitted_from: str = ""

    def describe(self) -> str:
        """One phrase: path, hosts, ranks, date, held-out error (for a profile of
        ``dlscale fit``: what it was fitted to)."""
        if self.fitted_from:
            return f"profile {self.path} (fitted by dlscale fit to {self.fitted_from})"
        n = len(self.hosts)
        where = (f"{n} host{'s' if n != 1 else ''}: {', '.join(self.hosts)}" if n
                 else "hosts not recorded")
        parts = [where + (f", {self.ranks} ranks" if self.ranks else "")]
        parts.append(f"measured {self.date[:10]}" if self.date else "date not recorded")
        parts.append("held-out error not recorded" if self.held_out_error is None
                     else f"held-out error {100 * self.held_out_error:.3g}%")
        return f"profile {self.path} ({'; '.join(parts)})"


@dataclass(frozen=True)
class Provenance:
    """What produced an output (see the module docstring).

    Attributes
    ----------
    version : str
        dlscale's version.
    profile : ProfileSource or None
        The machine profile applied, if any.
    baseline : str
        What efficiency is measured against, one phrase ("" where the output has no
        efficiency); shown as a ``baseline: ...`` header line.
    warnings : tuple of str
        Lines a user must see (a one-host profile on a multi-node cluster).
    """

    version: str = field(default_factory=version)
    profile: ProfileSource | None = None
    baseline: str = ""
    warnings: tuple[str, ...] = ()

    def with_baseline(self, baseline: str) -> Provenance:
        """The same provenance with ``baseline`` set (a leading ``baseline:`` is dropped,
        so a whole header line may be given).

        Examples
        --------
        >>> Provenance(version="1").with_baseline("baseline: 1 node").baseline
        '1 node'
        """
        return dataclasses.replace(self, baseline=baseline.removeprefix("baseline:").strip())

    def source_line(self) -> str:
        """``dlscale VERSION, profile ...`` (or ``no profile (catalog figures)``)."""
        what = self.profile.describe() if self.profile else "no profile (catalog figures)"
        return f"dlscale {self.version}, {what}"

    def header_lines(self, prefix: str = "") -> list[str]:
        """The lines a table's header carries, each starting with ``prefix``."""
        lines = [self.source_line()]
        if self.profile is not None:
            lines.append("profile replaced: " + ("; ".join(self.profile.replaced)
                                                  or "no figure of this cluster"))
        if self.baseline:
            lines.append(f"baseline: {self.baseline}")
        return [prefix + ln for ln in lines]

    def meta(self) -> dict[str, Any]:
        """``{"provenance": {...}}`` to merge into a JSON ``meta``."""
        prof = None
        if self.profile is not None:
            p = self.profile
            prof = {"path": p.path, "hosts": list(p.hosts), "ranks": p.ranks, "date": p.date,
                    "held_out_error": p.held_out_error, "replaced": list(p.replaced)}
        return {"provenance": {"dlscale_version": self.version, "profile": prof,
                               "baseline": self.baseline, "warnings": list(self.warnings)}}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Provenance:
        """The provenance a ``meta`` holds (:meth:`meta`'s inverse); this version and
        no profile where it holds none."""
        d = meta.get("provenance") or {}
        p = d.get("profile")
        src = None if not p else ProfileSource(
            path=p["path"], hosts=tuple(p.get("hosts", ())), ranks=p.get("ranks"),
            date=p.get("date", ""), held_out_error=p.get("held_out_error"),
            replaced=tuple(p.get("replaced", ())))
        return cls(version=d.get("dlscale_version", version()), profile=src,
                   baseline=d.get("baseline", ""), warnings=tuple(d.get("warnings", ())))

    def csv_columns(self) -> dict[str, str]:
        """Columns every CSV row carries: version, profile (path or ``none``), baseline."""
        return {"dlscale_version": self.version,
                "profile": self.profile.path if self.profile else "none",
                "baseline": self.baseline}

    def subtitle(self) -> str:
        """A plot's subtitle: the source line, the baseline and any warning, one per line."""
        lines = [self.source_line(), *([f"baseline: {self.baseline}"] if self.baseline else []),
                 *(f"warning: {w}" for w in self.warnings)]
        return "\n".join(lines)

    def warn(self, stream: Any = None) -> None:
        """Print each warning on ``stream`` (default stderr) as ``warning: ...``."""
        for w in self.warnings:
            print(f"warning: {w}", file=stream or sys.stderr)


def _fmt(name: str, value: Any) -> str:
    """A figure in the units a reader expects (GB/s, us, TFLOPS), else 4 significant figures."""
    if value is None:
        return "none"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if name.endswith("_Bps"):
        return f"{value / 1e9:.4g} GB/s"
    if name.endswith("_s"):
        return f"{value * 1e6:.4g} us"
    if name.endswith("_flops"):
        return f"{value / 1e12:.4g} TFLOPS"
    return f"{value:.4g}" if math.isfinite(value) else str(value)


def replaced_figures(before: Any, after: Any, where: str = "") -> list[str]:
    """Every figure that differs between two descriptions, ``path old -> new``.

    Dataclasses are walked field by field; labels (``name``, ``source``) are not
    figures; a value that is not a dataclass (or one of two is None) is compared
    whole, a message-factor table by its name.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import Link
    >>> replaced_figures(Link("a", 5e10, 2e-6), Link("b", 1.12e10, 2e-6))
    ['bandwidth_Bps 50 GB/s -> 11.2 GB/s']
    """
    if dataclasses.is_dataclass(before) and dataclasses.is_dataclass(after) \
            and type(before) is type(after):
        out = []
        for f in dataclasses.fields(before):
            if f.name in _SKIP:
                continue
            out += replaced_figures(getattr(before, f.name), getattr(after, f.name),
                                    f"{where}.{f.name}" if where else f.name)
        return out
    if before == after:
        return []
    name = where.rsplit(".", 1)[-1]

    def show(v: Any) -> str:
        if name == "fitted":   # Runtime.fitted: (mechanism, value) pairs
            return ", ".join(f"{k} {x:.4g}" for k, x in v) or "none"
        if dataclasses.is_dataclass(v):
            return str(getattr(v, "name", "") or type(v).__name__)
        return _fmt(name, v)

    text = f"{where} {show(before)} -> {show(after)}"
    return [_PHRASES.get(text, text)]


def profile_source(path: str | Path, profile: Any, before: Cluster, after: Cluster) -> ProfileSource:
    """The :class:`ProfileSource` of ``profile`` (a MachineProfile) read from ``path``."""
    prov: Mapping[str, Any] = profile.provenance
    err = prov.get("held_out_error")
    ranks = prov.get("ranks")
    return ProfileSource(
        path=str(path), hosts=tuple(str(h) for h in prov.get("hosts", [])),
        ranks=int(ranks) if isinstance(ranks, int) else None, date=str(prov.get("date", "")),
        held_out_error=float(err) if isinstance(err, (int, float)) else None,
        replaced=tuple(replaced_figures(before, after)),
        fitted_from=_fitted_from(profile))


def _fitted_from(profile: Any) -> str:
    """``"FILE (rows at nodes 1, 2, 4)"`` for a profile of ``dlscale fit`` ("" otherwise)."""
    if not getattr(profile, "fitted", None):
        return ""
    inputs = [str(i).split(" (sha256 ")[0] for i in profile.provenance.get("inputs", [])]
    return ", ".join(inputs) or "inputs not recorded"


def _one_host_warning(src: ProfileSource, profile: Any, cluster: Cluster) -> tuple[str, ...]:
    """A warning when a profile without inter-node figures meets a multi-node cluster."""
    if "inter-node" in profile.p2p or cluster.max_nodes <= 1 or not (profile.p2p or
                                                                     profile.kernels):
        return ()   # (a profile of `dlscale fit` alone measured no figure of a host)
    hosts = ", ".join(src.hosts) or "one host"
    return (f"profile {src.path} was measured on one host ({hosts}); {cluster.name}'s "
            f"{cluster.max_nodes}-node fabric keeps its described inter-node figures",)


def load_cluster(spec: Any, profile: str | Path | None = None) -> tuple[Cluster, Provenance]:
    """A cluster (preset, TOML file or Cluster) with ``profile`` applied, and its provenance.

    Parameters
    ----------
    spec : str, Path or Cluster
        As :func:`dlscale.perfmodel.machine.config.load_cluster` takes it.
    profile : str or Path, optional
        A machine profile from ``dlscale calibrate``.

    Returns
    -------
    (Cluster, Provenance)
        The cluster as every command uses it, and what it is made of.
    """
    from dlscale.perfmodel.machine.config import load_cluster as _load
    from dlscale.perfmodel.machine.profile import load_profile

    base = _load(spec)
    if profile is None:
        return base, Provenance()
    prof = load_profile(profile)
    cluster = _load(base, prof)
    src = profile_source(profile, prof, base, cluster)
    return cluster, Provenance(profile=src, warnings=_one_host_warning(src, prof, cluster))
