"""A step's cost classes by hashing (the compiled pass) and by one lexsort, against
``np.unique(axis=0)``; the exchanges of a step folded without a sort, against the
pairs looked up one by one. Same arrays, bit for bit (issue 27 item 4)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.network.packedflows import _fold
from dlscale.perfmodel.network.plan import StepFlows
from dlscale.perfmodel.network.rowclasses import unique_rows

VALUES = st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 1e-300, 7.25, 1e12])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(1, 7), st.data())
def test_classes_are_numpys_unique_rows(n, width, data):
    vals = data.draw(st.lists(VALUES, min_size=n * width, max_size=n * width))
    rows = np.array(vals).reshape(n, width)
    # -0.0 is 0.0 to a sort (np.unique of records would tell their bytes apart)
    want, inv = np.unique(rows + 0.0, axis=0, return_inverse=True)
    for compiled in (False, True):
        uniq, cls = unique_rows(rows, compiled=compiled)
        assert uniq.tobytes() == rows[_first_of(cls)].tobytes()
        assert np.array_equal(uniq, want) and np.array_equal(cls, inv.ravel())
        assert cls.dtype == np.intp


def _first_of(cls):
    """Each class's first row (in the rows' order)."""
    first = np.full(cls.max() + 1, len(cls))
    np.minimum.at(first, cls, np.arange(len(cls)))
    return first


def test_a_large_step_hashes_to_the_same_classes():
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 3, size=(50_000, 6)).astype(float) / 2
    a, b = unique_rows(rows, compiled=False), unique_rows(rows, compiled=True)
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


def _fold_by_lookup(src, dst, cls):
    """The old fold: each message's reverse looked up among the step's (src, dst)."""
    where = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(src, dst, strict=True))}
    keep, back = [], []
    for i, (a, b) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        j = where.get((b, a)) if a != b else None
        if j is None or a < b:
            keep.append(i)
            back.append(int(cls[j]) if j is not None else -1)
    return src[keep], dst[keep], cls[keep], np.array(back, dtype=np.intp)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.data())
def test_exchanges_fold_as_looked_up(p, data):
    """Steps where no rank sends twice and none receives twice: random partial
    permutations (exchanges, one-way messages, messages to oneself)."""
    perm = np.array(data.draw(st.permutations(range(p))))
    senders = np.array(sorted(data.draw(st.sets(st.integers(0, p - 1), min_size=1))))
    src, dst = senders, perm[senders]
    if data.draw(st.booleans()):                  # make pairs exchange
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        _, first = np.unique(src, return_index=True)
        src, dst = src[np.sort(first)], dst[np.sort(first)]
        ok = np.bincount(dst, minlength=p)[dst] == 1
        src, dst = src[ok], dst[ok]
    cls = np.array(data.draw(st.lists(st.integers(0, 5), min_size=len(src),
                                      max_size=len(src))), dtype=np.intp)
    step = StepFlows(src, dst, cls, np.zeros((6, 1)), np.zeros(6, bool), np.zeros(6, int),
                     np.ones(6, bool), 1.0, None, True)
    got = _fold(step, p)
    want = _fold_by_lookup(src, dst, cls)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w), (src, dst, got, want)
