"""The time budget of ``dlscale calibrate``, kept for the whole command.

``--budget-s S`` covers everything from the command's start (the imports and
``MPI_Init`` included) to the profile written. :class:`StepClock` gives each step its
nominal share of the time *left* when it starts, in proportion to the shares of the
steps still to run (so a step that overran takes its excess from the later ones, not
from the end of the budget), minus a reserve for the fits and the writing; each
microbenchmark sweep stops at the first message size that would end after its step's
deadline (:func:`dlscale.validation.microbench.pingpong`), and :func:`cut_note` says
which sizes were left out. Without a budget to keep (``validate local``'s own
calibration) the shares are of the nominal budget and nothing is cut.

Examples
--------
>>> clock = StepClock(None, 10.0, {"kernels": 0.2, "p2p": 0.8})
>>> clock.step("kernels")
(2.0, None)
>>> cut_note("ping-pong", [1, 16, 4], [1, 2, 4, 8, 16], 30.0)
'ping-pong: 3 of 5 sizes within --budget-s 30; left out 2 between 2 B and 8 B'
"""

from __future__ import annotations

import time

__all__ = ["RESERVE_FRACTION", "StepClock", "cut_note"]

#: Part of the budget kept for the fits, the profile's writing and MPI's shutdown
#: (at least 1 s): on the 2-core development VM these took 0.5-2 s after a 20 s run.
RESERVE_FRACTION = 0.05


class StepClock:
    """Deadlines of the steps of one calibration (module docstring).

    Parameters
    ----------
    left_s : float or None
        Seconds of the budget left (rank 0's figure, the same on every rank); None:
        no budget to keep.
    budget_s : float
        The nominal budget (what the shares are of without ``left_s``).
    shares : dict
        Step name -> nominal share, for the steps that will run.
    """

    def __init__(self, left_s: float | None, budget_s: float, shares: dict[str, float]) -> None:
        self.budget_s = budget_s
        self.shares = dict(shares)
        self.end = None
        if left_s is not None:
            reserve = max(1.0, RESERVE_FRACTION * budget_s)
            self.end = time.monotonic() + max(0.0, left_s - reserve)

    def step(self, name: str) -> tuple[float, float | None]:
        """``(seconds, deadline)`` of step ``name`` (``deadline``: ``time.monotonic()``,
        None without a budget to keep); the step is then off the list."""
        share = self.shares.pop(name)
        if self.end is None:
            return share * self.budget_s, None
        now = time.monotonic()
        seconds = max(0.0, self.end - now) * share / (share + sum(self.shares.values()))
        return seconds, now + seconds


def _size(n: float) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k:.0f} {unit}"
    return f"{n:.0f} B"


def cut_note(what: str, got: list, wanted: list, budget_s: float) -> str | None:
    """The note of a sweep that measured the sizes ``got`` of ``wanted`` (None: all)."""
    missing = sorted(set(wanted) - set(got))
    if not missing:
        return None
    return (f"{what}: {len(set(got))} of {len(set(wanted))} sizes within --budget-s "
            f"{budget_s:g}; left out {len(missing)} between {_size(missing[0])} and "
            f"{_size(missing[-1])}")
