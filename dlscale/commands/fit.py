"""``dlscale fit CLUSTER WORKLOAD --rates FILE -o fit.json``: fit a profile to your own run.

Reads a small table of measured rates at a few node counts (CSV or TOML,
:mod:`dlscale.perfmodel.fitting.rates_table`) and/or a Horovod timeline of a
multi-rank run, fits the mechanisms the model has with cited ranges within those
ranges (:mod:`dlscale.perfmodel.fitting.scaling`, through :func:`dlscale.api.fit`),
prints the fitted and held values with the residuals, and writes a profile that
``predict``, ``simulate``, ``sweep`` and ``plan`` apply with ``--profile``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.perfmodel.errors import ConfigError

__all__ = ["add_parser", "report_lines", "run"]


def add_parser(sub: Any) -> None:
    from dlscale.perfmodel.training.predict import BASELINES

    p = sub.add_parser(
        "fit", help=SUMMARIES["fit"],
        description="Fit the overlap achieved, the compute slowdown beside communication, "
                    "the transport efficiency and the input pipeline, each within its cited "
                    "range, to rates you measured at a few node counts and/or a Horovod "
                    "timeline; write them as a profile for --profile.")
    p.add_argument("cluster", help="cluster preset name or TOML file (the machine you ran on)")
    p.add_argument("workload", help="workload preset name or TOML file (what you trained)")
    p.add_argument("--rates", metavar="FILE",
                   help="measured rates: CSV (header nodes,samples_per_s|iteration_s|"
                        "efficiency) or TOML ([[point]] tables, optional [single_device])")
    p.add_argument("--horovod-timeline", metavar="FILE",
                   help="Horovod timeline (HOROVOD_TIMELINE) of a multi-rank run: its "
                        "collective and exposed time per iteration are fitted too")
    p.add_argument("--nodes", metavar="LIST",
                   help="fit only the table's rows at these node counts (e.g. 1,2,4), to "
                        "hold the others out")
    p.add_argument("--measured-samples-per-s", metavar="X@B",
                   help="single-device rate you measured (X samples/s at B per device): "
                        "sets the compute, so the fit is of the scaling alone")
    p.add_argument("--trace", metavar="FILE[@B]",
                   help="PyTorch or TensorFlow profiler trace of one device at batch B: its "
                        "forward and backward time set the compute")
    p.add_argument("--runtime", metavar="NAME", help="the software stack the run used "
                                                     "(default: the cluster's)")
    p.add_argument("--batch", type=int, metavar="N", help="samples per device per iteration")
    p.add_argument("--collective", help="allreduce algorithm the run used (default: the "
                                        "workload's)")
    p.add_argument("--data", choices=("real", "synthetic"),
                   help="real data (decoded on the host cores) or synthetic")
    p.add_argument("--baseline", choices=BASELINES, default=None,
                   help="what the table's efficiencies are against: one node (default) or "
                        "one device alone (only for a table with an efficiency column)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="profile to write (JSON; a regular file there is replaced)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="report as text (default) or the profile's fitted section as JSON")
    p.set_defaults(run=run)


def _workload_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flag, field in (("batch", "batch_per_device"), ("collective", "collective"),
                        ("data", "data")):
        if getattr(args, flag) is not None:
            out[field] = getattr(args, flag)
    return out


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def report_lines(result: Any, args: argparse.Namespace) -> list[str]:
    """The text report: each parameter's range and value, each observation's residual."""
    c, w = result.cluster, result.workload
    lines = [f"fit of {w.name} on {c.name}, runtime {c.runtime.name}: "
             f"{len(result.observations)} observation(s) at nodes "
             f"{', '.join(str(n) for n in sorted({o.nodes for o in result.observations}))}"]
    if w.model.measured is not None:
        lines.append(w.model.measured.describe())
    lines.append(f"{'parameter':<17} {'low':>8} {'central':>8} {'high':>8} {'value':>8}  status")
    for p in result.params:
        value = result.fitted.get(p.name, p.central)
        status = "fitted" if p.name in result.fitted else "held"
        lines.append(f"{p.name:<17} {_fmt(p.low):>8} {_fmt(p.central):>8} {_fmt(p.high):>8} "
                     f"{_fmt(value):>8}  {status}")
    lines.append(f"{'nodes':>5} {'quantity':<15} {'measured':>10}  model error: central   "
                 f"fitted")
    for o, b, r in zip(result.observations, result.before, result.residuals, strict=True):
        lines.append(f"{o.nodes:>5} {o.quantity:<15} {_fmt(o.value):>10} {100 * b:>+21.2f}% "
                     f"{100 * r:>+8.2f}%")
    lines += [f"note: {n}" for n in result.notes]
    use = [f"dlscale predict {args.cluster} {args.workload} --profile {args.output}"]
    for flag in ("runtime", "batch", "collective", "data", "trace"):
        if getattr(args, flag) is not None:
            use.append(f"--{flag} {getattr(args, flag)}")
    m = w.model.measured
    if "compute" in result.fitted:   # in the profile, applied by --profile to this workload
        pass
    elif m is not None and m.samples_per_s > 0 and args.trace is None:
        use.append(f"--measured-samples-per-s {m.samples_per_s:g}@{m.batch}")
    lines.append(f"wrote {args.output}; use it with: {' '.join(use)}")
    return lines


def run(args: argparse.Namespace) -> int:
    from dlscale.api import fit
    from dlscale.commands.measured_args import apply_measured, input_file
    from dlscale.perfmodel.machine.config import apply_overrides, load_workload

    if args.measured_samples_per_s is not None and args.trace is not None:
        raise ConfigError("--measured-samples-per-s and --trace: give one of them (each sets "
                          "the compute of one device)")
    for flag, path in (("--rates", args.rates), ("--horovod-timeline", args.horovod_timeline)):
        if path is not None:
            input_file(flag, path)
    workload = load_workload(args.workload)
    overrides = _workload_overrides(args)
    if overrides:
        workload = apply_overrides(workload, overrides, "command line")
    ns = argparse.Namespace(measured_samples_per_s=args.measured_samples_per_s,
                            measured_trace=args.trace, horovod_timeline=None)
    workload, _, _ = apply_measured(ns, workload)
    if args.nodes is not None and args.rates is None:
        raise ConfigError("--nodes: selects rows of a rates table; give --rates FILE")
    from dlscale.node_counts import parse_nodes

    nodes = parse_nodes(args.nodes) if args.nodes is not None else None
    result = fit(args.cluster, workload, args.rates, nodes=nodes,
                 horovod_timeline=args.horovod_timeline, runtime=args.runtime,
                 baseline=args.baseline, output=args.output)
    if args.format == "json":   # the section the profile holds (-o may be a FIFO)
        print(json.dumps(result.profile.fitted, indent=2))
    else:
        print("\n".join(report_lines(result, args)))
    return 0
