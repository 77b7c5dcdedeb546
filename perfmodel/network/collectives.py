"""Closed-form costs of collective operations (Hockney model, with reduction cost).

Every function is vectorized with numpy over ``n_bytes`` and the rank count ``p``
(scalars or arrays, broadcast together) and returns seconds: a float for scalar
input, an ndarray otherwise. Parameters, all SI:

- ``alpha_s``: latency of one message (s);
- ``beta_s_per_B``: inverse bandwidth of the link a message crosses (s/B);
- ``gamma_s_per_B``: local reduction cost per byte reduced (s/B), the inverse
  throughput of the reduction kernel (default 0: wire only).

The Hockney parameters may also be arrays that broadcast with ``n_bytes`` and
``p`` (one latency and bandwidth per rank count, as the training model passes).
``n_bytes`` is the size of the vector every rank holds (allreduce, reduce,
broadcast, reduce-scatter input) or the size of the whole gathered result
(allgather, gather). One rank (``p = 1``) costs nothing. Non-power-of-two rank
counts in recursive doubling and Rabenseifner are handled as MPICH does (Thakur,
Rabenseifner, Gropp 2005): the ``r = p - p'`` extra ranks (``p'`` the largest power
of two ``<= p``) first hand their vector to a partner (``alpha + n beta + n gamma``),
the ``p'`` ranks run the power-of-two algorithm, and the partners send the result
back (``alpha + n beta``).

Examples
--------
Four ranks, 1 MB, 1 us latency, 1 GB/s links, 0.1 GB/s reduction (so numbers are
easy to check by hand):

>>> ring_allreduce_s(1e6, 4, 1e-6, 1e-9)  # 6 alpha + 2 (3/4) n beta
0.001506
>>> round(ring_allreduce_s(1e6, 4, 1e-6, 1e-9, 1e-10), 9)  # + (3/4) n gamma
0.001581
>>> allreduce_s("binomial-tree", 1e6, 4, 1e-6, 1e-9)  # 2 log2(4) (alpha + n beta)
0.004004
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.network.collective_primitives import (
    Param,
    Seconds,
    _ceil_log2,
    _check,
    _out,
    _pow2_split,
    allgather_s,
    alltoall_s,
    broadcast_s,
    fastest,
    gather_s,
    parameter_server_s,
    reduce_s,
    reduce_scatter_s,
)

__all__ = [
    "ALLREDUCE",
    "AUTO_CANDIDATES",
    "allgather_s",
    "allreduce_s",
    "alltoall_s",
    "auto_allreduce_s",
    "best_allreduce",
    "binomial_tree_allreduce_s",
    "broadcast_s",
    "double_binary_tree_allreduce_s",
    "fastest",
    "gather_s",
    "hierarchical_allreduce_s",
    "parameter_server_s",
    "rabenseifner_allreduce_s",
    "recursive_doubling_allreduce_s",
    "reduce_s",
    "reduce_scatter_s",
    "ring_allreduce_s",
]

def ring_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param,
                     gamma_s_per_B: Param = 0.0) -> Seconds:
    """Ring allreduce: reduce-scatter then allgather, ``2(p-1)`` steps of ``n/p``.

    ``2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma`` (Patarasuk & Yuan 2009).

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> ring_allreduce_s(1e6, 4, 0.0, 1e-9)  # bandwidth term 2 (3/4) 1e6 1e-9
    0.0015
    >>> ring_allreduce_s(1e6, 1, 1e-6, 1e-9)
    0.0
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    f = (p - 1) / p
    return _out(2 * (p - 1) * alpha_s + 2 * f * n * beta_s_per_B + f * n * gamma_s_per_B)


def recursive_doubling_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                                   beta_s_per_B: Param, gamma_s_per_B: Param = 0.0) -> Seconds:
    """Recursive doubling: ``log2 p`` exchanges of the whole vector, each reduced.

    Power of two: ``log2 p (alpha + n beta + n gamma)``. Otherwise (MPICH) ``log2 p'
    (alpha + n beta + n gamma) + 2 alpha + 2 n beta + n gamma``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> round(recursive_doubling_allreduce_s(1e3, 8, 1e-6, 1e-9), 12)  # 3 (alpha + n beta)
    6e-06
    >>> round(recursive_doubling_allreduce_s(1e3, 3, 1e-6, 1e-9), 12)  # 1 step + 2 (alpha + n beta)
    6e-06
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    _, k, extra = _pow2_split(p)
    step = alpha_s + n * beta_s_per_B + n * gamma_s_per_B
    fold = 2 * alpha_s + 2 * n * beta_s_per_B + n * gamma_s_per_B
    return _out(k * step + extra * fold)


def rabenseifner_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                             beta_s_per_B: Param, gamma_s_per_B: Param = 0.0) -> Seconds:
    """Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather.

    Power of two: ``2 log2 p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma``; otherwise
    the MPICH fold (see the module docstring) around the ``p'`` form.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> round(rabenseifner_allreduce_s(1e6, 4, 1e-6, 1e-9), 12)  # 4 alpha + 1.5 n beta
    0.001504
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    p2, k, extra = _pow2_split(p)
    f = (p2 - 1) / p2
    core = 2 * k * alpha_s + 2 * f * n * beta_s_per_B + f * n * gamma_s_per_B
    fold = 2 * alpha_s + 2 * n * beta_s_per_B + n * gamma_s_per_B
    return _out(core + extra * fold)


def binomial_tree_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                              beta_s_per_B: Param, gamma_s_per_B: Param = 0.0) -> Seconds:
    """Binomial reduce then binomial broadcast.

    ``2 ceil(log2 p) (alpha + n beta) + ceil(log2 p) n gamma``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> round(binomial_tree_allreduce_s(1e3, 8, 1e-6, 1e-9, 1e-9), 12)  # 6 (2 us) + 3 us
    1.5e-05
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    d = _ceil_log2(p)
    return _out(2 * d * (alpha_s + n * beta_s_per_B) + d * n * gamma_s_per_B)


def _pipelined_s(depth: np.ndarray, alpha_s: Param, nb: np.ndarray) -> np.ndarray:
    """Best pipelined time ``min_k (depth - 1 + k)(alpha + nb / k)`` over ``k >= 1``.

    The optimum ``k* = sqrt((depth - 1) nb / alpha)`` gives ``(sqrt((depth-1) alpha) +
    sqrt(nb))^2``; where ``k* < 1`` one segment is best: ``depth (alpha + nb)``.
    """
    dm1 = np.maximum(depth - 1, 0)
    a = np.asarray(alpha_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        k_opt = np.where(a > 0, np.sqrt(dm1 * nb / np.where(a > 0, a, 1.0)),
                         np.where(dm1 * nb > 0, np.inf, 0.0))
    piped = (np.sqrt(dm1 * a) + np.sqrt(nb)) ** 2
    return np.where(k_opt >= 1, piped, depth * (alpha_s + nb))


def double_binary_tree_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                                   beta_s_per_B: Param, gamma_s_per_B: Param = 0.0) -> Seconds:
    """Double binary tree (Sanders, Speck, Träff 2009; NCCL >= 2.4), pipelined.

    Two binary trees of depth ``D = ceil(log2 p)``, each carrying half the vector in
    ``k`` segments; every rank is an inner node of at most one tree, so per pipeline
    step it sends and receives ``n / k`` bytes in all. A pipelined reduce of ``D``
    levels takes ``(D - 1 + k)(alpha + n (beta + gamma) / k)``, the broadcast the
    same without ``gamma``. With the best ``k >= 1`` (continuous) each phase costs
    ``(sqrt((D-1) alpha) + sqrt(n b))^2``, or ``D (alpha + n b)`` when one segment
    is best. Bandwidth limit (``alpha -> 0``): ``2 n beta + n gamma``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> round(double_binary_tree_allreduce_s(1e6, 8, 0.0, 1e-9), 12)  # 2 n beta
    0.002
    >>> round(double_binary_tree_allreduce_s(1e3, 2, 1e-6, 1e-9), 12)  # D = 1: 2 (alpha + n beta)
    4e-06
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    d = _ceil_log2(p)
    red = _pipelined_s(d, alpha_s, n * (beta_s_per_B + gamma_s_per_B))
    bcast = _pipelined_s(d, alpha_s, n * beta_s_per_B)
    return _out(np.where(p > 1, red + bcast, 0.0))


#: Flat allreduce algorithms, ``f(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B=0.0)``.
ALLREDUCE: dict[str, Callable[..., Seconds]] = {
    "ring": ring_allreduce_s,
    "recursive-doubling": recursive_doubling_allreduce_s,
    "rabenseifner": rabenseifner_allreduce_s,
    "binomial-tree": binomial_tree_allreduce_s,
    "double-binary-tree": double_binary_tree_allreduce_s,
}


def allreduce_s(name: str, n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                beta_s_per_B: Param, gamma_s_per_B: Param = 0.0) -> Seconds:
    """Dispatch to the flat allreduce algorithm ``name`` (a key of :data:`ALLREDUCE`).

    ``"auto"``: the fastest flat algorithm (:func:`auto_allreduce_s`).

    Parameters
    ----------
    name : str
        A key of :data:`ALLREDUCE`, or ``"auto"``.
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, ``p`` not an integer >= 1,
        or an unknown ``name`` (the message lists the valid ones).

    Examples
    --------
    >>> allreduce_s("ring", 1e6, 2, 0.0, 1e-9)
    0.001
    >>> allreduce_s("rign", 1e6, 2, 0.0, 1e-9)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: allreduce algorithm: unknown name 'rign'; valid: auto, binomial-tree, double-binary-tree, rabenseifner, recursive-doubling, ring (did you mean 'ring'?)
    """
    if name == "auto":
        return auto_allreduce_s(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    try:
        f = ALLREDUCE[name]
    except KeyError:
        raise unknown_name("allreduce algorithm", name, (*ALLREDUCE, "auto")) from None
    return f(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)


#: Candidates of ``"auto"`` in tie-break order (the first of equal times wins).
AUTO_CANDIDATES = (*ALLREDUCE, "hierarchical")


def best_allreduce(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param,
                   beta_s_per_B: Param | Mapping[str, Param], gamma_s_per_B: Param = 0.0, *,
                   ranks_per_node: ArrayLike | None = None,
                   intra: tuple[Param, Param] | None = None,
                   inter: tuple[Param, Param] | None = None,
                   inter_algorithm: str = "ring") -> tuple[Seconds, str | np.ndarray]:
    """What a library's tuner does: the allreduce with the least predicted time.

    For each ``(n_bytes, p)`` (vectorized) the time and name of the fastest of the
    flat algorithms of :data:`ALLREDUCE` over ``p`` ranks, plus ``hierarchical``
    (:func:`hierarchical_allreduce_s` over ``ceil(p / ranks_per_node)`` nodes) when
    ``ranks_per_node``, ``intra`` and ``inter`` (each ``(alpha_s, beta_s_per_B)``)
    are given. ``beta_s_per_B`` is one inverse bandwidth or a mapping from a flat
    candidate's name to its own (e.g. each with its topology contention factor).

    MPI and NCCL libraries pick the allreduce algorithm per message size and rank
    count from cost models or tuned thresholds: MPICH (Thakur, Rabenseifner, Gropp,
    "Optimization of collective communication operations in MPICH", IJHPCA 2005:
    recursive doubling for short messages, Rabenseifner's algorithm for long ones)
    and Intel MPI do so by message and communicator size; NCCL >= 2.4 chooses between
    ring and double binary tree with its own latency/bandwidth model per size and
    rank count (NVIDIA developer blog "Massively Scale Your Deep Learning Training
    with NCCL 2.4", Feb 2019; NCCL's src/graph/tuning.cc). Here the tuner's cost
    model is the closed forms themselves.

    Parameters
    ----------
    n_bytes, p, alpha_s, gamma_s_per_B : float or array_like
        As in the module docstring.
    beta_s_per_B : float, array_like or mapping of str to float
        One inverse bandwidth, or one per flat candidate's name.
    ranks_per_node, intra, inter : optional
        Ranks per node and ``(alpha_s, beta_s_per_B)`` inside and between nodes:
        with all three, ``hierarchical`` is a candidate too.
    inter_algorithm : str, optional
        Flat algorithm among node leaders for ``hierarchical`` (default ring).

    Returns
    -------
    time_s : float or ndarray
        Seconds of the fastest algorithm.
    name : str or ndarray of str
        Its name.

    Raises
    ------
    ConfigError
        A bad argument or an unknown ``inter_algorithm``.

    Examples
    --------
    Tiny messages on many ranks favour a log-latency algorithm; large ones a
    bandwidth-optimal one (1 us latency, 10 GB/s):

    >>> t, names = best_allreduce([8.0, 1e9], 1024, 1e-6, 1e-10)
    >>> names.tolist()
    ['recursive-doubling', 'rabenseifner']
    """
    betas = (beta_s_per_B if isinstance(beta_s_per_B, Mapping)
             else dict.fromkeys(ALLREDUCE, beta_s_per_B))
    times: dict[str, ArrayLike] = {
        name: f(n_bytes, p, alpha_s, betas[name], gamma_s_per_B) for name, f in ALLREDUCE.items()}
    if ranks_per_node is not None and intra is not None and inter is not None:
        r = np.asarray(ranks_per_node, dtype=float)
        nodes = np.ceil(np.asarray(p, dtype=float) / r)
        times["hierarchical"] = hierarchical_allreduce_s(n_bytes, nodes, r, intra, inter,
                                                         gamma_s_per_B, inter_algorithm)
    return fastest(times)


def auto_allreduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param,
                     gamma_s_per_B: Param = 0.0) -> Seconds:
    """Time of the fastest flat allreduce (:func:`best_allreduce` without hierarchical).

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B, gamma_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B), reduction cost (s/B; default 0).

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``p`` not an integer >= 1.

    Examples
    --------
    >>> auto_allreduce_s(1e6, 4, 1e-6, 1e-9) == rabenseifner_allreduce_s(1e6, 4, 1e-6, 1e-9)
    True
    """
    return best_allreduce(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)[0]


def hierarchical_allreduce_s(n_bytes: ArrayLike, nodes: ArrayLike, ranks_per_node: ArrayLike,
                             intra: tuple[Param, Param], inter: tuple[Param, Param],
                             gamma_s_per_B: Param = 0.0, inter_algorithm: str = "ring",
                             ) -> Seconds:
    """Hierarchical allreduce: intra-node reduce, inter-node allreduce, intra-node bcast.

    ``ceil(log2 r) (a_i + n b_i + n gamma)`` (binomial reduce to a node leader) ``+
    allreduce(inter_algorithm, n, nodes, a_e, b_e, gamma)`` among leaders ``+
    ceil(log2 r) (a_i + n b_i)`` (binomial broadcast), with ``intra = (a_i, b_i)``,
    ``inter = (a_e, b_e)`` and ``r = ranks_per_node``. With one rank per node it is
    the flat ``inter_algorithm`` over the nodes.

    Parameters
    ----------
    n_bytes, nodes, ranks_per_node : float or array_like
        Bytes of each rank's vector; nodes (one leader each); ranks per node.
    intra, inter : tuple of (float, float)
        ``(alpha_s, beta_s_per_B)`` inside a node and between nodes.
    gamma_s_per_B : float or array_like, optional
        Reduction cost per byte (default 0).
    inter_algorithm : str, optional
        Flat allreduce among the leaders, a key of :data:`ALLREDUCE` (default ring).

    Returns
    -------
    float or ndarray
        Seconds.

    Raises
    ------
    ConfigError
        A bad argument or an unknown ``inter_algorithm``.

    Examples
    --------
    >>> hierarchical_allreduce_s(1e6, 2, 4, (0.0, 1e-10), (0.0, 1e-9))  # 4 n b_i + n b_e
    0.0014
    """
    a_i, b_i = intra
    a_e, b_e = inter
    n, nd = _check(n_bytes, nodes, a_i, b_i, gamma_s_per_B,
                   names=("intra alpha_s", "intra beta_s_per_B", "gamma_s_per_B"), ranks="nodes")
    _, r = _check(n, ranks_per_node, a_e, b_e, names=("inter alpha_s", "inter beta_s_per_B"),
                  ranks="ranks_per_node")
    d = _ceil_log2(r)
    local = d * (2 * a_i + 2 * n * b_i + n * gamma_s_per_B)
    return _out(local + np.asarray(allreduce_s(inter_algorithm, n, nd, a_e, b_e, gamma_s_per_B)))


