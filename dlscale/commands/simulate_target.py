"""Command-line side of ``dlscale simulate ... --cosim --target-accuracy A``.

:func:`check_target_args` rejects bad or inconsistent options in one line before any
work; :func:`run_target` runs :func:`~.training_target.time_to_target` for the
algorithms of ``--compare`` (or ``--algorithm``) and prints the time to target per
algorithm with its median and range over ``--repeats`` seeds, the settings used
(tuned with ``--tune``, else the literature's), the seed paper's orderings where
they hold beyond the spread, and with ``--tune`` the whole search grid. ``--format
json`` prints the report's :meth:`~.training_target.TargetReport.to_dict`, ``-o``
writes the summary rows, ``--plot`` the accuracy curves with the target line and the
crossings.

Examples
--------
>>> import argparse
>>> from dlscale.commands.simulate_training import add_training_args
>>> p = argparse.ArgumentParser()
>>> p.add_argument("cluster"); p.add_argument("workload", nargs="?")  # doctest: +ELLIPSIS
_Store...
>>> add_training_args(p)
>>> args = p.parse_args(["cori-knl", "googlenet", "--nodes", "4", "--algorithm", "async-sgd",
...                      "--target-accuracy", "0.8", "--iterations", "150"])
>>> from dlscale.commands.simulate_training import run_training
>>> run_training(args)  # doctest: +ELLIPSIS
# cori-knl / googlenet, 4 nodes (4 workers): time to 0.8 test accuracy...
0
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dlscale.output import format_table, to_jsonable, write_rows
from dlscale.perfmodel.errors import ConfigError
from dlscale.provenance import NO_BASELINE, Provenance
from dlscale.simulator.training.target import TargetReport, TargetSpec, grid, time_to_target

__all__ = ["check_target_args", "run_target"]

#: Defaults in target mode: cap in steps per worker, evaluation interval.
TARGET_ITERATIONS = 300
TARGET_EVAL_EVERY = 2

_COLS = ("algorithm", "lr", "alpha", "tau", "momentum", "reached", "time_to_target_s",
         "time_min_s", "time_max_s", "samples_to_target", "iterations_to_target", "verdict")
_GRID_COLS = ("algorithm", "lr", "beta", "tau", "momentum", "time_to_target_s",
              "samples_to_target", "best_accuracy", "chosen")


def check_target_args(args: argparse.Namespace, nodes: list[int]) -> bool:
    """Whether target mode is on; raises ConfigError (one line) for bad options."""
    target = getattr(args, "target_accuracy", None)
    if target is None:
        for flag, on in (("--tune", getattr(args, "tune", False)),
                         ("--repeats", getattr(args, "repeats", None) is not None),
                         ("--max-sim-time", getattr(args, "max_sim_time", None) is not None)):
            if on:
                raise ConfigError(f"{flag}: only with --target-accuracy A (time to a target "
                                  "accuracy)")
        return False
    if not 0 < target <= 1:
        raise ConfigError(f"--target-accuracy: must be in (0, 1], got {target!r}")
    if args.repeats is not None and args.repeats < 1:
        raise ConfigError(f"--repeats: must be an integer >= 1, got {args.repeats!r}")
    if args.max_sim_time is not None and not args.max_sim_time > 0:
        raise ConfigError(f"--max-sim-time: must be > 0 seconds, got {args.max_sim_time!r}")
    if len(nodes) != 1:
        raise ConfigError(f"--nodes: --target-accuracy runs one node count, got {args.nodes!r}")
    cap = args.iterations or TARGET_ITERATIONS
    every = getattr(args, "eval_every", None) or TARGET_EVAL_EVERY
    if cap < every:
        raise ConfigError(f"--iterations: a cap of {cap} steps/worker is below the evaluation "
                          f"interval of {every} (--eval-every): no run would be evaluated, so "
                          f"nothing could reach the target or be tuned")
    if getattr(args, "trace_out", None):
        raise ConfigError("--trace-out: not with --target-accuracy (trace one run without it)")
    return True


def _cell(v: Any) -> Any:
    return "-" if v is None else v


def _table(rows: list[dict], cols: tuple[str, ...]) -> str:
    return format_table([{c: _cell(r.get(c)) for c in cols} for r in rows], cols)


def run_target(args: argparse.Namespace, cluster: Any, workload: Any, network: str,
               nodes: int, algs: list[str], cosim: dict, prov: Provenance | None = None) -> int:
    """Time to target of ``algs`` on ``nodes`` nodes (module docstring); 0 on success.

    ``prov`` (default: this version, no profile) is named in the header, the JSON
    ``meta`` and the plot's title."""
    prov = prov or Provenance(baseline=NO_BASELINE)
    from tqdm import tqdm

    from dlscale.perfmodel.training.rank_layout import layout

    fixed: dict = {}
    if args.lr is not None:
        fixed["lr"] = args.lr
    if args.tau is not None:
        fixed["tau"] = int(args.tau)
    spec = TargetSpec(float(args.target_accuracy),
                      max_iterations=args.iterations or TARGET_ITERATIONS,
                      max_sim_time_s=args.max_sim_time or math.inf,
                      eval_every=args.eval_every or TARGET_EVAL_EVERY, network=network,
                      noise=args.noise, cosim={k: v for k, v in cosim.items() if k != "lr"})
    repeats = args.repeats or 1
    ranks = int(layout(cluster, workload, nodes).ranks[0])
    total = len(algs) * repeats + (sum(len(grid(a, ranks, fixed)) for a in algs)
                                   if args.tune else 0)
    from dlscale.commands.simulate_work import check_work

    check_work(cluster, workload, nodes, spec.max_iterations, total,
               "--repeats" if args.repeats else "--iterations", cosim)
    with tqdm(total=total, disable=not sys.stderr.isatty(), file=sys.stderr,
              desc="time to target") as bar:
        rep = time_to_target(cluster, workload, nodes, algs, spec, tune_grid=args.tune,
                             repeats=repeats, seed=args.seed, fixed=fixed,
                             progress=lambda: bar.update(1))
    rows = rep.summary()
    if args.format == "json":
        import json

        doc = {"cluster": cluster.name, "workload": workload.name, "network": network,
               "noise": args.noise, **prov.meta(), **rep.to_dict()}
        sys.stdout.write(json.dumps(to_jsonable(doc), indent=2) + "\n")
    else:
        _print(rep, rows, cluster.name, workload.name, network, args.noise, prov)
    if args.output:
        csv = str(args.output).lower().endswith(".csv")
        write_rows(args.output, [{**r, **prov.csv_columns()} for r in rows] if csv else rows,
                   {"cluster": cluster.name, "workload": workload.name,
                    "target_accuracy": spec.target_accuracy, "seeds": rep.seeds,
                    "tuned": rep.tuned, **prov.meta()})
    if args.plot:
        from dlscale.simulator.training.plots import plot_target

        plot_target(args.plot, rep, f"{workload.name} on {cluster.name}, {nodes} nodes "
                                    "(simulated)", prov.subtitle())
    return 0


def _print(rep: TargetReport, rows: list[dict], cluster: str, workload: str, network: str,
           noise: str, prov: Provenance) -> None:
    s = rep.spec
    seeds = f"seed {rep.seeds[0]}" if len(rep.seeds) == 1 else \
        f"seeds {rep.seeds[0]}-{rep.seeds[-1]}"
    how = "settings tuned on a validation split (search below)" if rep.tuned else \
        "literature default settings (dlscale.simulator.training.target)"
    cap = f"{s.max_iterations} steps/worker" + (
        f" or {s.max_sim_time_s:g} s simulated" if math.isfinite(s.max_sim_time_s) else "")
    print(f"# {cluster} / {workload}, {rep.nodes} nodes ({rep.ranks} workers): time to "
          f"{s.target_accuracy:g} test accuracy; {how}; {len(rep.seeds)} run(s) per "
          f"algorithm ({seeds}); cap {cap}; evaluated every {s.eval_every} steps/worker; "
          f"network {network}, noise {noise}")
    for line in prov.header_lines("# "):
        print(line)
    print(_table(rows, _COLS))
    print("# time_to_target_s: median over the runs (inf: not reached); time_min_s/"
          "time_max_s: their range; crossing = first evaluation at or above the target")
    for line in rep.orderings():
        print(f"# {line}")
    if rep.surrogate:
        print(f"# numerics: {rep.surrogate}")
    for alg, search in rep.searches.items():
        print(f"# search of {alg} (validation split, run seed {rep.seeds[-1] + 1}): "
              f"{len(search.grid)} points, chosen {search.chosen}"
              + ("; the chosen rate is at the edge of the grid" if search.lr_at_edge else ""))
        print(_table([{"algorithm": alg, **g, "chosen": "*" if g["chosen"] else ""}
                      for g in search.grid], _GRID_COLS))
