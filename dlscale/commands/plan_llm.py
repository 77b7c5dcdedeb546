"""``dlscale plan TRANSFORMER --cluster C --global-batch B``: search parallel layouts.

The transformer path of ``plan`` (:func:`dlscale.api.plan_layouts`): every layout
``tp x pp x dp x ep x micro x schedule x zero x recompute x sp`` (``ep`` for a
mixture of experts) of the model on each
cluster and node count, memory first, then the time ``predict`` gives; prints the
machines tried (the best layout of each), the chosen machine's Pareto layouts
(throughput against memory per GPU, each with its limiting resource and, as
``predict`` shows it, the band of its tokens per second, TFLOP/s, iteration and days,
``value [low-high]``, ``KEY_low`` / ``KEY_high`` in ``-o``), the best
layout and why it beats the best with another value of each dimension. With
``--tokens-per-day`` (or ``--tokens`` and ``--deadline-h``) it picks the fewest
GPUs that meet the target; without, the highest throughput; ``--plan-on low``
(``high``) judges each machine by the low (high) end of its best layout's band.
Nothing meets: one line saying the closest and why, exit status 1.

Example::

    dlscale plan gpt-1.7b --cluster dgx1-v100 --global-batch 16 --nodes 1
    dlscale plan gpt3-175b --cluster dgx-h100-superpod --global-batch 1536 \\
        --nodes 8-127 --tokens-per-day 2e10
"""

from __future__ import annotations

import argparse
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["LLM_FLAGS", "add_llm_args", "refuse_llm_flags", "run_llm"]

#: dest -> flag of the options only the transformer path reads.
LLM_FLAGS = {"tokens_per_day": "--tokens-per-day", "tokens": "--tokens",
             "search_tp": "--tp", "search_pp": "--pp", "search_micro": "--microbatch",
             "search_zero": "--zero", "search_recompute": "--recompute",
             "search_sp": "--sp", "search_schedule": "--schedule",
             "dp_overlap": "--dp-overlap", "search_ep": "--ep",
             "llm_precision": "--precision"}

#: dest -> (flag, its default) of the data-parallel options the transformer path refuses.
_DP_ONLY: dict[str, tuple[str, Any]] = {
    "epochs": ("--epochs", None), "samples": ("--samples", None),
    "throughput": ("--throughput", None), "min_efficiency": ("--min-efficiency", None),
    "budget_node_hours": ("--budget-node-hours", None), "budget": ("--budget", None),
    "price": ("--price", []), "max_power_kw": ("--max-power-kw", None),
    "algorithms": ("--algorithms", None), "collectives": ("--collectives", None),
    "batch": ("--batch", None), "baseline": ("--baseline", None),
    "rank_by": ("--rank-by", None),
    "runtime": ("--runtime", None), "measured_samples_per_s": ("--measured-samples-per-s", None),
    "measured_trace": ("--trace", None), "horovod_timeline": ("--horovod-timeline", None)}

_LAYOUT_COLUMNS = ("rank", "tp", "pp", "dp", "ep", "micro", "schedule", "virtual", "zero",
                   "recompute", "sp", "tokens_per_s", "tflops_per_gpu", "iteration_s",
                   "memory_GB", "headroom_GB", "days", "limit", "overhead")
_MACHINE_COLUMNS = ("cluster", "nodes", "gpus", "tp", "pp", "dp", "ep", "micro", "schedule",
                    "virtual", "zero", "recompute", "sp", "tokens_per_day", "tflops_per_gpu",
                    "memory_GB", "days", "limit")


def add_llm_args(p: argparse.ArgumentParser) -> None:
    """The transformer path's target and search restrictions."""
    from dlscale.perfmodel.training.parallel import SCHEDULES

    g = p.add_argument_group(
        "transformer layouts (a model of dlscale catalog transformers)",
        "--cluster and --global-batch (sequences per iteration) are needed; --nodes, "
        "--deadline-h, --max-nodes, --top and -o act as for a data-parallel plan")
    g.add_argument("--tokens-per-day", type=float, metavar="X",
                   help="target: the fewest GPUs that train X tokens per day")
    g.add_argument("--tokens", type=float, metavar="T",
                   help="tokens to train: each row says the days; with --deadline-h, the "
                        "time-to-train target")
    g.add_argument("--tp", dest="search_tp", metavar="LIST",
                   help="tensor-parallel sizes to try, e.g. 4,8 (default: every one that "
                        "divides the heads inside a node)")
    g.add_argument("--pp", dest="search_pp", metavar="LIST",
                   help="pipeline stages to try (default: every divisor of the layers)")
    g.add_argument("--microbatch", dest="search_micro", metavar="LIST",
                   help="microbatch sizes to try (default: every divisor of B / dp)")
    g.add_argument("--zero", dest="search_zero", metavar="LIST", help="ZeRO stages to try "
                   "(default 0,1,2,3; 2 and 3 without a pipeline)")
    g.add_argument("--recompute", dest="search_recompute", metavar="LIST",
                   help="recomputation to try (default none,selective,full)")
    g.add_argument("--sp", dest="search_sp", choices=("on", "off"),
                   help="sequence parallelism only on or only off (default: both)")
    g.add_argument("--schedule", dest="search_schedule", metavar="LIST",
                   help=f"pipeline schedules to try, of {', '.join(SCHEDULES)} "
                        f"(default 1f1b,interleaved)")
    g.add_argument("--ep", dest="search_ep", metavar="LIST",
                   help="expert-parallel sizes to try for a mixture of experts, e.g. 1,8 "
                        "(default: every divisor of dp that divides the experts; refused "
                        "for a dense model)")
    g.add_argument("--dp-overlap", choices=("always", "never", "without-pipeline"),
                   help="whether the gradient exchange overlaps the last backward: always "
                        "(default, PyTorch DDP), never, or without-pipeline (Megatron-LM "
                        "2021: its own DDP after a pipeline's flush)")
    g.add_argument("--precision", dest="llm_precision", choices=("fp16", "bf16"),
                   help="mixed precision of every layout: fp16 (default) or bf16, whose "
                        "gradients are fp32 in memory and on the wire (Megatron-LM)")


def refuse_llm_flags(args: argparse.Namespace) -> None:
    """On a layer-by-layer workload, refuse every transformer-only flag in one line."""
    for dest, flag in LLM_FLAGS.items():
        if getattr(args, dest, None) is not None:
            what = ("sets a transformer's mixed precision" if dest == "llm_precision"
                    else "searches a transformer's parallel layouts")
            raise ConfigError(f"{flag}: {what}; workload "
                              f"{args.workload!r} is a layer-by-layer model trained data "
                              f"parallel (dlscale catalog transformers lists the transformers)")


def _refuse_dp_flags(args: argparse.Namespace) -> None:
    for dest, (flag, default) in _DP_ONLY.items():
        if getattr(args, dest, default) != default:
            raise ConfigError(f"{flag}: sets the data-parallel plan; the transformer "
                              f"{args.workload!r} is planned by its parallel layouts "
                              f"(--tokens-per-day, --tokens, --deadline-h)")


def _ints(text: str | None, flag: str) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        out = []
    if not out or any(v < 0 for v in out):
        raise ConfigError(f"{flag}: expected integers separated by commas, got {text!r}")
    return out


def _names(text: str | None, flag: str, valid: tuple[str, ...]) -> list[str] | None:
    if text is None:
        return None
    out = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in out if t not in valid]
    if not out or bad:
        raise ConfigError(f"{flag}: must be some of {', '.join(valid)} separated by commas, "
                          f"got {text!r}")
    return out


def _options(args: argparse.Namespace) -> dict[str, Any]:
    from dlscale.commands.common import parse_nodes
    from dlscale.perfmodel.training.parallel import SCHEDULES
    from dlscale.perfmodel.training.transformer import RECOMPUTE

    if args.global_batch is None:
        raise ConfigError("--global-batch: a transformer plan needs the sequences per "
                          "iteration (a training choice every layout keeps), e.g. 1536")
    if not args.cluster:
        raise ConfigError("--cluster: name the machines to plan a transformer on (one "
                          "search per cluster and node count)")
    tp, pp = _ints(args.search_tp, "--tp"), _ints(args.search_pp, "--pp")
    zero = _ints(args.search_zero, "--zero")
    _check_lists(args, tp, pp, zero)
    return dict(
        global_batch=args.global_batch,
        nodes=parse_nodes(args.nodes) if args.nodes is not None else None,
        tokens_per_day=args.tokens_per_day, tokens=args.tokens,
        deadline_s=args.deadline_h * 3600.0 if args.deadline_h is not None else None,
        max_nodes=args.max_nodes, tp=tp,
        pp=pp, micro=_ints(args.search_micro, "--microbatch"),
        zero=zero,
        recompute=_names(args.search_recompute, "--recompute", RECOMPUTE),
        sp=None if args.search_sp is None else [args.search_sp == "on"],
        schedules=_names(args.search_schedule, "--schedule", SCHEDULES),
        dp_overlap=args.dp_overlap or "always", ep=_ints(args.search_ep, "--ep"),
        plan_on=args.plan_on, precision=args.llm_precision or "fp16")


def _check_lists(args: argparse.Namespace, tp: list[int] | None, pp: list[int] | None,
                 zero: list[int] | None) -> None:
    """Refuse search lists that cannot act together: a schedule with no pipeline tried,
    ZeRO 2 or 3 (which need no pipeline) with only pipelines, sequence parallelism with
    no tensor parallelism (the search would drop every layout, or never read the flag)."""
    if args.search_schedule is not None and pp is not None and set(pp) <= {1}:
        raise ConfigError(f"--schedule {args.search_schedule}: orders a pipeline's "
                          f"microbatches; every --pp tried is 1 (no pipeline), so nothing "
                          f"would read it (add a --pp above 1, or drop --schedule)")
    if zero is not None and pp is not None and min(zero) >= 2 and min(pp) > 1:
        raise ConfigError(f"--zero {args.search_zero}: ZeRO 2 and 3 shard the gradients a "
                          f"pipeline accumulates, so they run only without one; every --pp "
                          f"tried ({args.search_pp}) is a pipeline (add --pp 1, or a "
                          f"--zero of 0 or 1)")
    if args.search_sp == "on" and tp is not None and set(tp) <= {1}:
        raise ConfigError("--sp on: sequence parallelism splits the tensor-parallel group's "
                          "work; every --tp tried is 1 (add a --tp above 1, or drop --sp)")


def run_llm(args: argparse.Namespace) -> int:
    """Search, print the report, write ``-o``; 0 when a layout meets the request, else 1."""
    from dlscale.api import plan_layouts
    from dlscale.commands.noise_arg import with_noise

    _refuse_dp_flags(args)
    if args.top < 0:
        raise ConfigError(f"--top: must be an integer >= 0, got {args.top}")
    options = _options(args)
    res = plan_layouts(args.workload, with_noise(list(args.cluster), args.noise), **options)
    if args.output:
        res.to_json(args.output)
    for line in report(res, args.top, args.output):
        print(line)
    return 0 if res.feasible else 1


def _shown(meta: dict[str, Any]) -> Any:
    """Whether a column is printed: ``days`` with tokens to train, ``ep`` for a
    mixture of experts."""
    return lambda c: ((c != "days" or bool(meta["tokens"]))
                      and (c != "ep" or bool(meta.get("experts"))))


def _banded(row: dict[str, Any], key: str, fmt: str = ".4g") -> str:
    """``value [low-high]`` of a row's ``key`` (the value alone where it has no band).

    Examples
    --------
    >>> _banded({"x": 412.44, "x_low": 374.5, "x_high": 437.4}, "x")
    '412.4 [374.5-437.4]'
    >>> _banded({"x": 2.0}, "x", ".3g")
    '2'
    """
    text = format(row[key], fmt)
    if f"{key}_low" not in row:
        return text
    return f"{text} [{format(row[f'{key}_low'], fmt)}-{format(row[f'{key}_high'], fmt)}]"


def report(res: Any, top: int, output: str | None) -> list[str]:
    """The lines ``plan`` prints for a transformer."""
    from dlscale.output import format_table
    from dlscale.perfmodel.training.layout_search import describe
    from dlscale.perfmodel.training.parallel import ParallelLayout

    m = res.meta
    goal = (f"the fewest GPUs training {m['target_tokens_per_s'] * 86400:.4g} tokens per day"
            if m["target_tokens_per_s"] else "the highest throughput")
    lines = [f"plan for {m['model']}, global batch {m['global_batch']} sequences of "
             f"{m['seq']} tokens: {goal}; {m['tried']} layouts tried on "
             f"{', '.join(m['clusters'])}, {m['fit']} fit"]
    written = [f"written: {output}"] if output else []
    shown = _shown(m)
    cols = [c for c in _MACHINE_COLUMNS if shown(c)]
    if m.get("plan_on", "central") != "central":
        lines.append(f"planned on the {m['plan_on']} end of each machine's band "
                     f"({'pessimistic' if m['plan_on'] == 'low' else 'optimistic'}: its best "
                     f"layout's {m['plan_on']} tokens per second; layouts ranked by the central "
                     f"answer)")
    if len(m["machines"]) > 1:
        lines += ["machines (the best layout of each):", format_table(m["machines"], cols)]
    if m["machines"]:   # where nothing fits at all, the infeasible line says why
        lines += [f"no layout: {ln}" for ln in m["without_layout"]]
    if not res.feasible:
        return [*lines, *(f"infeasible: {ln}" for ln in m["infeasible"]), *written]
    b = m["best"]
    lines.append(f"layouts on {m['cluster']} at {b['nodes']} node{'s' if b['nodes'] != 1 else ''} "
                 f"({m['gpus']} GPUs): the "
                 f"fastest, then each that needs less memory than every faster one")
    cols = [c for c in _LAYOUT_COLUMNS if shown(c)]
    lines.append(format_table(res.rows[:top], cols) if top else "(--top 0: no layouts shown)")
    if len(res.rows) > top:
        lines.append(f"... {len(res.rows) - top} more"
                     + (f" in {output}" if output else " (-o FILE writes them all)"))
    lay = ParallelLayout(tp=b["tp"], pp=b["pp"], dp=b["dp"], micro=b["micro"],
                         global_batch=m["global_batch"], schedule=b["schedule"],
                         virtual=b["virtual"], zero=b["zero"], sp=b["sp"],
                         recompute=b["recompute"], ep=b["ep"], precision=m["precision"])
    days = (f", {_banded(b, 'days', '.3g')} days for {m['tokens']:.4g} tokens"
            if m["tokens"] else "")
    lines.append(f"best: {describe(lay)}: {_banded(b, 'tflops_per_gpu')} TFLOP/s per GPU, "
                 f"{_banded(b, 'tokens_per_day')} tokens per day{days}, "
                 f"{b['memory_GB']:.3g} GB per GPU; limited by {b['limit']}")
    lines += ["why this layout:", *(f"  {ln}" for ln in m["why"])]
    return [*lines, *written]
