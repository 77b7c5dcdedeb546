"""Parts of the training simulation: noise, LR schedules, the shared pipe, the network adapter."""

import numpy as np
import pytest
import simpy

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.training.master import SharedPipe
from dlscale.simulator.training.net import make_training_network
from dlscale.simulator.training.schedules_lr import make_schedule
from dlscale.simulator.training.stragglers import Empirical, make_noise


def test_lognormal_noise_has_mean_one_and_is_seeded():
    n = make_noise("lognormal:0.3")
    a = n.draw(np.random.default_rng(1), (200_000,))
    b = n.draw(np.random.default_rng(1), (200_000,))
    assert np.array_equal(a, b)
    assert a.mean() == pytest.approx(1.0, abs=0.005)
    assert np.log(a).std() == pytest.approx(0.3, abs=0.005)


def test_empirical_noise_from_file(tmp_path):
    f = tmp_path / "steps.txt"
    f.write_text("0.10\n0.12\n0.30\n")
    n = make_noise(f"empirical:{f}")
    draws = n.draw(np.random.default_rng(0), (1000,))
    assert set(np.round(draws, 6)) <= set(np.round(np.array([0.1, 0.12, 0.3]) / (0.52 / 3), 6))
    with pytest.raises(ConfigError, match=r"noise file: .* does not exist"):
        make_noise(f"empirical:{tmp_path / 'missing.txt'}")
    with pytest.raises(ConfigError, match="must hold positive finite step times"):
        Empirical(np.array([1.0, -1.0]))


def test_schedules():
    assert make_schedule("step:2:0.5")(5, 1.0) == 0.25
    cyc = make_schedule("cyclic:10:0.1")
    assert cyc(0, 1.0) == 1.0 and cyc(10, 1.0) == 1.0
    assert cyc(5, 1.0) == pytest.approx(0.55)
    col = make_schedule("collapsed:5")
    assert [k for k in range(20) if col.snapshot(k)] == [4, 9, 14, 19]
    with pytest.raises(ConfigError, match="warmup needs a period"):
        make_schedule("warmup")
    with pytest.raises(ConfigError, match="the period must be an integer >= 1, got '0'"):
        make_schedule("cyclic:0")


def test_shared_pipe_processor_sharing_and_cap():
    env = simpy.Environment()
    pipe = SharedPipe(env, rate=4.0, max_share=1.0)
    done = {}

    def job(name, amount, delay):
        yield env.timeout(delay)
        yield pipe.transfer(amount)
        done[name] = env.now

    for name, amount, delay in [("a", 2.0, 0.0), ("b", 2.0, 0.0), ("c", 1.0, 1.0)]:
        env.process(job(name, amount, delay))
    env.run()
    # capped at 1 per transfer: 4/3 > 1, so the third one does not slow the others
    assert done == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert pipe.served == 3 and pipe.peak == 3
    with pytest.raises(ValueError, match="rate"):
        SharedPipe(env, 0.0)


def test_network_adapter_backends_and_errors():
    c, w = get_cluster("summit"), get_workload("resnet50")
    ana = make_training_network(c, w, 4, "analytical")
    fast = make_training_network(c, w, 4, "fast")
    assert ana.ranks == fast.ranks == 24
    assert fast.allreduce_s(50e6) == pytest.approx(ana.allreduce_s(50e6), rel=0.2)
    assert fast.allreduce_s(50e6) == fast.allreduce_s(50e6) > 0 and len(fast._cache) == 1
    with pytest.raises(ConfigError, match="NetworkModel interface"):
        make_training_network(c, w, 4, object())

    class Partial:
        def allreduce_s(self, n_bytes, ranks, algorithm="ring"):
            return 1.0

        def transfer_s(self, src, dst, n_bytes):
            return 0.5

    with pytest.raises(ConfigError, match=r"max_ranks, allreduce_s, collective_s and "
                                          r"transfer_s .*got Partial"):
        make_training_network(c, w, 4, Partial())

    class Fixed(Partial):
        max_ranks = 24

        def collective_s(self, collective, n_bytes, ranks, algorithm=None):
            return 2.0

    custom = make_training_network(c, w, 4, Fixed())
    assert custom.allreduce_s(1e6) == 1.0 and custom.latency_s() == 0.5
    assert custom.allgather_s(1e6) == 2.0 and custom.reduce_broadcast_s(1e6) == 4.0
    with pytest.raises(ConfigError, match=r"24 ranks .* but the simulated topology has 12"):
        make_training_network(c, w, 4, type("Small", (Fixed,), {"max_ranks": 12})())


def test_perfmodel_analytical_network_plugs_in():
    from dlscale.perfmodel.machine.runtime import with_transport
    from dlscale.perfmodel.network.analytical import AnalyticalNetwork

    c, w = get_cluster("summit"), get_workload("resnet50")
    gamma = 3.0 / c.node.device.training_memory_bandwidth_Bps   # as hockney_params
    # a network object answers as built: from the links the stack's transport delivers
    net = make_training_network(c, w, 4, AnalyticalNetwork(with_transport(c),
                                                           gamma_s_per_B=gamma))
    assert net.name == "AnalyticalNetwork"
    assert net.allreduce_s(50e6) == pytest.approx(
        make_training_network(c, w, 4, "analytical").allreduce_s(50e6), rel=1e-6)


def test_one_rank_per_two_socket_node_uses_one_endpoint_per_node():
    import dataclasses

    c = get_cluster("stampede2-skx")
    w = dataclasses.replace(get_workload("resnet50"), ranks_per_node=1)
    net = make_training_network(c, w, 8, "fast")
    assert net.ranks == 8 and net.sel == list(range(0, 16, 2))
    assert net.allreduce_s(50e6) > 0


def test_training_network_passes_auto_through():
    import dataclasses

    from dlscale.perfmodel.training.sync import workload_allreduce

    c = get_cluster("summit")
    w = dataclasses.replace(get_workload("resnet50"), collective="auto")
    fast = make_training_network(c, w, 4, "fast")
    ana = make_training_network(c, w, 4, "analytical")
    for n in (64.0, 100e6):
        # both backends run the algorithm the analytical tuner picks (as predict does)
        t, names = workload_allreduce(c, w, ana.lay, np.array([n]))
        assert fast.algorithm_for(n) == ana.algorithm_for(n) == names[0]
        assert fast.allreduce_s(n) == fast.sim.allreduce_s(n, fast.sel, str(names[0]))
        assert ana.allreduce_s(n) == float(t[0])
