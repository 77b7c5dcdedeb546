"""The printed range of a seed case: the whole case rerun at every corner of the band.

``dlscale predict`` prints each answer with a low and a high value, the least and the
greatest over the band's *corners* (:func:`dlscale.perfmodel.training.ranges.corners`:
each a consistent machine and workload with every mechanism's cited range at one
end). A seed case derives its quantities from several predictions (a speed-up is a
ratio of two iterations, a time to train a function of a rate), so its range is taken
the same way, one level up: the case's own ``run`` is repeated with every prediction
it makes taken at one corner, corner by corner, and each quantity's range is the least
and the greatest of its central value and its value at each corner. A case opts in by
making its predictions through this module's :func:`predict` and
:func:`iteration_times`, which are the perfmodel functions of the same names while no
corner is set, so its central answers are unchanged bit for bit.

A transformer case makes its predictions through :func:`llm_iteration`: at a corner
it is the iteration the transformer path's band takes there
(:func:`~dlscale.perfmodel.training.llm_ranges.corner_iteration`, the corners of
:func:`~dlscale.perfmodel.training.llm_ranges.llm_band`, which ``predict`` prints for
a layout), so a quantity read off one iteration gets exactly that band and a ratio of
two is taken corner by corner, both iterations at the same corner.

A corner that a workload's algorithm does not have (``serial`` for a run that does not
overlap, the synchronous corners for EASGD) gives the central answer there, which the
range holds already. Quantities the fidelity cannot predict, orderings and counts get
no range.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> c, w = get_cluster("summit"), get_workload("resnet50")
>>> at_corner(c, w) == (c, w)
True
>>> with corner("slow"):
...     slow = predict(c, w, [1, 64])
>>> central = predict(c, w, [1, 64])
>>> bool(slow.iteration_s[1] > central.iteration_s[1])
True
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> from dlscale.perfmodel.training.parallel import ParallelLayout
>>> pod, gpt = get_cluster("dgx-h100-superpod"), get_llm("gpt-39.1b")
>>> lay = ParallelLayout(tp=8, pp=2, dp=8, global_batch=64)
>>> with corner("slow"):
...     slow_llm = llm_iteration(pod, gpt, lay)
>>> bool(slow_llm.iteration_s > llm_iteration(pod, gpt, lay).iteration_s)
True
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.iteration import iteration_times as _iteration_times
from dlscale.perfmodel.training.llm_ranges import corner_iteration
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import LLMIteration
from dlscale.perfmodel.training.parallel_time import llm_iteration as _llm_iteration
from dlscale.perfmodel.training.predict import Prediction
from dlscale.perfmodel.training.predict import predict as _predict
from dlscale.perfmodel.training.ranges import corners
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.perfmodel.training.workload import Workload

__all__ = ["CORNERS", "at_corner", "case_bands", "corner", "iteration_times", "llm_iteration",
           "predict"]

#: Every corner :func:`~dlscale.perfmodel.training.ranges.corners` may name.
CORNERS = ("fast", "slow", "serial", "exchange-bound", "step-bound")

_CORNER: ContextVar[str | None] = ContextVar("dlscale_band_corner", default=None)


@contextlib.contextmanager
def corner(name: str) -> Iterator[None]:
    """Within the block, :func:`predict` and :func:`iteration_times` answer at corner
    ``name`` (one of :data:`CORNERS`)."""
    if name not in CORNERS:
        raise ValueError(f"corner: {name!r} is not one of {', '.join(CORNERS)}")
    token = _CORNER.set(name)
    try:
        yield
    finally:
        _CORNER.reset(token)


def at_corner(cluster: Cluster, workload: Workload) -> tuple[Cluster, Workload]:
    """``(cluster, workload)`` at the corner set by :func:`corner` (unchanged when none
    is set, or when the workload's algorithm has no such corner)."""
    name = _CORNER.get()
    if name is None:
        return cluster, workload
    for n, c, w in corners(cluster, workload):
        if n == name:
            return c, w
    return cluster, workload


def predict(cluster: Cluster, workload: Workload, nodes: Any,
            baseline: str = "node") -> Prediction:
    """:func:`dlscale.perfmodel.training.predict.predict` at the current corner."""
    c, w = at_corner(cluster, workload)
    return _predict(c, w, nodes, baseline)


def iteration_times(cluster: Cluster, workload: Workload, nodes: Any) -> Any:
    """:func:`dlscale.perfmodel.training.iteration.iteration_times` at the current corner."""
    c, w = at_corner(cluster, workload)
    return _iteration_times(c, w, nodes)


def llm_iteration(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                  ) -> LLMIteration:
    """:func:`dlscale.perfmodel.training.parallel_time.llm_iteration` at the current
    corner: the iteration the transformer path's band takes there
    (:func:`~dlscale.perfmodel.training.llm_ranges.corner_iteration`), the central one
    where none is set or the layout has no such corner.

    Parameters
    ----------
    cluster : Cluster
        The machine at its central values.
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    LLMIteration
        Exactly ``llm_iteration(cluster, model, layout)`` while no corner is set.
    """
    name = _CORNER.get()
    if name is not None:
        at = corner_iteration(cluster, model, layout, name)
        if at is not None:
            return at
    return _llm_iteration(cluster, model, layout)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def case_bands(run: Any, fidelity: str, central: Mapping[str, Any]
               ) -> dict[str, tuple[float, float]]:
    """Low and high of every numeric quantity of a case (see the module docstring).

    Parameters
    ----------
    run : callable
        The case's ``run(fidelity)``, returning a CaseOutput.
    fidelity : str
        The fidelity it runs at.
    central : mapping
        The central ``predicted`` values (quantity name -> value).

    Returns
    -------
    dict
        Quantity name -> ``(low, high)``, for the quantities whose central value is a
        finite number.
    """
    values = {k: [x] for k, v in central.items() if (x := _number(v)) is not None}
    for name in CORNERS:
        with corner(name):
            out = run(fidelity)
        for k, vals in values.items():
            x = _number(out.predicted.get(k))
            if x is not None:
                vals.append(x)
    return {k: (min(v), max(v)) for k, v in values.items()}
