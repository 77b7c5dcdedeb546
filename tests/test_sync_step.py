import pytest

from dlscale.validation.sync_step import sleep_s, sync_step


class OneRank:
    """The communicator calls sync_step makes, on one rank, without MPI."""

    def __init__(self):
        self.barriers = 0

    def Barrier(self):
        self.barriers += 1

    def allgather(self, value):
        return [value]

    def Get_size(self):
        return 1


def test_sync_step_times_step_then_barrier_and_subtracts_the_barrier():
    calls = []
    comm = OneRank()
    out = sync_step(comm, lambda: calls.append(1), budget_s=0.01, warmup=3, max_reps=50)
    assert out["ranks"] == 1 and 20 <= out["reps"] <= 50
    assert len(calls) == 2 * 3 + out["reps"]  # two warm-up rounds, then the timed steps
    assert comm.barriers == 2 * 3 + 1 + 2 * out["reps"]  # each step's, one before, the barriers alone
    assert out["compute_s"] == pytest.approx(out["step_s"] - out["barrier_s"])
    assert out["step_s"] > 0 and out["barrier_s"] > 0 and out["sleep_s"] > 0


def test_a_microsecond_sleep_takes_at_least_a_microsecond():
    assert sleep_s(reps=5) >= 1e-6
