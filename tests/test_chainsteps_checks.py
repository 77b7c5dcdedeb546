"""ChainSteps checks its packed arrays per step (least and greatest of each step)
instead of per message: the same inputs refused with the same message, the same
accepted (issue 27 item 4: the per-message checks were a tenth of a long curve)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.network.chainwalk import ChainSteps


def _bounds(name, a, low, high):
    if a.size and (int(a.min()) < low or int(a.max()) > high):
        raise ValueError(f"{name}: values must be in {low}..{high}, got "
                         f"{int(a.min())}..{int(a.max())}")


def _per_message(steps: ChainSteps) -> None:
    """The checks message by message, as they were."""
    J, S = len(steps.plan_ranks), len(steps.step_cost)
    step_plan = np.repeat(np.arange(J), np.diff(steps.plan_steps))
    msg_step = np.repeat(np.arange(S), np.diff(steps.step_msgs))
    top = steps.plan_ranks[step_plan[msg_step]]
    if ((steps.src < 0) | (steps.dst < 0) | (steps.src >= top) | (steps.dst >= top)).any():
        raise ValueError("src, dst: each rank must be in 0..plan_ranks - 1 of its plan")
    _bounds("step_cost + cls", steps.step_cost[msg_step] + steps.cls, 0, steps.classes - 1)
    two = steps.back >= 0
    _bounds("step_cost + back", steps.step_cost[msg_step[two]] + steps.back[two], 0,
            steps.classes - 1)
    _bounds("back", steps.back, -1, steps.classes - 1)


def _error(build):
    try:
        return build()
    except ValueError as e:
        return str(e)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_per_step_checks_refuse_what_per_message_checks_refuse(data):
    J = data.draw(st.integers(1, 3))
    ranks = np.array(data.draw(st.lists(st.integers(1, 5), min_size=J, max_size=J)))
    per_plan = data.draw(st.lists(st.integers(0, 3), min_size=J, max_size=J))
    S = sum(per_plan)
    counts = data.draw(st.lists(st.integers(0, 4), min_size=S, max_size=S))
    M = sum(counts)
    classes = data.draw(st.integers(1, 8))
    ints = st.integers(-1, 5) if data.draw(st.booleans()) else st.integers(0, 1)
    i64 = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    i32 = lambda v: np.array(v, dtype=np.int32)  # noqa: E731
    src, dst, cls, back = (i32(data.draw(st.lists(ints, min_size=M, max_size=M)))
                           for _ in range(4))
    back = np.maximum(back, -1) if data.draw(st.booleans()) else back
    cost = i64(data.draw(st.lists(st.integers(-1, 6), min_size=S, max_size=S)))
    args = (i64(ranks), np.cumsum([0, *per_plan]), np.cumsum([0, *counts]), cost,
            np.full(S, -1, dtype=np.int64), src, dst, cls, np.zeros(0), classes, back)
    got = _error(lambda: ChainSteps(*args))
    # the reference on the same arrays: a ChainSteps built without its checks
    ref = object.__new__(ChainSteps)
    for nm, v in zip(("plan_ranks", "plan_steps", "step_msgs", "step_cost", "step_recv", "src",
                      "dst", "cls", "recv", "classes", "back"), args, strict=True):
        object.__setattr__(ref, nm, v)
    want = _error(lambda: _per_message(ref))
    if isinstance(got, str) or isinstance(want, str):
        assert got == want
    else:
        assert isinstance(got, ChainSteps) and want is None
