"""Which ``dlscale simulate`` flags act in which mode; the others are refused in one line.

``simulate`` has two modes on one parser: one collective on the routed topology
(``simulate CLUSTER``) and training (``simulate CLUSTER WORKLOAD``). A flag of the
other mode, or one whose setting the run would not read (a co-simulation option
without ``--cosim``, ``--tau`` for algorithms without a communication period), is a
:class:`~dlscale.perfmodel.errors.ConfigError` naming it and why, before any work:
no flag is accepted and ignored. The defaults the parser leaves as ``None`` are
filled in here (:func:`collective_defaults`).
"""

from __future__ import annotations

import argparse

from dlscale.perfmodel.errors import ConfigError

__all__ = ["COLLECTIVE_ONLY", "TRAINING_ONLY", "check_collective_flags", "check_run_flags",
           "check_training_flags", "collective_defaults"]

#: Flags of one collective (``simulate CLUSTER``): dest -> default when not given.
COLLECTIVE_ONLY: dict[str, object] = {
    "ranks": None, "operation": "allreduce", "size_bytes": 100e6, "intranode": "star",
    "gamma": 0.0, "top": 5,
}

#: Flags of training (``simulate CLUSTER WORKLOAD``) that one collective has no use for.
TRAINING_ONLY = ("algorithm", "grouping", "iterations", "noise", "network", "cosim", "compare", "tau",
                 "lr", "lr_schedule", "target_accuracy", "tune", "repeats", "max_sim_time",
                 "eval_every", "hidden", "cosim_model", "plot", "baseline",
                 "measured_samples_per_s", "measured_trace", "horovod_timeline", "runtime",
                 "batch", "precision", "global_batch", "ps_servers", "ps_placement",
                 "ps_strategy", "data", "loader_rate", "dispatch_us")

#: Co-simulation settings: read only with ``--cosim`` or ``--target-accuracy``.
COSIM_ONLY = ("lr", "lr_schedule", "eval_every", "hidden", "cosim_model")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _given(args: argparse.Namespace, dest: str) -> bool:
    value = getattr(args, dest, None)
    return value is not None and value is not False


def collective_defaults(args: argparse.Namespace) -> None:
    """Fill in the collective mode's defaults of the flags left unset."""
    for dest, default in COLLECTIVE_ONLY.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, default)
    if args.mode is None:
        args.mode = "fast"
    if args.placement is None:
        args.placement = "linear"


def check_collective_flags(args: argparse.Namespace) -> None:
    """Refuse the training flags given without a WORKLOAD."""
    for dest in TRAINING_ONLY:
        if _given(args, dest):
            raise ConfigError(f"{_flag(dest)}: a training setting; give a WORKLOAD "
                              f"(simulate CLUSTER WORKLOAD), got only {args.cluster!r}")


def check_training_flags(args: argparse.Namespace) -> None:
    """Refuse the flags a training run would not read (module docstring)."""
    for dest in COLLECTIVE_ONLY:
        if _given(args, dest):
            raise ConfigError(f"{_flag(dest)}: sets the one collective of `simulate "
                              f"CLUSTER`; a training run's messages come from its WORKLOAD")
    if _given(args, "mode") and _given(args, "network"):
        raise ConfigError(f"--mode {args.mode} and --network {args.network}: both name the "
                          f"network of a training run; give --network alone")
    target = _given(args, "target_accuracy")
    if not (args.cosim or target):
        for dest in COSIM_ONLY:
            if _given(args, dest):
                raise ConfigError(f"{_flag(dest)}: a co-simulation setting; add --cosim "
                                  f"(or --target-accuracy)")
    if _given(args, "compare") and _given(args, "algorithm"):
        raise ConfigError("--algorithm and --compare: --compare names the algorithms run; "
                          "give one of them")
    if target and _given(args, "placement"):
        raise ConfigError("--placement: not with --target-accuracy (its runs place ranks "
                          "block-wise); simulate the placement without it")
    if target and _given(args, "baseline"):
        raise ConfigError("--baseline: --target-accuracy reports the time to an accuracy, "
                          "not an efficiency")


def check_run_flags(args: argparse.Namespace, algorithms: list[str], network: str) -> None:
    """Refuse ``--tau`` where no algorithm run has a period, ``--placement`` off a
    simulated network (once the workload's algorithm and the network are known)."""
    from dlscale.commands.predict import check_sync_only, check_tau

    check_sync_only(args, algorithms)
    check_tau(args, algorithms)
    if _given(args, "placement") and args.placement != "linear" and network == "analytical":
        raise ConfigError(f"--placement {args.placement}: places ranks on a simulated "
                          f"network (--network fast or flow); the closed forms "
                          f"(--network analytical) place them block-wise")
