"""Subcommands of the dlscale command line, one module each.

:data:`SUMMARIES` holds each subcommand's one-line help, here and not in its module,
so that ``dlscale --help`` lists the subcommands without importing them (the command
line builds the parser of the one subcommand it runs: :func:`dlscale.cli.build_parser`).
"""

#: Subcommand -> its line in ``dlscale --help`` (each module's ``add_parser`` uses it).
SUMMARIES: dict[str, str] = {
    "catalog": "list built-in devices, machines, models, ...",
    "predict": "predict time per iteration and scaling with the analytical model",
    "simulate": "discrete-event simulation: training iterations, or one collective",
    "sweep": "run a what-if study: a grid of configurations, analytical or simulated",
    "plan": "capacity planning: rank cluster/node/algorithm choices that meet a target",
    "calibrate": "measure this machine under MPI and write a machine profile",
    "fit": "fit overlap, slowdown, transport and input pipeline to your own run's rates",
    "validate": "compare the model with measurements",
}
