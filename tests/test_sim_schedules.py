"""Collective schedules: who ends up with whose data, and how many bytes move."""

from __future__ import annotations

import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.network.schedules import ALGORITHMS, build_schedule


def knowledge(phases, p, start=None):
    """Which ranks' contributions each rank holds after the phases (whole-vector view)."""
    know = [{r} for r in range(p)] if start is None else start
    for ph in phases:
        for _ in range(ph.repeat):
            new = [set(k) for k in know]
            for s, d in zip(ph.src.tolist(), ph.dst.tolist(), strict=True):
                new[d] |= know[s]
            know = new
    return know


@pytest.mark.parametrize("alg", ["recursive-doubling", "binomial-tree", "double-binary-tree"])
@pytest.mark.parametrize("p", [2, 3, 5, 8, 13])
def test_whole_vector_allreduce_reaches_everyone(alg, p):
    phases = build_schedule("allreduce", alg, p, 1e6, segments=3)
    assert all(k == set(range(p)) for k in knowledge(phases, p))


@pytest.mark.parametrize("p", [2, 3, 6, 8, 11])
def test_ring_and_rabenseifner_bytes(p):
    n = 1e6
    ring = build_schedule("allreduce", "ring", p, n)
    sent = sum(ph.nbytes.sum() * ph.repeat for ph in ring) / p
    assert sent == pytest.approx(2 * (p - 1) / p * n)
    rab = build_schedule("allreduce", "rabenseifner", p, n)
    pp = 1 << (p.bit_length() - 1)
    core = [ph for ph in rab if "halving" in ph.label or "doubling" in ph.label]
    per_core = sum(ph.nbytes.sum() for ph in core) / pp
    assert per_core == pytest.approx(2 * (pp - 1) / pp * n)
    assert all(k == set(range(p)) for k in knowledge(rab, p))


def test_hierarchical_uses_leaders_and_reaches_everyone():
    groups = [np.arange(4) + 4 * g for g in range(3)]
    phases = build_schedule("allreduce", "hierarchical", 12, 1e6, groups=groups,
                            inter_algorithm="recursive-doubling")
    inter = [ph for ph in phases if ph.label.startswith("inter")]
    assert set(np.concatenate([ph.src for ph in inter]).tolist()) <= {0, 4, 8}
    assert all(k == set(range(12)) for k in knowledge(phases, 12))
    with pytest.raises(ConfigError, match="same number of ranks"):
        build_schedule("allreduce", "hierarchical", 5, 1e6, groups=[np.arange(3), np.arange(3, 5)])


def test_other_collectives():
    p = 6
    assert all(k == set(range(p)) for k in knowledge(build_schedule("allgather", "ring", p, 6e6), p))
    bc = knowledge(build_schedule("broadcast", "binomial", p, 1e6), p,
                   start=[{0}] + [set() for _ in range(p - 1)])
    assert all(k == {0} for k in bc)
    red = knowledge(build_schedule("reduce", "binomial", p, 1e6), p)
    assert red[0] == set(range(p))
    ps = build_schedule("parameter-server", "concurrent", p, 1e6)
    assert [ph.label for ph in ps] == ["push", "pull"] and len(ps[0].src) == p - 1
    assert len(build_schedule("parameter-server", "push-pull", p, 1e6)) == 2 * (p - 1)
    assert build_schedule("allreduce", "ring", 1, 1e6) == []


def test_errors_list_valid_names():
    with pytest.raises(ConfigError, match=r"collective: unknown name 'allreduse'.*allreduce"):
        build_schedule("allreduse", "ring", 4, 1.0)
    with pytest.raises(ConfigError, match="broadcast algorithm: unknown name 'ring'"):
        build_schedule("broadcast", "ring", 4, 1.0)
    with pytest.raises(ConfigError, match="ranks: must be a positive integer"):
        build_schedule("allreduce", "ring", 0, 1.0)
    with pytest.raises(ConfigError, match="n_bytes: must be a number >= 0"):
        build_schedule("allreduce", "ring", 4, -1.0)
    assert set(ALGORITHMS) >= {"allreduce", "reduce-scatter", "allgather", "broadcast", "reduce"}


def test_rabenseifner_follows_mpich_step_order():
    """Issue 27.7: MPICH's reduce-scatter starts at distance 1 (mask = 1) with half the
    vector, the allgather runs back from p/2 (allreduce_intra_reduce_scatter_allgather.c);
    dlscale used to start at p/2, which sent the largest halves across a tapered tree."""
    s = build_schedule("allreduce", "rabenseifner", 8, 8e6)
    assert [int(ph.dst[0]) for ph in s] == [1, 2, 4, 4, 2, 1]   # rank 0's partners
    assert [float(ph.nbytes[0]) for ph in s] == [4e6, 2e6, 1e6, 1e6, 2e6, 4e6]
    assert [ph.reduce for ph in s] == [True] * 3 + [False] * 3


def test_rabenseifner_order_on_the_stampede2_tree():
    # 100 MB on 64 Stampede2 KNL nodes: 33.8 ms in the reverse order, 17.3 ms in MPICH's,
    # the same in the closed-form network model (predict) and the simulator
    from dlscale.perfmodel.machine.config import load_cluster
    from dlscale.perfmodel.network.analytical import AnalyticalNetwork
    from dlscale.simulator.network import SimulatedNetwork

    c = load_cluster("stampede2-knl")
    sim = SimulatedNetwork.from_cluster(c, 64).allreduce_s(1e8, 64, "rabenseifner")
    ana = AnalyticalNetwork(c).allreduce_s(1e8, 64, "rabenseifner")
    assert sim == pytest.approx(ana, rel=1e-6)
    assert sim < 0.02


def test_binary_tree_is_ncclgetbtree_at_every_size():
    """The vectorised tree (parent and depth of every rank at once) is the rank-by-rank
    rule of NCCL's ``ncclGetBtree``, including sizes that are not powers of two."""
    from dlscale.perfmodel.network.schedules import _btree

    def by_rank(p):
        parent = np.full(p, -1, dtype=np.int64)
        for r in range(1, p):
            bit = r & -r
            up = (r ^ bit) | (bit << 1)
            parent[r] = up if up < p else r ^ bit
        depth = np.zeros(p, dtype=np.int64)
        for r in range(1, p):
            d, x = 0, r
            while parent[x] >= 0:
                x, d = parent[x], d + 1
            depth[r] = d
        return parent, depth

    for p in [*range(0, 70), 255, 256, 257, 1000, 6144]:
        got, want = _btree(p), by_rank(p)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), p
