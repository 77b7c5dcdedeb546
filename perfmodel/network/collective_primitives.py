"""Closed forms of the collectives other than allreduce, and the shared argument checks.

Binomial reduce and broadcast (also the halves of the binomial-tree and hierarchical
allreduces), ring reduce-scatter and allgather, binomial gather, the pairwise
all-to-all, one round of a parameter server, and :func:`fastest` (the least of named candidates). Arguments, units and errors as in :mod:`dlscale.perfmodel.network.collectives`, which
re-exports every public name here; import them from there.

Examples
--------
>>> round(reduce_s(1e3, 5, 1e-6, 1e-9), 12)  # ceil(log2 5) (alpha + n beta)
6e-06
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = ["Param", "Seconds", "allgather_s", "alltoall_s", "broadcast_s", "fastest",
           "gather_s", "parameter_server_s", "reduce_s", "reduce_scatter_s"]

#: Seconds: a float for scalar input, an ndarray otherwise.
Seconds = float | np.ndarray
#: A Hockney parameter: a scalar, or an array broadcast with ``n_bytes`` and ``p``.
Param = float | np.ndarray


def _out(x: np.ndarray) -> Seconds:
    return float(x) if np.ndim(x) == 0 else x


def _check(n_bytes: ArrayLike, p: ArrayLike, *params: Param,
           names: tuple[str, ...] = ("alpha_s", "beta_s_per_B", "gamma_s_per_B"),
           ranks: str = "p") -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(n_bytes, dtype=float)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ConfigError(f"n_bytes: must be finite and >= 0, got {n_bytes!r}")
    pa = np.asarray(p, dtype=float)
    if np.any(~np.isfinite(pa)) or np.any(pa < 1) or np.any(pa != np.floor(pa)):
        raise ConfigError(f"{ranks}: must be integers >= 1, got {p!r}")
    for name, value in zip(names, params, strict=False):
        v = np.asarray(value, dtype=float)
        if np.any(~np.isfinite(v)) or np.any(v < 0):
            raise ConfigError(f"{name}: must be finite and >= 0, got {value!r}")
    return n, pa


def _ceil_log2(p: np.ndarray) -> np.ndarray:
    return np.asarray(np.ceil(np.log2(p)))


def _pow2_split(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p', log2 p', extra)``: largest power of two <= p and whether p exceeds it."""
    k = np.floor(np.log2(p))
    p2 = np.exp2(k)
    return p2, k, (p > p2).astype(float)



def reduce_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param,
             gamma_s_per_B: Param = 0.0) -> Seconds:
    """Binomial-tree reduce to one root: ``ceil(log2 p) (alpha + n beta + n gamma)``.

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
    >>> round(reduce_s(1e3, 5, 1e-6, 1e-9), 12)
    6e-06
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    return _out(_ceil_log2(p) * (alpha_s + n * beta_s_per_B + n * gamma_s_per_B))


def broadcast_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param,
                algorithm: str = "binomial") -> Seconds:
    """Broadcast from one root.

    ``"binomial"``: ``ceil(log2 p) (alpha + n beta)``. ``"scatter-allgather"`` (van de
    Geijn, for long messages): binomial scatter ``ceil(log2 p) alpha + (p-1)/p n
    beta`` then ring allgather ``(p-1) alpha + (p-1)/p n beta``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's vector; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B).
    algorithm : {"binomial", "scatter-allgather"}, optional
        Binomial tree (default) or van de Geijn's scatter then allgather.

    Returns
    -------
    float or ndarray
        Seconds (see :mod:`dlscale.perfmodel.network.collectives`).

    Raises
    ------
    ConfigError
        A negative or non-finite argument, ``p`` not an integer >= 1,
        or an unknown ``algorithm``.

    Examples
    --------
    >>> round(broadcast_s(1e3, 4, 1e-6, 1e-9), 12)
    4e-06
    >>> broadcast_s(4e6, 4, 0.0, 1e-9, "scatter-allgather")
    0.006
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B)
    if algorithm == "binomial":
        return _out(_ceil_log2(p) * (alpha_s + n * beta_s_per_B))
    if algorithm == "scatter-allgather":
        f = (p - 1) / p
        return _out((_ceil_log2(p) + p - 1) * alpha_s + 2 * f * n * beta_s_per_B)
    raise unknown_name("broadcast algorithm", algorithm, ("binomial", "scatter-allgather"))



def reduce_scatter_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param,
                     gamma_s_per_B: Param = 0.0) -> Seconds:
    """Ring reduce-scatter of an ``n``-byte vector: ``(p-1) alpha + (p-1)/p n (beta + gamma)``.

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
    >>> reduce_scatter_s(4e6, 4, 0.0, 1e-9, 1e-9)
    0.006
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    return _out((p - 1) * alpha_s + (p - 1) / p * n * (beta_s_per_B + gamma_s_per_B))


def allgather_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param) -> Seconds:
    """Ring allgather of ``n`` bytes in all (``n / p`` from each rank).

    ``(p-1) alpha + (p-1)/p n beta``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes gathered in all; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B).

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
    >>> allgather_s(4e6, 4, 1e-6, 1e-9)
    0.003003
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B)
    return _out((p - 1) * alpha_s + (p - 1) / p * n * beta_s_per_B)


def alltoall_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param) -> Seconds:
    """Pairwise-exchange all-to-all: each rank sends ``n / p`` to each other rank.

    ``(p-1) alpha + (p-1)/p n beta``: ``p - 1`` steps, in step ``i`` a rank sends its
    block for rank ``r ^ i`` (a power of two of ranks; else for ``r + i``, receiving
    from ``r - i``). MPICH's ``MPIR_Alltoall_intra_pairwise``
    (src/mpi/coll/alltoall/alltoall_intra_pairwise.c), whose comment gives the cost
    as ``(p-1).alpha + n.beta`` for ``n`` the bytes a rank sends to the others (here
    ``n`` is a rank's whole send buffer, its own block included).

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes of each rank's send buffer (``p`` blocks); ranks (integers >= 1).
    alpha_s, beta_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B).

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
    >>> alltoall_s(4e6, 4, 1e-6, 1e-9)
    0.003003
    """
    # the ring all-gather's terms: p - 1 steps, each moving n / p per rank
    return allgather_s(n_bytes, p, alpha_s, beta_s_per_B)


def gather_s(n_bytes: ArrayLike, p: ArrayLike, alpha_s: Param, beta_s_per_B: Param) -> Seconds:
    """Binomial gather of ``n`` bytes in all to one root: ``ceil(log2 p) alpha + (p-1)/p n beta``.

    Parameters
    ----------
    n_bytes, p : float or array_like
        Bytes gathered at the root; ranks (integers >= 1). Broadcast together.
    alpha_s, beta_s_per_B : float or array_like
        Latency (s), inverse bandwidth (s/B).

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
    >>> gather_s(4e6, 4, 1e-6, 1e-9)
    0.003002
    """
    n, p = _check(n_bytes, p, alpha_s, beta_s_per_B)
    return _out(_ceil_log2(p) * alpha_s + (p - 1) / p * n * beta_s_per_B)


def parameter_server_s(n_bytes: ArrayLike, workers: ArrayLike, alpha_s: Param,
                       beta_s_per_B: Param, server_update_s_per_B: Param = 0.0) -> Seconds:
    """One round in which every worker pushes ``n`` bytes and pulls ``n`` bytes back.

    The server is a separate process whose link is the bottleneck: it serves the
    workers one at a time (blocking send/receive pairs), applying each push at
    ``server_update_s_per_B``: ``workers (2 alpha + 2 n beta + n u)``. One worker
    still pays one exchange.

    Parameters
    ----------
    n_bytes, workers : float or array_like
        Bytes each worker pushes (and pulls back); workers served per round.
    alpha_s, beta_s_per_B, server_update_s_per_B : float or array_like
        The server link's latency (s) and inverse bandwidth (s/B); seconds per byte
        the server spends applying a push (default 0).

    Returns
    -------
    float or ndarray
        Seconds of one round.

    Raises
    ------
    ConfigError
        A negative or non-finite argument, or ``workers`` not an integer >= 1.

    Examples
    --------
    >>> round(parameter_server_s(1e6, 4, 1e-6, 1e-9, 1e-10), 12)  # 4 (2 us + 2 ms + 0.1 ms)
    0.008408
    """
    n, w = _check(n_bytes, workers, alpha_s, beta_s_per_B, server_update_s_per_B,
                  names=("alpha_s", "beta_s_per_B", "server_update_s_per_B"), ranks="workers")
    return _out(w * (2 * alpha_s + 2 * n * beta_s_per_B + n * server_update_s_per_B))


def fastest(times: Mapping[str, ArrayLike]) -> tuple[Seconds, str | np.ndarray]:
    """Element-wise least time of named candidates and the name that achieves it.

    ``times`` maps a name to seconds (arrays broadcast together). Returns the minimum
    (``np.minimum`` over the candidates) and the chosen names (``np.argmin``; a
    ``str`` for scalar input, an array of ``str`` otherwise); ties go to the first.

    Parameters
    ----------
    times : mapping of str to array_like
        Candidate name -> seconds.

    Returns
    -------
    time_s : float or ndarray
        The least time, element-wise.
    name : str or ndarray of str
        The candidate that achieves it (the first on a tie).

    Examples
    --------
    >>> fastest({"a": [1.0, 5.0], "b": [2.0, 3.0]})
    (array([1., 3.]), array(['a', 'b'], dtype='<U1'))
    """
    if not times:
        raise ConfigError("times: need at least one candidate")
    names = np.asarray(list(times))
    stack = np.stack(np.broadcast_arrays(*(np.asarray(t, dtype=float) for t in times.values())))
    best = np.minimum.reduce(stack, axis=0)
    chosen = names[np.argmin(stack, axis=0)]
    return _out(best), (str(chosen) if chosen.ndim == 0 else chosen)
