"""Case: Korthikanti et al., "Reducing activation recomputation in large transformer
models", 2022 (arXiv 2205.05198): end-to-end iteration times.

Published numbers: the iteration time of four GPT models (22 B, 175 B, 530 B, 1 T)
with full recomputation and with sequence parallelism plus selective recomputation:
1.42 / 1.10 s, 18.13 / 13.75 s, 49.05 / 37.83 s, 94.42 / 71.49 s; the saving of the
second over the first is the ratio of the two (a restatement, grouped with the
second time). The figures are read as Calculon transcribes them for its own
validation (calculon-ai/calculon, ``calculon/megatron/validation.py``, ``kProfile``:
"These profiled values are reported here: https://arxiv.org/pdf/2205.05198.pdf").

Memory, what can be read of it:

- **the activation-memory saving** of sequence parallelism with selective
  recomputation over the tensor-parallel baseline (no recomputation): "5x", one
  figure for the paper's models (its abstract; read here as a public summary of the
  paper quotes it, "5x reduction in activation memory", the paper's text not being
  readable with this project's tools). Checked on each of the four models' layouts as
  one distinct quantity (one published figure): the activations of the stage that
  needs the most, no recomputation and no sequence parallelism against both;
- **every run fits in the A100's 80 GB** [D]: the paper ran all eight (the times
  above), on 80 GB A100s (Table 3's machine, as Calculon's ``examples/a100.json``);
- **memory per GPU**: no absolute figure is readable. Figures 1 and 7 give memory
  as bars (a share of the 80 GB, a percentage of the baseline), with no printed
  values; Calculon prints its own GiB beside the times (``memory_req``) but checks
  only the times; the Megatron-LM issues found quote other configurations. So the
  model's memory per GPU (in each time row's note) is not checked against a number
  here; the memory model is checked against measured memory per GPU of Megatron-LM's
  own CI runs instead (:mod:`.case_megatron_ci_memory`, whose docstring lists every
  source checked).

Inputs, fixed before any error was looked at:

K1. Models: hidden, layers, heads and sequence 2,048 of the four (Calculon's
    ``examples/{22B,175B,530B,1T}.json``, Korthikanti et al. Table 3): 6,144 / 48 /
    64, 12,288 / 96 / 96, 20,480 / 105 / 128, 25,600 / 128 / 160; vocabulary 51,200
    assumed, as Narayanan et al. SC'21 (same group and code base; the files read
    name none).
K2. Layouts: Calculon's ``validation/{22B,175B,530B,1T}_{full,seqsel}.json``:
    ``t = 8`` everywhere, ``p`` 1, 8, 35, 64 on 8, 64, 280, 512 GPUs (``dp = 1``),
    global batch 4, 64, 280, 512, microbatch 4, 1, 1, 1, interleaving 1, 3, 3, 1;
    full recomputation with allreduces, or sequence parallelism (reduce-scatter +
    all-gather) with selective recomputation; no gradient exchange (``dp = 1``).
    Calculon also repeats the sequence-parallel all-gather in the backward pass
    (``seq_par_ag_redo``); this model does not (Korthikanti Sec. 4.2.2 keeps the
    gathered input only where it is needed; an assumption here).
K3. Machine: the Selene DGX A100 80 GB nodes of :mod:`.megatron_selene` (the same
    group's cluster a year later; assumed).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dlscale.perfmodel.compute.llm_memory import llm_memory
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.validation.banded import llm_iteration
from dlscale.validation.megatron_selene import SELENE
from dlscale.validation.published import CaseOutput, Quantity

__all__ = ["ACTIVATION_SAVING", "CONFIGS", "FIDELITIES", "MISSES", "MISS_ERRORS", "PAPER", "QUANTITIES", "run"]

PAPER = "Korthikanti et al. 2022 (sequence parallelism, selective recomputation)"
FIDELITIES = ("analytical",)
#: The analytical rows carry the printed range (validation/banded.py: the band
#: `predict` prints for each layout).
BANDED = True
#: The prediction path it checks (published.FAMILIES).
FAMILY = "transformer"
_SRC = ("Korthikanti et al. 2022 (arXiv 2205.05198), iteration times as transcribed by "
        "Calculon (calculon/megatron/validation.py)")

#: name -> (hidden, layers, heads, t, p, GPUs, global batch, micro, virtual,
#: published full s, published seq+sel s) (K1, K2).
CONFIGS: dict[str, tuple[int, int, int, int, int, int, int, int, int, float, float]] = {
    "22b": (6144, 48, 64, 8, 1, 8, 4, 4, 1, 1.42, 1.10),
    "175b": (12288, 96, 96, 8, 8, 64, 64, 1, 3, 18.13, 13.75),
    "530b": (20480, 105, 128, 8, 35, 280, 280, 1, 3, 49.05, 37.83),
    "1t": (25600, 128, 160, 8, 64, 512, 512, 1, 1, 94.42, 71.49),
}

#: The abstract's activation-memory saving of sequence parallelism with selective
#: recomputation over tensor parallelism alone (see the module docstring).
ACTIVATION_SAVING = 5.0
_MEM_SRC = ("Korthikanti et al. 2022 (arXiv 2205.05198), abstract: activation memory "
            "reduced 5x (quoted by a public summary of the paper)")

QUANTITIES = (*(
    q for n, c in CONFIGS.items() for q in (
        Quantity(f"time_{n}_full", "time", c[9], "s", _SRC),
        Quantity(f"time_{n}_seqsel", "time", c[10], "s", _SRC),
        Quantity(f"saving_{n}", "speedup", round(c[9] / c[10], 4), "x",
                 _SRC + " [D] full / seq+sel", group=f"time_{n}_seqsel"),
        Quantity(f"activation_saving_{n}", "memory", ACTIVATION_SAVING, "x", _MEM_SRC,
                 group="activation_saving"),
    )), Quantity("every_run_fits", "ordering", "all eight runs fit in 80 GB", "",
                 _SRC + " [D] every run ran, on 80 GB A100s"))

#: Quantity -> diagnosed cause of the miss (every time within 15% since the
#: mechanisms of validation/megatron_mechanisms.md).
MISSES: dict[str, str] = {
    "activation_saving_22b": (
        "the abstract's 5x is one round figure for all four models; Table 2's per-layer "
        "activations, which the model follows, give (10 + 24 / t + 5 a s / (h t)) / "
        "(34 / t) = 6.2 at the 22 B model's a s / h = 21.3 (5.4 for 175 B, 4.9 for 530 B "
        "and 1 T), and the model's whole stage (embedding mask, p microbatches in flight, "
        "the loss layer's 16-bit logits) is within 3% of that ratio; not a defect of the "
        "memory model"),
}

#: Miss key -> the error (relative) it had when its cause was diagnosed.
MISS_ERRORS: dict[str, float | str | None] = {"activation_saving_22b": 0.206}


def _layout(name: str, seqsel: bool) -> ParallelLayout:
    _h, _l, _a, t, p, gpus, batch, micro, v, _f, _s = CONFIGS[name]
    return ParallelLayout(tp=t, pp=p, dp=gpus // (t * p), micro=micro, global_batch=batch,
                          schedule="interleaved" if v > 1 else "1f1b", virtual=v,
                          recompute="selective" if seqsel else "full", sp=seqsel,
                          dp_overlap=False)


def run(fidelity: str = "analytical") -> CaseOutput:
    """Predict the eight iteration times, the four savings, the activation savings
    and the fit verdict (analytical)."""
    pred: dict[str, Any] = {}
    det: dict[str, str] = {}
    fits: list[tuple[float, str]] = []
    for name, c in CONFIGS.items():
        model = TransformerSpec(f"gpt-{name}", hidden=c[0], layers=c[1], heads=c[2], seq=2048,
                                vocab=51200, source=_SRC)
        times = []
        for seqsel, label in ((False, "full"), (True, "seqsel")):
            r = llm_iteration(SELENE, model, _layout(name, seqsel))
            times.append(r.iteration_s)
            fits.append((r.memory.total_B if r.fits else math.inf, f"{name} {label}"))
            pred[f"time_{name}_{label}"] = r.iteration_s
            det[f"time_{name}_{label}"] = (
                f"compute {r.compute_s:.2f}, TP {r.tp_comm_s:.2f}, PP {r.pp_comm_s:.2f}, "
                f"bubble {r.bubble_s:.2f} s; {r.memory.total_B / 1e9:.1f} GB per GPU")
        pred[f"saving_{name}"] = times[0] / times[1]
        _activation_saving(name, model, pred, det)
    worst = max(fits)
    pred["every_run_fits"] = (
        f"{sum(math.isfinite(b) for b, _ in fits)} of {len(fits)} fit (largest "
        f"{worst[0] / 1e9:.1f} GB, {worst[1]})", math.isfinite(worst[0]))
    det["every_run_fits"] = f"capacity {SELENE.node.device.training_memory_bytes / 1e9:.0f} GB"
    return CaseOutput(pred, det)


def _activation_saving(name: str, model: TransformerSpec, pred: dict[str, Any],
                       det: dict[str, str]) -> None:
    """The baseline's activations (tensor parallelism, no recomputation) over those of
    sequence parallelism with selective recomputation, on the same layout."""
    sel = _layout(name, True)
    base = dataclasses.replace(sel, recompute="none", sp=False)
    a, b = llm_memory(model, base), llm_memory(model, sel)
    pred[f"activation_saving_{name}"] = a.activations_B / b.activations_B
    det[f"activation_saving_{name}"] = (
        f"activations {a.activations_B / 1e9:.1f} against {b.activations_B / 1e9:.1f} GB "
        f"per GPU ({a.stage} stage); memory per GPU {a.total_B / 1e9:.1f} against "
        f"{b.total_B / 1e9:.1f} GB")
