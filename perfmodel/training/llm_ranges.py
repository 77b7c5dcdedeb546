"""The band of the transformer path: low and high beside the central iteration.

The central answer (:func:`~dlscale.perfmodel.training.parallel_time.llm_iteration`)
is left as it is. The band is what the same model gives over the cited ranges that
act on this path, taken at corners as :mod:`dlscale.perfmodel.training.ranges` takes
them for the data-parallel path, and the low and high of every value are the least
and greatest over the central answer and the corners
(:func:`~dlscale.perfmodel.training.ranges.band_of`), so ``low <= central <= high``:

- **transport** (:data:`~dlscale.perfmodel.machine.runtime.TRANSPORT_EFFICIENCY_RANGE`,
  NCCL's maintainers: 0.96 to 0.976 of a NIC's rate for RDMA): the inter-node links
  as the runtime's transport delivers them
  (:func:`~dlscale.perfmodel.machine.runtime.with_transport`) at the side of the
  corner; the central answer at the cited central, as on the data-parallel path;
- **compute slowed beside communication** (``Runtime.overlap_slowdown``, arXiv
  2507.03114: 0 to 40 % on GPUs, 18.9 % central): the part of the data-parallel
  exchange hidden behind the last microbatch's backward pass (``dp_comm_s -
  dp_exposed_s``) slows that compute by the fraction ``s``, lengthening the iteration
  by ``s`` times it
  (:func:`~dlscale.perfmodel.training.parallel_time.overlap_slowdown_s`, the rule of
  :mod:`dlscale.perfmodel.compute.overlap`), the central answer at the central ``s``.
  The tensor-, pipeline- and expert-parallel communication is not overlapped on this
  path, so nothing else is slowed;
- **device variability** (:data:`~dlscale.perfmodel.compute.variability.DEVICE_SPREAD`,
  Sinha et al. SC'22: no spread to the largest cluster average's 4.08%): each
  corner's cluster noise by
  :func:`~dlscale.perfmodel.compute.variability.cluster_for_band`, as on the
  data-parallel path (a cluster's own noise kept at every corner): the compute
  times the expected slowest GPU's factor at that spread;
- **a GEMM's fixed cost per output tile**
  (:data:`~dlscale.perfmodel.compute.gemm_reduction.REDUCTION_K0`, EleutherAI's
  cookbook: worth 113 to 380 steps of the reduction, A100 only): every product at
  ``K / (K + K0)`` of its rate, rebased to the ceiling's source shape
  (:func:`~dlscale.perfmodel.compute.gemm.reduction_factor`), K0 at the fast
  corner's low end and the slow corner's high end;
- **overlap**: the schedule's (``ParallelLayout.dp_overlap``) at the fast and slow
  corners, none at the **serial** corner (the slow corner with the gradient exchange
  after the pipeline's flush, Megatron's ``local`` DDP of 2021).

The iteration, its TFLOP/s and its tokens per second are then widened by a
measurement's repeatability (:mod:`dlscale.perfmodel.training.repeatability`), as
the data-parallel band's rate and time are: one answer, one rule.

The framework's compute-rate range (:mod:`dlscale.perfmodel.compute.framework`) is
against the rate a device was solved on from a whole network, which this path's
GEMMs do not use (they run at the device's measured matmul ceiling); the sources of
that ceiling on the A100 spread it from 257 to 271.2 of 312 TFLOP/s (the power-capped
run at one shape to a burst search over shapes,
:mod:`dlscale.perfmodel.catalog.devices_2020s`), which is not banded here.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> from dlscale.perfmodel.training.parallel import ParallelLayout
>>> lay = ParallelLayout(tp=8, pp=2, dp=8, global_batch=64)
>>> central, band = llm_band(get_cluster("dgx-h100-superpod"), get_llm("gpt-39.1b"), lay)
>>> low, high = band["iteration_s"]
>>> low <= central.iteration_s <= high
True
>>> [name for name, _c, _l in llm_corners(get_cluster("dgx-h100-superpod"), lay)]
['fast', 'slow', 'serial']
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dlscale.perfmodel.compute import variability
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import LLMIteration, llm_iteration
from dlscale.perfmodel.training.ranges import MECHANISMS, Mechanism, band_of
from dlscale.perfmodel.training.repeatability import widen
from dlscale.perfmodel.training.transformer import TransformerSpec

__all__ = ["GEMM_REDUCTION", "LLM_BAND_KEYS", "LLM_MECHANISMS", "band_row", "corner_iteration", "llm_band",
           "llm_corners"]

#: A GEMM's fixed cost per output tile, worth K0 steps of its reduction: a mechanism of
#: this path only (the data-parallel path does not price GEMMs by shape, so it is not
#: in :data:`~dlscale.perfmodel.training.ranges.MECHANISMS` and that path's corners
#: stay as they were); read by ``parallel_time.gemm_k0`` from the corner's runtime.
GEMM_REDUCTION = Mechanism(
    "gemm-reduction", "low",
    "compute.gemm_reduction.REDUCTION_K0 (reduction steps per output tile, A100 only), "
    "applied by compute.gemm.reduction_factor", "step")

#: The mechanisms that act on the transformer path (see the module docstring): those
#: of :data:`~dlscale.perfmodel.training.ranges.MECHANISMS` named here, and
#: :data:`GEMM_REDUCTION`.
LLM_MECHANISMS = ("transport", "overlap-slowdown", "device-variability", "gemm-reduction")

#: Values of a transformer row that carry ``_low`` / ``_high`` companions
#: (``tokens_per_s``: ``B s`` tokens per iteration, :func:`band_row` adds it).
LLM_BAND_KEYS = ("iteration_s", "tflops_per_gpu", "tokens_per_s", "compute_s", "tp_comm_s",
                 "pp_comm_s", "ep_comm_s", "bubble_s", "dp_exposed_s")


#: The answers a measurement's repeatability widens, as the data-parallel band widens
#: them (:data:`~dlscale.perfmodel.training.repeatability.WIDENED`): the iteration a
#: time, TFLOP/s and tokens per second rates; the parts of the iteration are not
#: measured figures and keep the corners' band.
_MEASURED_AS = {"tflops_per_gpu": "samples_per_s", "tokens_per_s": "samples_per_s"}


def _at(cluster: Cluster, corner: str) -> Cluster:
    """``cluster`` with this path's mechanisms at their ``"fast"`` or ``"slow"`` side."""
    picks = tuple((m.name, m.fast if corner == "fast" else m.slow)
                  for m in (*MECHANISMS, GEMM_REDUCTION) if m.name in LLM_MECHANISMS)
    spread = dict(picks)["device-variability"]
    at = variability.cluster_for_band(cluster, spread)
    return dataclasses.replace(at, runtime=dataclasses.replace(cluster.runtime, sides=picks))


def llm_corners(cluster: Cluster, layout: ParallelLayout,
                ) -> list[tuple[str, Cluster, ParallelLayout]]:
    """The corners the band is taken over (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine at its central values.
    layout : ParallelLayout
        The layout as asked.

    Returns
    -------
    list of (str, Cluster, ParallelLayout)
        ``("fast", ...)``, ``("slow", ...)`` and, where the gradient exchange may
        overlap the backward pass (``dp > 1``, ``dp_overlap``), ``("serial", ...)``.
    """
    slow = _at(cluster, "slow")
    out = [("fast", _at(cluster, "fast"), layout), ("slow", slow, layout)]
    if layout.dp > 1 and layout.dp_overlap:
        out.append(("serial", slow, dataclasses.replace(layout, dp_overlap=False)))
    return out


def _iteration_at(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                  ) -> LLMIteration:
    """The iteration at one corner: its links, its slowdown of the hidden compute."""
    return llm_iteration(cluster, model, layout)   # its sides: links, slowdown, K0


def corner_iteration(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                     corner: str) -> LLMIteration | None:
    """The iteration :func:`llm_band` takes at the corner named ``corner``.

    Parameters
    ----------
    cluster : Cluster
        The machine at its central values.
    model : TransformerSpec
    layout : ParallelLayout
        The layout as asked.
    corner : str
        A corner's name (``"fast"``, ``"slow"``, ``"serial"``).

    Returns
    -------
    LLMIteration or None
        Every value at that corner (its ``iteration_s``, ``compute_s`` and so its
        ``tflops_per_gpu`` are the band's), or None where the layout has no such
        corner (``"serial"`` without an overlapped gradient exchange, a corner of the
        data-parallel path only).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> from dlscale.perfmodel.training.parallel import ParallelLayout
    >>> c, m = get_cluster("dgx-h100-superpod"), get_llm("gpt-39.1b")
    >>> lay = ParallelLayout(tp=8, pp=2, dp=8, global_batch=64)
    >>> slow = corner_iteration(c, m, lay, "slow")
    >>> bool(slow.iteration_s > llm_iteration(c, m, lay).iteration_s)
    True
    >>> corner_iteration(c, m, lay, "step-bound") is None
    True
    """
    for name, c, lay in llm_corners(cluster, layout):
        if name == corner:
            return _iteration_at(c, model, lay)
    return None


def _central(r: LLMIteration, model: TransformerSpec) -> dict[str, float]:
    row = r.to_row()
    row["tokens_per_s"] = r.layout.global_batch * model.seq / r.iteration_s
    return {k: float(row[k]) for k in LLM_BAND_KEYS}


def llm_band(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
             ) -> tuple[LLMIteration, dict[str, tuple[float, float]]]:
    """The central iteration and the (low, high) of every value of :data:`LLM_BAND_KEYS`.

    Parameters
    ----------
    cluster : Cluster
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    (LLMIteration, dict)
        The central answer, exactly :func:`llm_iteration`'s; key -> (low, high).
    """
    central = llm_iteration(cluster, model, layout)
    mid = _central(central, model)
    corners = [_central(_iteration_at(c, model, lay), model)
               for _name, c, lay in llm_corners(cluster, layout)]
    band = {}
    for k in LLM_BAND_KEYS:
        low, high = widen(_MEASURED_AS.get(k, k), *band_of(
            np.array([mid[k]]), [np.array([v[k]]) for v in corners]))
        band[k] = (float(low[0]), float(high[0]))
    return central, band


def band_row(central: LLMIteration, model: TransformerSpec,
             band: dict[str, tuple[float, float]]) -> dict[str, object]:
    """``central``'s row, ``tokens_per_s`` after its TFLOP/s, and ``KEY_low`` and
    ``KEY_high`` after each banded key.

    Parameters
    ----------
    central : LLMIteration
    model : TransformerSpec
        The model it trained (its sequence length).
    band : dict
        From :func:`llm_band`.

    Returns
    -------
    dict
        The row (:meth:`LLMIteration.to_row`), its banded values followed by their band.
    """
    row = central.to_row()
    out: dict[str, object] = {}
    for k in row:
        keys = (k, "tokens_per_s") if k == "tflops_per_gpu" else (k,)
        for key in keys:
            out[key] = row[key] if key in row else _central(central, model)[key]
            if key in band:
                out[f"{key}_low"], out[f"{key}_high"] = band[key]
    return out
