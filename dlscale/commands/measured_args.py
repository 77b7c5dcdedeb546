"""Command-line flags that feed the user's own measurements into predict, simulate and plan.

``--measured-samples-per-s X@B``: one device trains the workload's model at ``X``
samples/s with ``B`` samples per device; ``--trace FILE[@B]``: a PyTorch or TensorFlow
profiler trace (Chrome-trace JSON) taken at batch ``B`` (default: the workload's
batch per device); ``--horovod-timeline FILE``: a Horovod timeline, whose measured
negotiation, collective and exposed time per iteration are printed next to the
prediction. The first two replace the roofline's compute (:mod:`dlscale.perfmodel.compute.measured`);
every file and value is checked before anything runs.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.workload import Workload

__all__ = ["add_measured_args", "apply_measured", "input_file"]


def add_measured_args(p: argparse.ArgumentParser, trace_flag: bool = True) -> None:
    """Add ``--measured-samples-per-s``, ``--trace`` (also ``--measured-trace``; only the
    latter where ``trace_flag`` is false, as on ``simulate``, which refuses ``--trace``:
    it writes the simulator's own trace with ``--trace-out``) and ``--horovod-timeline``
    to ``p``."""
    g = p.add_argument_group("your own measurements (replace the modelled compute)")
    g.add_argument("--measured-samples-per-s", metavar="X@B",
                   help="single-device training throughput you measured: X samples/s at B "
                        "samples per device (e.g. 1075@256)")
    flags = ("--trace", "--measured-trace") if trace_flag else ("--measured-trace",)
    g.add_argument(*flags, dest="measured_trace", metavar="FILE[@B]",
                   help="PyTorch (torch.profiler export_chrome_trace) or TensorFlow profiler "
                        "trace of one device, at batch B (default: the workload's batch per "
                        "device): its forward and backward time per iteration")
    g.add_argument("--horovod-timeline", metavar="FILE[@B]",
                   help="Horovod timeline (HOROVOD_TIMELINE) at batch B: its measured "
                        "negotiation, collective and exposed time per iteration are shown "
                        "with the rows, and when its tensors name the model's layers, the "
                        "times their gradients were ready split the backward pass over the "
                        "layers (which sets the overlap)")


def input_file(flag: str, path: str | Path) -> str:
    """``path`` when it names a readable regular file, else one line naming ``flag``.

    Examples
    --------
    >>> input_file("--rates", "/no/such/rates.csv")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --rates: /no/such/rates.csv: file not found
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{flag}: {path}: file not found")
    if p.is_dir():
        raise ConfigError(f"{flag}: {path}: is a folder, not a file")
    return str(path)


def _trace_spec(text: str, default_batch: int, flag: str = "--trace") -> tuple[str, int]:
    """``FILE[@B]`` as ``(FILE, B)``; a FILE whose own name holds ``@`` is taken whole.

    Examples
    --------
    >>> _trace_spec("t.json@64", 32), _trace_spec("t.json", 32)
    (('t.json', 64), ('t.json', 32))
    >>> _trace_spec("t.json@-1", 32)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --trace: the batch after @ must be a positive integer (FILE@B, e.g. t.json@64), got '-1' in 't.json@-1'
    """
    path, at, batch = text.rpartition("@")
    if not at or Path(text).exists():
        return text, default_batch
    if not (batch.isascii() and batch.isdigit() and int(batch) > 0):
        raise ConfigError(f"{flag}: the batch after @ must be a positive integer (FILE@B, e.g. "
                          f"{path or 'trace.json'}@64), got {batch!r} in {text!r}")
    return path, int(batch)


def apply_measured(args: argparse.Namespace,
                   workload: Workload) -> tuple[Workload, list[str], dict[str, Any]]:
    """``workload`` with the measured compute of ``args`` on its model.

    Returns the workload, lines for the text header and entries for the output meta.
    """
    from dlscale.perfmodel.compute.measured import MeasuredCompute, parse_rate

    rate = getattr(args, "measured_samples_per_s", None)
    trace = getattr(args, "measured_trace", None)
    if rate is not None and trace is not None:
        raise ConfigError("--measured-samples-per-s and --trace: give one of them, not both "
                          "(each sets the compute of one device)")
    lines: list[str] = []
    meta: dict[str, Any] = {}
    measured = None
    if rate is not None:
        measured = parse_rate(rate)
    elif trace is not None:
        from dlscale.perfmodel.compute.traces import check_model, read_trace

        path, batch = _trace_spec(trace, workload.batch_per_device)
        tc = read_trace(input_file("--trace", path), [layer.name for layer in workload.model.layers])
        check_model(tc, workload.model, f"--trace {path}")
        comm = (f"; its communication's {tc.communication_s * 1e3:.3g} ms per iteration "
                f"left out of the compute" if tc.communication_s > 0 else "")
        measured = tc.measured(batch, f"{tc.framework} trace {path}: {tc.iterations} "
                                      f"iteration(s); its optimizer's {tc.optimizer_s * 1e3:.3g} ms "
                                      f"replaced by the model's weight update{comm}")
    if measured is not None:
        workload = dataclasses.replace(
            workload, model=dataclasses.replace(workload.model, measured=measured))
        lines.append(measured.describe())
        meta["measured"] = measured.describe()
    elif workload.model.measured is not None:
        lines.append(workload.model.measured.describe())
        meta["measured"] = workload.model.measured.describe()
    workload = _profile_compute(args, workload, None if measured is None else
                                "--measured-samples-per-s" if rate is not None else "--trace",
                                lines, meta)
    timeline = getattr(args, "horovod_timeline", None)
    if timeline is not None:
        current = workload.model.measured
        timeline, tbatch = _trace_spec(timeline, current.batch if current else
                                       workload.batch_per_device, "--horovod-timeline")
        if current is not None and tbatch != current.batch:
            raise ConfigError(f"--horovod-timeline: batch {tbatch} differs from the measured "
                              f"compute's batch {current.batch}; both must come from one run")
        from dlscale.perfmodel.compute.horovod import read_horovod_timeline

        h = read_horovod_timeline(input_file("--horovod-timeline", timeline))
        ready = h.layer_ready([layer.name for layer in workload.model.layers])
        if len(ready) >= 2:
            measured = (dataclasses.replace(current, backward_ready=ready) if current else
                        MeasuredCompute(batch=tbatch, source=f"Horovod timeline {timeline}",
                                        backward_ready=ready))
            workload = dataclasses.replace(
                workload, model=dataclasses.replace(workload.model, measured=measured))
            if current is None:
                lines.append(measured.describe())
            else:
                lines[-1] = measured.describe()
            meta["measured"] = measured.describe()
        lines.append("measured: " + h.describe())
        meta["horovod_timeline"] = {"file": str(timeline), "ranks": h.ranks,
                                    "iterations": h.iterations, "tensors": h.tensors,
                                    "negotiation_s": h.negotiation_s,
                                    "allreduce_s": h.allreduce_s, "exposed_s": h.exposed_s,
                                    "overlap": h.overlap}
    _check_dispatch(args, workload)
    return workload, lines, meta


def _check_dispatch(args: argparse.Namespace, workload: Workload) -> None:
    """Refuse ``--dispatch-us`` where compute times are measured: the measurement
    already holds the dispatch it paid, and the roofline's dispatch floor is not applied
    to it (:func:`dlscale.perfmodel.compute.roofline.layer_times`), so the flag would be
    read by nothing. A Horovod timeline's readiness alone keeps the model's times, which
    the floor does bound."""
    us = getattr(args, "dispatch_us", None)
    measured = workload.model.measured
    if us is None or measured is None or not measured.holds_times:
        return   # a Horovod timeline's readiness alone: the model's times, floored
    raise ConfigError(f"--dispatch-us {us:g}: the dispatch floor applies to modelled compute; "
                      f"this compute is measured ({measured.source}), which holds the dispatch "
                      f"it paid (drop --dispatch-us, or the measurement)")


def _profile_compute(args: argparse.Namespace, workload: Workload, explicit: str | None,
                     lines: list[str], meta: dict[str, Any]) -> Workload:
    """The single-device rate a ``--profile`` from ``dlscale fit`` fitted, where it applies
    (:func:`dlscale.perfmodel.fitting.fitted_compute.with_fitted_compute`)."""
    profile = getattr(args, "profile", None)
    if profile is None:
        return workload
    from dlscale.perfmodel.fitting.fitted_compute import with_fitted_compute
    from dlscale.perfmodel.machine.profile import load_profile

    before = workload.model.measured
    workload, note = with_fitted_compute(workload, load_profile(profile), Path(profile).name,
                                         explicit)
    if note is not None:
        lines.append(note)
    elif workload.model.measured is not before and workload.model.measured is not None:
        lines.append(workload.model.measured.describe())
        meta["measured"] = workload.model.measured.describe()
    return workload
