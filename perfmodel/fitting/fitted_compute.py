"""The single-device rate ``dlscale fit`` fitted, applied where its profile is used.

A table of absolute rates without a single-device rate makes ``dlscale fit`` fit the
device's own rate too (``fitted.compute`` of the profile it writes). That rate is the
workload's, not the machine's: it applies to the workload it was fitted on, and only
when the user has not measured the compute another way (``--measured-samples-per-s``,
``--trace``), which then wins and is said to. One rule for ``predict``, ``simulate``,
``plan`` and :func:`dlscale.api.predict`.
"""

from __future__ import annotations

import dataclasses
import math

from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.perfmodel.training.workload import Workload

__all__ = ["fitted_rate", "with_fitted_compute"]


def fitted_rate(profile: MachineProfile, where: str = "profile") -> tuple[float, int, str] | None:
    """``(samples_per_s, batch, workload name)`` of the profile's fitted compute, or None.

    Parameters
    ----------
    profile : MachineProfile
        A loaded profile (:func:`dlscale.perfmodel.machine.profile.load_profile`).
    where : str
        How errors name the profile.

    Returns
    -------
    tuple or None
        None when the profile holds no fitted single-device rate.

    Raises
    ------
    ConfigError
        A ``fitted.compute`` entry whose rate or batch is not a positive finite number.

    Examples
    --------
    >>> p = MachineProfile(fitted={"runtime": "nccl", "values": {}, "workload": "resnet50",
    ...                            "compute": {"samples_per_s": 47.25, "batch": 64}})
    >>> fitted_rate(p)
    (47.25, 64, 'resnet50')
    >>> fitted_rate(MachineProfile(fitted={"runtime": "nccl", "values": {}})) is None
    True
    """
    comp = profile.fitted.get("compute") if profile.fitted else None
    if not comp:
        return None
    rate, batch = comp.get("samples_per_s"), comp.get("batch")
    ok_rate = isinstance(rate, (int, float)) and not isinstance(rate, bool) and \
        math.isfinite(rate) and rate > 0
    if not ok_rate or not (isinstance(batch, int) and not isinstance(batch, bool) and batch > 0):
        raise ConfigError(f"{where}.fitted.compute: needs samples_per_s > 0 and a positive "
                          f"integer batch, got {comp!r}")
    return float(rate), int(batch), str(profile.fitted.get("workload", ""))


def with_fitted_compute(workload: Workload, profile: MachineProfile, name: str,
                        explicit: str | None = None) -> tuple[Workload, str | None]:
    """``workload`` with the profile's fitted compute, and the line that says what happened.

    Parameters
    ----------
    workload : Workload
        The workload asked about.
    profile : MachineProfile
        The profile given with ``--profile`` (or ``profile=``).
    name : str
        The profile's file name, for the lines.
    explicit : str, optional
        The flag that measured the compute another way (``"--measured-samples-per-s"``,
        ``"--trace"``), if any: the fitted rate is then not applied, and the line says so.

    Returns
    -------
    (Workload, str or None)
        The workload (unchanged where nothing applies) and a line for the header, or
        None where the profile holds no fitted compute for this workload.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.config import load_workload
    >>> p = MachineProfile(fitted={"runtime": "nccl", "values": {}, "workload": "resnet50",
    ...                            "compute": {"samples_per_s": 47.25, "batch": 64}})
    >>> w, line = with_fitted_compute(load_workload("resnet50"), p, "fit.json")
    >>> w.model.measured.samples_per_s, w.model.measured.batch
    (47.25, 64)
    >>> with_fitted_compute(load_workload("vgg16"), p, "fit.json")[1] is None
    True
    """
    got = fitted_rate(profile)
    if got is None or got[2] != workload.name:
        return workload, None
    rate, batch, _ = got
    if explicit is not None or workload.model.measured is not None:
        by = explicit or "the workload's own measured compute"
        return workload, (f"note: profile {name}'s fitted compute ({rate:.4g} samples/s at "
                          f"batch {batch}) not applied: {by} sets the compute")
    measured = MeasuredCompute(batch=batch, samples_per_s=rate,
                               source=f"fitted by dlscale fit, profile {name}")
    out = dataclasses.replace(workload, model=dataclasses.replace(workload.model,
                                                                  measured=measured))
    return out, None
