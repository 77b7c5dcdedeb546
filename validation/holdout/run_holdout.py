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

TF_SRC = ("TensorFlow r1 guide, performance/benchmarks.md (May 2017), 'Details for NVIDIA "
          "DGX-1 (NVIDIA Tesla P100)', Training synthetic data")
#: model, batch per GPU, images/s on 1 and 8 GPUs, runtime named for the row's
#: variable_update (parameter_server on the CPU: parameter-server, its one server on
#: the node; replicated with NCCL: nccl, NCCL 1's ring).
TF_DGX1 = (("inception-v3", 64, 142.0, 1131.0, "parameter-server"),
           ("resnet50", 64, 219.0, 1734.0, "parameter-server"),
           ("alexnet", 512, 2987.0, 17822.0, "nccl"),
           ("vgg16", 64, 154.0, 1081.0, "nccl"))
# "Training synthetic data" (the page's tables): no input pipeline (--data synthetic).
TF_DGX1_FLAGS = ("--nodes", "1", "--collective", "ring", "--baseline", "device",
                 "--data", "synthetic")
PS = ("--runtime", "parameter-server")


#: The network each DGX-1 row names, where the catalog's model of that name is not the
#: one the benchmark ran: tf_cnn_benchmarks' AlexNet (no LRN, no groups), not Caffe's
#: bvlc_alexnet (the catalog's `alexnet`); see tf-alexnet.toml.
TF_MODEL_FILE = {"alexnet": f"{HERE}/tf-alexnet.toml"}


def _dgx1_argv(model: str, batch: int, runtime: str) -> tuple[str, ...]:
    """The DGX-1 command: NCCL's ring, or parameter servers (no allreduce to name)."""
    flags = TF_DGX1_FLAGS if runtime != "parameter-server" else TF_DGX1_FLAGS[:2] + TF_DGX1_FLAGS[4:]
    return ("dgx1-p100", TF_MODEL_FILE.get(model, model), "--batch", str(batch),
            "--runtime", runtime, *flags)


def _tf_dgx1(model: str, batch: int, r1: float, r8: float, runtime: str) -> Case:
    return Case(f"tf-dgx1-8-{model}", f"{model} scaling efficiency, 8 P100 (DGX-1) vs 1",
                "efficiency", r8 / (8 * r1), f"derived: {r8:g} / (8 x {r1:g})", TF_SRC,
                _dgx1_argv(model, batch, runtime), "efficiency", 1)


def _tf_dgx1_rate(model: str, batch: int, r8: float, runtime: str) -> Case:
    return Case(f"tf-dgx1-8-{model}-rate", f"{model} images/s, 8 P100 (DGX-1)",
                "throughput", r8, f"stated ({r8:g})", TF_SRC,
                _dgx1_argv(model, batch, runtime), "samples_per_s", 1)


TF_K80_SRC = ("TensorFlow r1 guide, performance/benchmarks.md (May 2017), 'Details for Amazon "
              "EC2 Distributed (NVIDIA Tesla K80)', Training synthetic data")
TF_K80_FILE = (f"{HERE}/aws-p2-8xlarge-x8.toml",)
#: distributed_replicated: as many parameter servers as workers, on them, round-robin
TF_K80_ARGS = (*TF_K80_FILE, *PS)
#: model, images/s on 1 GPU, (GPUs, images/s) at 32 and 64 GPUs; batch 64 per GPU.
TF_K80 = (("inception-v3", 29.7, ((32, 902.0), (64, 1783.0))),
          ("resnet50", 52.4, ((32, 1388.0), (64, 2744.0))))


def _tf_k80(model: str, gpus: int, r1: float, rg: float) -> Case:
    nodes = gpus // 8
    return Case(f"tf-k80-{gpus}-{model}", f"{model} scaling efficiency, {gpus} K80 vs 1",
                "efficiency", rg / (gpus * r1), f"derived: {rg:g} / ({gpus} x {r1:g})",
                TF_K80_SRC, (*TF_K80_ARGS, model, "--nodes", str(nodes), "--batch", "64",
                             "--data", "synthetic",
                             "--baseline", "device"), "efficiency", nodes)


DDL = (f"{HERE}/ibm-minsky-s822lc.toml", "resnet50", "--collective", "ring")
DELL_SRC = ("Dell EMC HPC Innovation Lab, 'Deep Learning Performance with P100 GPUs' (Xu, "
            "Dandapanthu, Oct 2016), read through the manualshelf.com copy of the white paper")
# MXNet GoogleNet: "1-16 P100 | 144" with "constant batch size"; D4: MXNet's batch size
# is per worker (one per server) split over its GPUs: 144 / 4 = 36 per GPU.
DELL_MX = (f"{HERE}/dell-c4130-p100-edr.toml", "googlenet", "--batch", "36")
# NV-Caffe GoogleNet: batch 128 on 1 P100, 512 on 4 ("increased the batch size
# proportionally"): 128 per GPU; NV-Caffe's multi-GPU exchange is NCCL (runtime nccl).
DELL_NVCAFFE = (f"{HERE}/dell-c4130-p100-edr.toml", "googlenet", "--batch", "128",
                "--runtime", "nccl", "--nodes", "1", "--baseline", "device")

DAINT_SRC = ("Bugliarello, 'Distributed TensorFlow: a performance evaluation' (CSCS "
             "internship report, Sept 2017), its notebook google-benchmarks/Results "
             "(notebook.community): synthetic_daint = [138.23, 264.57, 523.38, 1018.18] "
             "for 1, 2, 4, 8 GPUs")
# P4: batch 64 per GPU (not read; the notebook sets the runs beside Google's DGX-1
# InceptionV3 figures, which used 64) [uncertain]. P5: the report's parameter servers
# as the benchmark page's distributed runs it sets them beside (one per worker node,
# co-located, round-robin: the runtime's defaults; the count was not read) [uncertain].
# "Training: no I/O": synthetic data (--data synthetic).
DAINT = (f"{HERE}/piz-daint-p100.toml", "inception-v3", "--batch", "64", *PS,
         "--data", "synthetic")

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
    # --- added in the second round (sources 5-7; machines described before any run) ---
    # TensorFlow 1.x benchmarks page (tensorflow/docs site/en/r1/guide/performance/
    # benchmarks.md, May 2017), "Details for NVIDIA DGX-1 (NVIDIA Tesla P100)",
    # "Training synthetic data" table: images/s at 1 and 8 GPUs. Efficiency vs 1 GPU.
    *(_tf_dgx1(m, b, r1, r8, rt) for m, b, r1, r8, rt in TF_DGX1),
    *(_tf_dgx1_rate(m, b, r8, rt) for m, b, r1, r8, rt in TF_DGX1 if m != "resnet50"),
    # Same page, "Details for Amazon EC2 Distributed (NVIDIA Tesla K80)", synthetic
    # data: images/s at 1, 32 and 64 GPUs, distributed_replicated (parameter servers).
    *(_tf_k80(m, g, r1, rg) for m, r1, series in TF_K80 for g, rg in series),
    Case("tf-k80-64-inception-v3-rate", "inception-v3 images/s, 64 K80 (8 x p2.8xlarge)",
         "throughput", 1783.0, "stated (1783)", TF_K80_SRC,
         (*TF_K80_ARGS, "inception-v3", "--nodes", "8", "--batch", "64"),
         "samples_per_s", 8),
    # Cho et al. 2017, PowerAI DDL (arXiv 1708.02188): 64 S822LC, 256 P100.
    Case("ddl-256-resnet50-caffe", "resnet50 scaling efficiency, 256 P100 (Caffe + DDL)",
         "efficiency", 0.95, "stated (95%; baseline not read: one server assumed, I4)",
         "IBM DDL: '95 percent scaling efficiency' with Caffe on 256 P100 (secondary: "
         "itnews.com.au and top500.org news of Aug 2017; paper body not read)",
         (*DDL, "--nodes", "64"), "efficiency", 64),
    Case("ddl-256-resnet50-torch-rate", "resnet50 images/s, 256 P100 (Torch + DDL, 90 epochs "
         "in 50 min)", "throughput", 90 * IMAGENET_TRAIN / (50 * 60),
         "derived: 90 x 1,281,167 / 3000 s (the whole run's wall time)",
         "Cho et al. 2017 abstract: 'completed 90 epochs of training on Resnet 50 for 1K "
         "classes in 50 minutes using 64 IBM Power8 S822LC servers (256 GPUs)'",
         (*DDL, "--nodes", "64"), "samples_per_s", 64),
    # Dell EMC HPC Innovation Lab (Xu, Dandapanthu, Oct 2016), C4130 + 4 P100 PCIe.
    Case("dell-4-googlenet-mxnet-rate", "googlenet images/s, 4 P100 (1 server, MXNet)",
         "throughput", 730.0, "stated (Figure 3 data label 730)", DELL_SRC,
         (*DELL_MX, "--nodes", "1,4"), "samples_per_s", 1),
    Case("dell-16-googlenet-mxnet-rate", "googlenet images/s, 16 P100 (4 servers, MXNet)",
         "throughput", 2955.0, "stated (Figure 3 data label 2955)", DELL_SRC,
         (*DELL_MX, "--nodes", "1,4"), "samples_per_s", 4),
    Case("dell-16-googlenet-mxnet", "googlenet scaling efficiency, 16 P100 vs 4 (1 server)",
         "efficiency", 2955.0 / (4 * 730.0), "derived: 2955 / (4 x 730)", DELL_SRC,
         (*DELL_MX, "--nodes", "1,4"), "efficiency", 4),
    Case("dell-4-googlenet-nvcaffe", "googlenet scaling efficiency, 4 P100 vs 1 (NV-Caffe)",
         "efficiency", 3.8 / 4, "stated ('a speedup up to 3.8x'; data labels 1755 / 468 "
         "= 3.75)", DELL_SRC, DELL_NVCAFFE, "efficiency", 1),
    Case("dell-4-googlenet-nvcaffe-rate", "googlenet images/s, 4 P100 (NV-Caffe)",
         "throughput", 1755.0, "stated (Figure 2 data label 1755)", DELL_SRC,
         DELL_NVCAFFE, "samples_per_s", 1),
    # Bugliarello 2017 (CSCS), Piz Daint, one P100 per node, TF parameter servers.
    Case("daint-8-inception-v3", "inception-v3 scaling efficiency, 8 P100 nodes vs 1",
         "efficiency", 1018.18 / (8 * 138.23), "derived: 1018.18 / (8 x 138.23)", DAINT_SRC,
         (*DAINT, "--nodes", "1,8"), "efficiency", 8),
    Case("daint-1-inception-v3-rate", "inception-v3 images/s, 1 P100 (Piz Daint)",
         "throughput", 138.23, "stated (138.23)", DAINT_SRC,
         (*DAINT, "--nodes", "1,8"), "samples_per_s", 1),
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

DGX_NCCL = ("--runtime", "nccl", *TF_DGX1_FLAGS)
CHECKS: tuple[Check, ...] = (
    Check("tf-dgx1-alexnet-no-overlap", "DGX-1 AlexNet, 8 GPUs, allreduce not overlapped",
          ("dgx1-p100", f"{HERE}/alexnet-no-overlap.toml", *DGX_NCCL), "efficiency", 1),
    Check("tf-dgx1-vgg16-no-overlap", "DGX-1 VGG-16, 8 GPUs, allreduce not overlapped",
          ("dgx1-p100", f"{HERE}/vgg16-no-overlap.toml", *DGX_NCCL), "efficiency", 1),
    Check("tf-dgx1-alexnet-1-gpu", "DGX-1 AlexNet, batch 512: predicted images/s x 8 at "
          "perfect scaling (published 1 GPU: 2,987/s)",
          ("dgx1-p100", f"{HERE}/tf-alexnet.toml", "--batch", "512", *DGX_NCCL),
          "samples_per_s", 1),
    Check("tf-k80-64-resnet50-no-overlap", "8 x p2.8xlarge ResNet-50, 64 GPUs, Gloo, no "
          "overlap (one buffer after backward; the runtime before parameter-server)",
          (*TF_K80_FILE, f"{HERE}/resnet50-chainermn.toml", "--batch", "64", "--nodes", "8",
           "--baseline", "device"), "efficiency", 8),
    Check("tf-k80-64-resnet50-greedy", "the same with parameter_server mode's placement "
          "(GreedyLoadBalancingStrategy by bytes)",
          (*TF_K80_ARGS, "resnet50", "--nodes", "8", "--batch", "64", "--baseline", "device",
           "--ps-strategy", "greedy"), "efficiency", 8),
    Check("tf-k80-64-resnet50-ps-no-overlap", "parameter servers, every gradient pushed "
          "after the whole backward pass",
          (*TF_K80_ARGS, f"{HERE}/resnet50-chainermn.toml", "--batch", "64", "--nodes", "8",
           "--baseline", "device"), "efficiency", 8),
    Check("daint-8-one-ps", "Piz Daint, 8 nodes, one parameter server on a node of its own "
          "(P5 reversed: the report's server count was not read)",
          (*DAINT, "--nodes", "1,8", "--ps-servers", "1", "--ps-placement", "separate"),
          "efficiency", 8),
    Check("ddl-1-node-rate", "one S822LC (4 P100): images/s x 64 = perfect scaling",
          (*DDL, "--nodes", "1"), "samples_per_s", 1),
    Check("dell-1-node-googlenet-batch-144", "C4130 GoogleNet, 4 GPUs at 144 per GPU: "
          "images/s / 4 = one GPU at 144 (published 1 GPU at 144: 220/s)",
          (*DELL_MX[:2], "--batch", "144", "--nodes", "1", "--baseline", "device"),
          "samples_per_s", 1),
    Check("dell-4-googlenet-storage-10gbe", "C4130 GoogleNet (MXNet), 4 GPUs, every image "
          "read over NFS on the paper's 10 Gb/s Ethernet port (storage not read in the source; "
          "published 730/s)",
          (f"{HERE}/dell-c4130-storage-10gbe.toml", *DELL_MX[1:], "--nodes", "1"),
          "samples_per_s", 1),

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
    low = float(row.get(f"{case.field}_low", predicted))
    high = float(row.get(f"{case.field}_high", predicted))
    return {"case": case.name, "quantity": case.quantity, "kind": case.kind,
            "published": case.published, "predicted": predicted, "error": err,
            "low": low, "high": high, "in_range": low <= case.published <= high,
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
    lines.append(range_line(rows))
    return lines


def range_line(rows: list[dict[str, Any]]) -> str:
    """How many published figures lie inside the printed range, and how wide it is:
    the median width in points for efficiencies, relative to the central value for
    rates and times.

    Parameters
    ----------
    rows : list of dict
        Rows from :func:`run_all`.
    """
    inside = sum(r["in_range"] for r in rows)
    pp = sorted(100.0 * (r["high"] - r["low"]) for r in rows if r["unit"] == "pp")
    rel = sorted(100.0 * (r["high"] - r["low"]) / r["predicted"] for r in rows
                 if r["unit"] == "%" and r["predicted"] > 0)

    def median(v: list[float]) -> float:
        return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2 if v else float("nan")
    return (f"inside the printed range: {inside} of {len(rows)}; median range width "
            f"{median(pp):.1f} pp (efficiency), {median(rel):.1f}% (rates and times)")


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
