"""Out-of-sample trial: published scaling results dlscale was never shown.

Runs each case's ``dlscale predict`` command exactly as a user would (a subprocess of
``python -m dlscale predict ... --format json``, from the repository root, on the
TOML files of this folder or catalog presets), reads the prediction from its JSON
and prints the table of published against predicted figures with the signed error,
the tolerance and, for every row, where the predicted iteration goes (compute,
communication, exposed communication) and how much time the published figure asks
for on top of the prediction. Nothing is predicted here: every figure in the table
comes from the command shown with it. The published values are below, each with
its source and whether it is stated by the source or derived by arithmetic.

Usage (from the repository root)::

    python validation/holdout/run_holdout.py             # the table, then the commands
    python validation/holdout/run_holdout.py --markdown  # the same as a Markdown table

Tolerances are the seed cases' (``validation/README.md``): efficiency +-5
percentage points, throughput and time +-15%.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = "validation/holdout"
#: ILSVRC-2012 training images (the catalog's ``imagenet-1k`` samples per epoch).
IMAGENET_TRAIN = 1_281_167
EFF_TOL_PP = 5.0
REL_TOL_PCT = 15.0


@dataclass(frozen=True)
class Case:
    """One published figure and the command that predicts it."""

    name: str
    quantity: str
    kind: str                 # "efficiency" | "throughput" | "time"
    published: float
    basis: str                # "stated" | "derived: <arithmetic>"
    source: str
    argv: tuple[str, ...]     # dlscale predict arguments (no --format)
    field: str                # the JSON row field compared
    nodes: int                # the row (node count) compared


HVD = (f"{HERE}/uber-horovod-pascal.toml",)
HVD_FLAGS = ("--batch", "64", "--collective", "ring", "--baseline", "device")
HVD128 = "Horovod docs/benchmarks.md (Oct 2017): 32 servers x 4 Pascal GPUs, 25 Gbit/s RoCE"
HVD512 = "Horovod docs/benchmarks.rst (2018): 128 servers x 4 Pascal GPUs, 25 Gbit/s RoCE"


def _hvd(model: str, nodes: int, eff: float, source: str) -> Case:
    gpus = 4 * nodes
    return Case(f"horovod-{gpus}-{model}", f"{model} scaling efficiency, {gpus} GPUs vs 1",
                "efficiency", eff, "stated", source,
                (*HVD, model, "--nodes", str(nodes), *HVD_FLAGS), "efficiency", nodes)


BIG_BASIN = (f"{HERE}/big-basin-50gbe.toml", "resnet50", "--nodes", "1,32")
MN1 = (f"{HERE}/mn1-p100-fdr.toml", f"{HERE}/resnet50-chainermn.toml", "--nodes", "128")

CASES: tuple[Case, ...] = (
    # Horovod: "Horovod achieves 90% scaling efficiency for both Inception V3 and
    # ResNet-101, and 79% [68% at 512 GPUs] scaling efficiency for VGG-16".
    _hvd("inception-v3", 32, 0.90, HVD128),
    _hvd("resnet101", 32, 0.90, HVD128),
    _hvd("vgg16", 32, 0.79, HVD128),
    _hvd("inception-v3", 128, 0.90, HVD512),
    _hvd("resnet101", 128, 0.90, HVD512),
    _hvd("vgg16", 128, 0.68, HVD512),
    # Goyal et al. 2017 (arXiv 1706.02677), ResNet-50, 32 images per GPU, Caffe2 + Gloo.
    Case("goyal-256-resnet50", "resnet50 scaling efficiency, 256 GPUs vs 8 (1 server)",
         "efficiency", 0.90, "stated (~90%); also 29 h on 8 GPUs vs 1 h on 256: 29/32 = 0.906",
         "Goyal et al. 2017 (~90% from 8 to 256 GPUs, as quoted by secondary summaries; "
         "paper text not opened); 29 h -> 1 h: NVIDIA developer news 'Facebook trains "
         "ImageNet in 1 hour' (Jun 2017)",
         BIG_BASIN, "efficiency", 32),
    Case("goyal-8-resnet50-rate", "resnet50 images/s, 8 GPUs (90 epochs in 29 h)",
         "throughput", 90 * IMAGENET_TRAIN / (29 * 3600),
         "derived: 90 x 1,281,167 / (29 x 3600 s)",
         "29 hours on 8 GPUs: NVIDIA developer news (Jun 2017), Goyal et al. 2017",
         BIG_BASIN, "samples_per_s", 1),
    Case("goyal-backward-p100", "backward pass, one P100, 32 images",
         "time", 0.120, "stated (120 ms)",
         "Goyal et al. 2017, the paper's bandwidth estimate, as summarised by ai-papers.xuzou.cn "
         "(imagenet_one_hour_2017); paper text not opened",
         BIG_BASIN, "backward_s", 1),
    # Akiba, Suzuki, Fukuda 2017 (arXiv 1711.04325): 90 epochs in 15 minutes, 1,024 P100.
    Case("akiba-1024-resnet50-rate", "resnet50 images/s, 1,024 P100 (90 epochs in 15 min)",
         "throughput", 90 * IMAGENET_TRAIN / (15 * 60),
         "derived: 90 x 1,281,167 / 900 s (the whole run's wall time)",
         "Akiba et al. 2017 abstract; MN-1: PFN blog (Nov 2017)", MN1, "samples_per_s", 128),
    # You, Zhang, Hsieh, Demmel, Keutzer, ICPP 2018 (arXiv 1709.05011, final version).
    Case("you-2048knl-resnet50-rate", "resnet50 images/s, 2,048 KNL 7250 (90 epochs in 20 min)",
         "throughput", 90 * IMAGENET_TRAIN / (20 * 60),
         "derived: 90 x 1,281,167 / 1200 s (the whole run's wall time)",
         "You et al. ICPP 2018 abstract (doi 10.1145/3225058.3225069)",
         ("stampede2-knl", "resnet50", "--nodes", "2048", "--batch", "16", "--runtime", "mlsl"),
         "samples_per_s", 2048),
)


@dataclass(frozen=True)
class Check:
    """A diagnostic command for a miss: no published value, never counted."""

    name: str
    question: str
    argv: tuple[str, ...]
    field: str
    nodes: int


HVD_VGG_NO_OVERLAP = (*HVD, f"{HERE}/vgg16-no-overlap.toml", "--collective", "ring",
                      "--baseline", "device", "--nodes")
HVD_TCP = (f"{HERE}/uber-horovod-pascal-tcp.toml", "vgg16", *HVD_FLAGS, "--nodes")
KNL = ("stampede2-knl", "resnet50", "--batch", "16", "--runtime", "mlsl", "--nodes")

CHECKS: tuple[Check, ...] = (
    Check("vgg16-128-no-overlap", "VGG-16 efficiency, 128 GPUs, allreduce not overlapped",
          (*HVD_VGG_NO_OVERLAP, "32"), "efficiency", 32),
    Check("vgg16-512-no-overlap", "VGG-16 efficiency, 512 GPUs, allreduce not overlapped",
          (*HVD_VGG_NO_OVERLAP, "128"), "efficiency", 128),
    Check("vgg16-128-tcp", "VGG-16 efficiency, 128 GPUs, over TCP (H3 reversed)",
          (*HVD_TCP, "32"), "efficiency", 32),
    Check("vgg16-512-tcp", "VGG-16 efficiency, 512 GPUs, over TCP (H3 reversed)",
          (*HVD_TCP, "128"), "efficiency", 128),
    Check("vgg16-512-noise", "VGG-16 efficiency, 512 GPUs, 5% lognormal per-rank noise",
          (*HVD, "vgg16", *HVD_FLAGS, "--noise", "lognormal:0.05", "--nodes", "128"),
          "efficiency", 128),
    Check("inception-v3-512-noise", "Inception V3, 512 GPUs, the same 5% noise",
          (*HVD, "inception-v3", *HVD_FLAGS, "--noise", "lognormal:0.05", "--nodes", "128"),
          "efficiency", 128),
    Check("goyal-256-hierarchical", "Big Basin, 256 GPUs, three-phase (hierarchical) allreduce",
          (*BIG_BASIN, "--collective", "hierarchical"), "efficiency", 32),
    Check("akiba-1-node-rate", "MN-1, one node (8 P100): images/s x 128 = perfect scaling",
          (*MN1[:2], "--nodes", "1"), "samples_per_s", 1),
    Check("akiba-catalog-nccl", "MN-1, 1,024 GPUs with the catalog's nccl runtime instead",
          (*MN1, "--runtime", "nccl"), "samples_per_s", 128),
    Check("you-1-knl-rate", "one KNL, batch 16: images/s x 2,048 = perfect scaling",
          (*KNL, "1"), "samples_per_s", 1),
)

def predict_json(argv: tuple[str, ...]) -> dict[str, Any]:
    """Run ``dlscale predict ARGV --format json`` from the repository root.

    Parameters
    ----------
    argv : tuple of str
        The arguments after ``predict``.

    Returns
    -------
    dict
        The command's JSON document (``meta`` and ``rows``).
    """
    cmd = [sys.executable, "-m", "dlscale", "predict", *argv, "--format", "json"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command_line(argv)} exited {done.returncode}: "
                           f"{done.stderr.strip()}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def command_line(argv: tuple[str, ...]) -> str:
    """The command as a user types it (``dlscale predict ...``)."""
    return "dlscale predict " + " ".join(shlex.quote(a) for a in argv)


def error(case: Case, predicted: float) -> tuple[float, str, bool]:
    """Signed error, its unit and whether it is within the seed cases' tolerance."""
    if case.kind == "efficiency":
        err = 100.0 * (predicted - case.published)
        return err, "pp", abs(err) <= EFF_TOL_PP
    err = 100.0 * (predicted - case.published) / case.published
    return err, "%", abs(err) <= REL_TOL_PCT


def gap_s(case: Case, row: dict[str, Any]) -> float:
    """Seconds per iteration the published figure asks for on top of the prediction.

    For an efficiency, the iteration time that the published efficiency implies at
    the same baseline; for a throughput, global batch / published rate; for a time,
    the published time. Positive: the real run was slower than predicted.
    """
    it = float(row["iteration_s"])
    if case.kind == "efficiency":
        return it * (float(row["efficiency"]) / case.published - 1.0)
    if case.kind == "throughput":
        return float(row["global_batch"]) / case.published - it
    return case.published - float(row[case.field])


def evaluate(case: Case, cache: dict[tuple[str, ...], dict[str, Any]]) -> dict[str, Any]:
    """Run (or reuse) the case's command and compare its row with the published value.

    Parameters
    ----------
    case : Case
        The published figure.
    cache : dict
        Documents of commands already run (several figures share one command).

    Returns
    -------
    dict
        The table row: case, quantity, published, predicted, error, unit, within,
        the row's compute/communication split and the gap in seconds per iteration.
    """
    if case.argv not in cache:
        cache[case.argv] = predict_json(case.argv)
    rows = [r for r in cache[case.argv]["rows"] if r["nodes"] == case.nodes]
    if len(rows) != 1:
        raise RuntimeError(f"{case.name}: no row for {case.nodes} nodes")
    row = rows[0]
    predicted = float(row[case.field])
    err, unit, within = error(case, predicted)
    return {"case": case.name, "quantity": case.quantity, "kind": case.kind,
            "published": case.published, "predicted": predicted, "error": err,
            "unit": unit, "within": within, "iteration_s": row["iteration_s"],
            "compute_s": row["compute_s"], "comm_s": row["comm_s"],
            "exposed_comm_s": row["exposed_comm_s"],
            "gap_s": gap_s(case, row), "allreduce": row["allreduce"],
            "command": command_line(case.argv), "basis": case.basis,
            "source": case.source}


def run_all(cases: tuple[Case, ...] = CASES) -> list[dict[str, Any]]:
    """Every case's row, in order (each distinct command runs once).

    Parameters
    ----------
    cases : tuple of Case
        The figures to check (default: all of :data:`CASES`).
    """
    cache: dict[tuple[str, ...], dict[str, Any]] = {}
    return [evaluate(c, cache) for c in cases]


def run_checks(checks: tuple[Check, ...] = CHECKS) -> list[dict[str, Any]]:
    """Each diagnostic command's figure with its row's compute/communication split.

    Parameters
    ----------
    checks : tuple of Check
        The diagnostics (default: all of :data:`CHECKS`).
    """
    out = []
    for check in checks:
        rows = [r for r in predict_json(check.argv)["rows"] if r["nodes"] == check.nodes]
        row = rows[0]
        out.append({"check": check.name, "question": check.question,
                    "field": check.field, "value": float(row[check.field]),
                    "iteration_s": row["iteration_s"], "compute_s": row["compute_s"],
                    "comm_s": row["comm_s"], "exposed_comm_s": row["exposed_comm_s"],
                    "command": command_line(check.argv)})
    return out

def _fmt(value: float, kind: str) -> str:
    if kind == "efficiency":
        return f"{value:.3f}"
    if kind == "time":
        return f"{value * 1e3:.1f} ms"
    return f"{value:,.0f}/s"


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """The count within tolerance and the signed bias, one line each.

    Parameters
    ----------
    rows : list of dict
        Rows from :func:`run_all`.
    """
    eff = [r["error"] for r in rows if r["unit"] == "pp"]
    rel = [r["error"] for r in rows if r["unit"] == "%"]
    inside = sum(r["within"] for r in rows)
    lines = [f"within tolerance: {inside} of {len(rows)}"]
    if eff:
        lines.append(f"efficiency bias: mean {sum(eff) / len(eff):+.1f} pp over {len(eff)} "
                     f"rows ({sum(e > 0 for e in eff)} above, {sum(e < 0 for e in eff)} below)")
    if rel:
        lines.append(f"throughput/time bias: mean {sum(rel) / len(rel):+.1f}% over {len(rel)} "
                     f"rows ({sum(e > 0 for e in rel)} above, {sum(e < 0 for e in rel)} below)")
    return lines


def format_rows(rows: list[dict[str, Any]], markdown: bool = False) -> str:
    """The table (plain columns, or Markdown) followed by the summary lines.

    Parameters
    ----------
    rows : list of dict
        Rows from :func:`run_all`.
    markdown : bool
        Write a Markdown table instead of aligned columns.
    """
    head = ["case", "published", "predicted", "error", "tol", "verdict", "compute_s",
            "comm_s", "exposed_s", "gap_s"]
    body = []
    for r in rows:
        tol = f"{EFF_TOL_PP:g} pp" if r["unit"] == "pp" else f"{REL_TOL_PCT:g}%"
        body.append([r["case"], _fmt(r["published"], r["kind"]),
                     _fmt(r["predicted"], r["kind"]), f"{r['error']:+.2f} {r['unit']}", tol,
                     "within" if r["within"] else "MISS", f"{r['compute_s']:.3f}",
                     f"{r['comm_s']:.3f}", f"{r['exposed_comm_s']:.3f}",
                     f"{r['gap_s']:+.3f}"])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                 for line in [head, *body]]
    return "\n".join([*lines, "", *summary(rows)])


def main(argv: list[str] | None = None) -> int:
    """Print the table, the summary, the diagnostic checks and every command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args(argv)
    rows = run_all()
    print(format_rows(rows, markdown=args.markdown))
    print("\ndiagnostic checks (no published value; not counted):")
    for c in run_checks():
        value = (f"{c['value']:.3f}" if c["field"] == "efficiency"
                 else f"{c['value']:,.0f}/s")
        print(f"  {c['check']}: {c['field']} {value} (iteration {c['iteration_s']:.3f} s: "
              f"compute {c['compute_s']:.3f}, comm {c['comm_s']:.3f}, exposed "
              f"{c['exposed_comm_s']:.3f}) -- {c['question']}\n    {c['command']}")
    print("\ncommands:")
    for r in rows:
        print(f"  {r['case']}: {r['command']}")
    return 0 if all(math.isfinite(r["predicted"]) for r in rows) else 1

if __name__ == "__main__":
    raise SystemExit(main())
