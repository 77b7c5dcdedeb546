"""Elastic Averaging SGD kernels (Zhang, Choromanska and LeCun, NIPS 2015).

Updates follow the paper's notation (see reference/published-results.md section 5):

* worker:   ``x_i <- x_i - eta (g_i + rho (x_i - x_c))``
* center (sync, from the sum ``S = sum_i x_i`` of all ``P`` workers):
  ``x_c <- x_c + eta rho (S - P x_c)``
* center (async, from one worker): ``x_c <- x_c + eta rho (x_i - x_c)``
* elastic exchange of the asynchronous form, every ``tau`` local steps:
  ``d = alpha (x_i - x_c); x_i <- x_i - d; x_c <- x_c + d``
* momentum EASGD (EAMSGD, Nesterov): ``v <- mu v - eta g(x + mu v)``;
  ``x <- x + v - eta rho (x - x_c)``.  The caller evaluates the gradient at the
  look-ahead point :func:`nesterov_lookahead` returns.

The SC'17 redesigns (You, Buluc, Demmel; section 1) use these same updates: Sync
EASGD calls :func:`easgd_center_update_sync` with the tree-reduced sum, Async EASGD
calls :func:`easgd_center_update_async` first come first served, and Hogwild EASGD
is :func:`dlscale.kernels.hogwild.hogwild_easgd_center_update`.

All updates are in place, for float32 and float64, and return the updated array
(its original shape).

Examples
--------
>>> import numpy as np
>>> x = np.array([1.0, 2.0]); c = np.zeros(2); g = np.zeros(2)
>>> easgd_worker_update(x, g, c, lr=0.5, rho=1.0)
array([0.5, 1. ])
>>> easgd_center_update_async(c, x, lr=0.5, rho=1.0)
array([0.25, 0.5 ])
"""

from __future__ import annotations

import numpy as np

from dlscale.kernels._checks import check_float_array, check_like, check_scalar, check_writeable
from dlscale.kernels.jit import njit

__all__ = [
    "easgd_center_update_async",
    "easgd_center_update_sync",
    "easgd_elastic_exchange",
    "easgd_worker_update",
    "measgd_worker_update",
    "nesterov_lookahead",
]


@njit()
def _worker(x: np.ndarray, g: np.ndarray, c: np.ndarray, lr: float, rho: float) -> None:
    for i in range(x.size):
        x[i] = x[i] - lr * (g[i] + rho * (x[i] - c[i]))


@njit()
def _center_async(c: np.ndarray, x: np.ndarray, a: float) -> None:
    for i in range(c.size):
        c[i] = c[i] + a * (x[i] - c[i])


@njit()
def _center_sync(c: np.ndarray, s: np.ndarray, a: float, p: float) -> None:
    for i in range(c.size):
        c[i] = c[i] + a * (s[i] - p * c[i])


@njit()
def _exchange(x: np.ndarray, c: np.ndarray, alpha: float) -> None:
    for i in range(x.size):
        d = alpha * (x[i] - c[i])
        x[i] = x[i] - d
        c[i] = c[i] + d


@njit()
def _measgd(x: np.ndarray, v: np.ndarray, g: np.ndarray, c: np.ndarray, lr: float, rho: float, mu: float) -> None:
    for i in range(x.size):
        vi = mu * v[i] - lr * g[i]
        v[i] = vi
        x[i] = x[i] + vi - lr * rho * (x[i] - c[i])


@njit()
def _lookahead(out: np.ndarray, x: np.ndarray, v: np.ndarray, mu: float) -> None:
    for i in range(x.size):
        out[i] = x[i] + mu * v[i]


def easgd_worker_update(x: np.ndarray, grad: np.ndarray, center: np.ndarray,
                        lr: float, rho: float) -> np.ndarray:
    """Elastic worker step ``x <- x - lr (grad + rho (x - center))`` in place.

    Parameters
    ----------
    x, grad, center : ndarray
        Worker parameters (updated), its gradient and the center variable; same
        shape, same float dtype, C-contiguous.
    lr, rho : float
        Learning rate ``eta >= 0`` and elastic coefficient ``rho >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> easgd_worker_update(np.ones(3), np.ones(3), np.zeros(3), lr=0.1, rho=0.0)
    array([0.9, 0.9, 0.9])
    """
    xf = check_float_array("x", x)
    gf = check_like("grad", grad, "x", x)
    cf = check_like("center", center, "x", x)
    check_writeable("x", x)
    t = x.dtype.type
    _worker(xf, gf, cf, check_scalar("lr", lr, t), check_scalar("rho", rho, t))
    return x


def easgd_center_update_async(center: np.ndarray, x: np.ndarray, lr: float, rho: float) -> np.ndarray:
    """Center step from one worker, ``center <- center + lr rho (x - center)``, in place.

    Examples
    --------
    >>> import numpy as np
    >>> easgd_center_update_async(np.zeros(2), np.full(2, 4.0), lr=0.25, rho=1.0)
    array([1., 1.])
    """
    cf = check_float_array("center", center)
    xf = check_like("x", x, "center", center)
    check_writeable("center", center)
    t = center.dtype.type
    a = check_scalar("lr", lr, t) * check_scalar("rho", rho, t)
    _center_async(cf, xf, a)
    return center


def easgd_center_update_sync(center: np.ndarray, worker_sum: np.ndarray, n_workers: int,
                             lr: float, rho: float) -> np.ndarray:
    """Synchronous center step ``center <- center + lr rho (worker_sum - P center)``.

    ``worker_sum`` is the sum of the ``P = n_workers`` worker parameter vectors, as an
    allreduce or tree reduction delivers it.  With ``rho = 0`` the center does not
    move; with every worker equal to the center nothing moves.

    Examples
    --------
    >>> import numpy as np
    >>> easgd_center_update_sync(np.zeros(2), np.array([2.0, 4.0]), 2, lr=0.5, rho=1.0)
    array([1., 2.])
    """
    cf = check_float_array("center", center)
    sf = check_like("worker_sum", worker_sum, "center", center)
    check_writeable("center", center)
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
        raise ValueError(f"n_workers: must be an integer >= 1, got {n_workers!r}")
    t = center.dtype.type
    a = check_scalar("lr", lr, t) * check_scalar("rho", rho, t)
    _center_sync(cf, sf, a, t(n_workers))
    return center


def easgd_elastic_exchange(x: np.ndarray, center: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Asynchronous elastic exchange: ``d = alpha (x - center)``, ``x -= d``, ``center += d``.

    Both arrays are updated in place; ``x + center`` is conserved (up to rounding).

    Examples
    --------
    >>> import numpy as np
    >>> easgd_elastic_exchange(np.array([2.0]), np.array([0.0]), alpha=0.25)
    (array([1.5]), array([0.5]))
    """
    xf = check_float_array("x", x)
    cf = check_like("center", center, "x", x)
    check_writeable("x", x)
    check_writeable("center", center)
    _exchange(xf, cf, check_scalar("alpha", alpha, x.dtype.type, high=1.0))
    return x, center


def measgd_worker_update(x: np.ndarray, velocity: np.ndarray, grad: np.ndarray, center: np.ndarray,
                         lr: float, rho: float, momentum: float) -> np.ndarray:
    """Momentum (Nesterov) EASGD worker step, in place on ``x`` and ``velocity``.

    ``v <- momentum v - lr grad``; ``x <- x + v - lr rho (x - center)``, where
    ``grad`` was evaluated at the look-ahead point ``x + momentum v``
    (:func:`nesterov_lookahead`).  With ``rho = 0`` this is EAMSGD's local step (the
    elastic force then comes from :func:`easgd_elastic_exchange` every tau steps).

    Examples
    --------
    >>> import numpy as np
    >>> x, v = np.zeros(2), np.ones(2)
    >>> measgd_worker_update(x, v, np.ones(2), np.zeros(2), lr=0.1, rho=0.0, momentum=0.9)
    array([0.8, 0.8])
    """
    xf = check_float_array("x", x)
    vf = check_like("velocity", velocity, "x", x)
    gf = check_like("grad", grad, "x", x)
    cf = check_like("center", center, "x", x)
    check_writeable("x", x)
    check_writeable("velocity", velocity)
    t = x.dtype.type
    _measgd(xf, vf, gf, cf, check_scalar("lr", lr, t), check_scalar("rho", rho, t),
            check_scalar("momentum", momentum, t, high=1.0, high_inclusive=False))
    return x


def nesterov_lookahead(x: np.ndarray, velocity: np.ndarray, momentum: float,
                       out: np.ndarray | None = None) -> np.ndarray:
    """Return the look-ahead point ``x + momentum velocity`` (into ``out`` if given).

    Examples
    --------
    >>> import numpy as np
    >>> nesterov_lookahead(np.ones(2), np.ones(2), 0.5)
    array([1.5, 1.5])
    """
    xf = check_float_array("x", x)
    vf = check_like("velocity", velocity, "x", x)
    if out is None:
        out = np.empty_like(x)
    of = check_like("out", out, "x", x)
    check_writeable("out", out)
    _lookahead(of, xf, vf, check_scalar("momentum", momentum, x.dtype.type, high=1.0,
                                        high_inclusive=False))
    return out
