import sys

import pytest

from dlscale.commands.calibrate import parse_sizes, summary_lines
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import load_profile
from dlscale.validation import mpi_env
from dlscale.validation.calibrate_run import p2p_pairs
from dlscale.validation.microbench import collective_elements, message_sizes
from tests.mpi_helpers import mpi_or_skip, run_command


def test_missing_mpi4py_gives_one_line_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import fails like a missing package
    with pytest.raises(mpi_env.MPINotAvailable) as info:
        mpi_env.get_mpi()
    msg = str(info.value)
    assert "\n" not in msg
    assert "install it with `pip install dlscale[mpi]`" in msg


def test_select_algorithm_sets_mpich_and_openmpi_variables():
    env: dict[str, str] = {}
    mpi_env.select_allreduce_algorithm("rabenseifner", environ=env)
    assert env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "reduce_scatter_allgather"
    assert env["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "6"
    assert mpi_env.select_allreduce_algorithm("default", environ=env) == {}
    with pytest.raises(ConfigError, match=r"allreduce_algorithm: unknown name 'rign'.*did you mean 'ring'"):
        mpi_env.select_allreduce_algorithm("rign", environ={})


def test_sizes_and_pairs():
    assert message_sizes(1, 64 << 20)[-1] == 64 << 20 and len(message_sizes(1, 64 << 20)) == 27
    assert parse_sizes(4, 1024, 3) == [4, 32, 256, 1024]
    with pytest.raises(ConfigError, match="sizes: need integers 1 <= min_bytes <= max_bytes"):
        message_sizes(8, 4)
    with pytest.raises(ConfigError, match="--size-step: must be an integer >= 1, got 0"):
        parse_sizes(1, 8, 0)
    assert p2p_pairs({"a": [0], "b": [1, 2]}) == {"intra-node": (1, 2), "inter-node": (0, 1)}
    assert collective_elements("allgather", 4, 4) == 4
    assert collective_elements("allreduce", 1, 4) == 1
    with pytest.raises(ConfigError, match="collective: unknown name 'alltoall'"):
        collective_elements("alltoall", 4, 2)


@pytest.mark.mpi
@pytest.mark.slow
def test_calibrate_quick_on_two_ranks(tmp_path):
    mpi_or_skip()
    out = tmp_path / "profile.json"
    proc = run_command(2, "calibrate", "--quick", "--budget-s", "2", "--max-size", "4096",
                       "--quiet", "-o", str(out), timeout=90)
    assert proc.returncode == 0, proc.stderr
    prof = load_profile(out)
    intra = prof.p2p["intra-node"]
    assert "inter-node" not in prof.p2p
    assert any("inter-node does not exist" in n for n in prof.notes)
    # a 2 s budget (start-up included) keeps what fits: the smallest and largest size
    # always, the others as time allows, each one left out said in a note
    wanted = [4, 16, 64, 256, 1024, 4096]
    assert intra["sizes_bytes"][::len(intra["sizes_bytes"]) - 1] == [4, 4096]
    assert set(intra["sizes_bytes"]) <= set(wanted)
    if intra["sizes_bytes"] != wanted:
        assert any(n.startswith("p2p intra-node ping-pong: ") for n in prof.notes)
    assert 0 < intra["latency_s"] < 1e-2 and intra["bandwidth_Bps"] > 1e5
    assert len(intra["rel_error"]) == len(intra["sizes_bytes"])
    assert prof.provenance["ranks"] == 2 and prof.provenance["mpi_library"].startswith(("MPICH", "Open MPI"))
    run = prof.collectives["allreduce"]["measurements"][0]
    assert run["ranks"] == 2 and 2 <= len(run["times_s"]) <= 6
    assert prof.kernels["model_fwd_bwd_s"] > 0 and "model_fwd_bwd_s" in prof.kernels["noise"]
    ex = intra["easgd_exchange"]  # the Async EASGD exchange, timed directly
    assert ex["ranks"] == [0, 1] and ex["reps"] >= 50
    assert 0 < ex["service_s"] and 0 < ex["exchange_s"] < 1.0
    assert ex["message_bytes"] == 4 * prof.kernels["model"]["n_params"]
    assert any(line.startswith("p2p intra-node: latency") for line in summary_lines(prof))
    assert any(line.startswith("Async EASGD exchange (intra-node, ") for line in summary_lines(prof))
    assert "wrote" in proc.stdout


@pytest.mark.mpi
def test_calibrate_bad_option_is_one_line_error(tmp_path):
    mpi_or_skip()
    proc = run_command(1, "calibrate", "--collectives", "alltoall", "-o", str(tmp_path / "p.json"))
    assert proc.returncode == 2
    assert "--collectives: unknown ['alltoall']" in proc.stderr


def test_allreduce_fit_picks_best_form_or_the_one_chosen():
    import numpy as np

    from dlscale.perfmodel.network.collectives import binomial_tree_allreduce_s
    from dlscale.validation.collective_fit import fit_allreduce, predict_allreduce

    n = 2.0 ** np.arange(10, 24)
    runs = [{"ranks": p, "sizes_bytes": n.tolist(),
             "times_s": binomial_tree_allreduce_s(n, p, 2e-6, 2e-10).tolist()} for p in (2, 3, 4, 8)]
    intra = {"latency_s": 1e-6, "bandwidth_Bps": 1e10}
    fit = fit_allreduce(runs, intra)
    assert fit["algorithm"] == "binomial-tree" and fit["rms_rel_error"] < 1e-9
    assert set(fit["candidates"]) >= {"ring", "rabenseifner", "binomial-tree"}
    assert predict_allreduce(fit, 1 << 20, 16) == pytest.approx(
        binomial_tree_allreduce_s(1 << 20, 16, 2e-6, 2e-10), rel=1e-9)
    forced = fit_allreduce(runs, intra, algorithms=["ring"])
    assert forced["algorithm"] == "ring" and forced["rms_rel_error"] > 0.01
    with pytest.raises(ConfigError, match="algorithm: unknown name 'rign'"):
        fit_allreduce(runs, intra, algorithms=["rign"])
    with pytest.raises(ConfigError, match=r"allreduce\.fit: malformed"):
        predict_allreduce({"algorithm": "ring"}, 1024, 2)


@pytest.mark.mpi
@pytest.mark.slow
def test_one_rank_gives_kernel_figures_only_with_a_warning(tmp_path):
    mpi_or_skip()
    out = tmp_path / "one.json"
    proc = run_command(1, "calibrate", "--budget-s", "1", "-o", str(out), timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "warning: one rank: kernel figures only" in proc.stderr
    prof = load_profile(out)
    assert prof.p2p == {} and prof.collectives == {}
    assert prof.kernels["stream_triad_Bps"] > 0 and prof.kernels["gemm_flops"] > 0
    proc = run_command(1, "validate", "local", "-o", str(tmp_path / "v.json"))
    assert proc.returncode == 2
    assert "validate local: needs at least 2 ranks" in proc.stderr


def test_allreduce_fit_separates_oversubscribed_rank_counts():
    import numpy as np

    from dlscale.perfmodel.network.collectives import ring_allreduce_s
    from dlscale.validation.collective_fit import fit_allreduce, predict_allreduce

    n = 2.0 ** np.arange(10, 20)
    fast = [{"ranks": 2, "sizes_bytes": n.tolist(),
             "times_s": ring_allreduce_s(n, 2, 1e-6, 1e-10).tolist()}]
    slow = [{"ranks": p, "sizes_bytes": n.tolist(),  # scheduler-bound: 1000x the latency
             "times_s": ring_allreduce_s(n, p, 1e-3, 1e-10).tolist()} for p in (3, 4)]
    intra = {"latency_s": 1e-6, "bandwidth_Bps": 1e10}
    fit = fit_allreduce(fast + slow, intra, cores=2)
    assert set(fit["regimes"]) == {"dedicated", "oversubscribed"} and fit["cores"] == 2
    assert predict_allreduce(fit, 4096, 2) == pytest.approx(ring_allreduce_s(4096, 2, 1e-6, 1e-10))
    assert predict_allreduce(fit, 4096, 4) == pytest.approx(ring_allreduce_s(4096, 4, 1e-3, 1e-10))
    # 3 ranks on 2 cores: half-way (one excess rank of two) between the regimes
    half = 0.5 * (ring_allreduce_s(4096, 3, 1e-6, 1e-10) + ring_allreduce_s(4096, 3, 1e-3, 1e-10))
    assert predict_allreduce(fit, 4096, 3) == pytest.approx(half)
    both = predict_allreduce(fit, [4096, 4096], [2, 4])
    np.testing.assert_allclose(both, [predict_allreduce(fit, 4096, 2), predict_allreduce(fit, 4096, 4)])
    assert "regimes" not in fit_allreduce(fast + slow, intra, cores=8)


BUDGET_SCRIPT = """
import json, sys, time
from mpi4py import MPI
from dlscale.validation import microbench as mb
comm = MPI.COMM_WORLD
sizes = mb.message_sizes(1, 1 << 16)
out = {}
for name, fn in (("pingpong", mb.pingpong), ("streaming", mb.streaming),
                 ("exchange", mb.exchange)):
    out[name] = fn(comm, 0, 1, sizes, 0.05, deadline=time.monotonic() - 1)["sizes_bytes"]
out["ring"] = mb.ring_exchange(comm, sizes, 0.05, deadline=time.monotonic() - 1)["sizes_bytes"]
out["allreduce"] = mb.collective(comm, "allreduce", sizes, 0.05,
                                 deadline=time.monotonic() - 1)["sizes_bytes"]
out["free"] = mb.pingpong(comm, 0, 1, sizes, 0.05)["sizes_bytes"]
if comm.Get_rank() == 0:
    print(json.dumps(out))
"""


@pytest.mark.mpi
def test_a_sweep_past_its_deadline_measures_the_ends_of_the_range_only():
    """Issue 26 item 14: sweeps took every size whatever the budget (``--budget-s 60``
    on 2 ranks ran 128 s). Past its deadline a sweep keeps the two sizes every fit needs,
    the smallest and the largest (load-independent: the deadline is already gone)."""
    import json

    from tests.mpi_helpers import run_script

    mpi_or_skip()
    proc = run_script(2, BUDGET_SCRIPT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("pingpong", "streaming", "exchange", "ring"):
        assert got[name] == [1, 1 << 16], (name, got[name])
    assert got["allreduce"] == [4, 1 << 16]
    assert got["free"] == message_sizes(1, 1 << 16)   # no deadline: every size


@pytest.mark.mpi
@pytest.mark.slow
def test_calibrate_keeps_a_small_budget_and_says_what_it_left_out(tmp_path):
    """``--budget-s 1`` (less than the start-up alone takes, on any machine this runs
    on): every sweep is cut to what fits, here its two end sizes, each cut is a note,
    the command's own time is recorded, and a budget it still exceeded is said, not
    hidden. (At 4 s the ping-pong sweep fitted whole on an idle host.)"""
    mpi_or_skip()
    out = tmp_path / "profile.json"
    proc = run_command(2, "calibrate", "--budget-s", "1", "--max-size", str(1 << 20),
                       "--quiet", "-o", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr
    prof = load_profile(out)
    cut = [n for n in prof.notes if "sizes within --budget-s 1; left out" in n]
    assert any(n.startswith("p2p intra-node ping-pong: ") for n in cut), prof.notes
    sizes = prof.p2p["intra-node"]["sizes_bytes"]
    assert (sizes[0], sizes[-1]) == (1, 1 << 20)  # both ends kept
    took = prof.provenance["command_s"]
    assert took <= 1 or any(n.startswith(f"took {took:.1f} s, over --budget-s 1") for n in
                            prof.notes)
