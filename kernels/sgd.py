"""SGD baselines: plain SGD and momentum SGD (heavy ball or Nesterov), with weight decay.

Conventions are PyTorch's (``torch.optim.SGD``), so the same hyper-parameters mean
the same thing: with ``d = g + weight_decay x``,

* SGD:       ``x <- x - lr d``
* momentum:  ``v <- mu v + d``; ``x <- x - lr v`` (heavy ball) or
  ``x <- x - lr (d + mu v)`` (Nesterov).

Hogwild SGD (lock-free, several threads) lives in :mod:`dlscale.kernels.hogwild`.

Examples
--------
>>> import numpy as np
>>> sgd_update(np.ones(2), np.ones(2), lr=0.5)
array([0.5, 0.5])
"""

from __future__ import annotations

import numpy as np

from dlscale.kernels._checks import check_float_array, check_like, check_scalar, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["momentum_sgd_update", "sgd_update"]


@njit()
def _sgd(x: np.ndarray, g: np.ndarray, lr: float, wd: float) -> None:
    for i in range(x.size):
        x[i] = x[i] - lr * (g[i] + wd * x[i])


@njit()
def _momentum(x: np.ndarray, v: np.ndarray, g: np.ndarray, lr: float, mu: float, wd: float, nesterov: bool) -> None:
    if nesterov:
        for i in range(x.size):
            d = g[i] + wd * x[i]
            vi = mu * v[i] + d
            v[i] = vi
            x[i] = x[i] - lr * (d + mu * vi)
    else:
        for i in range(x.size):
            vi = mu * v[i] + g[i] + wd * x[i]
            v[i] = vi
            x[i] = x[i] - lr * vi


def sgd_update(x: np.ndarray, grad: np.ndarray, lr: float, weight_decay: float = 0.0) -> np.ndarray:
    """SGD step ``x <- x - lr (grad + weight_decay x)``, in place.

    Examples
    --------
    >>> import numpy as np
    >>> sgd_update(np.full(2, 2.0), np.zeros(2), lr=0.5, weight_decay=0.5)
    array([1.5, 1.5])
    """
    xf = check_float_array("x", x)
    gf = check_like("grad", grad, "x", x)
    check_writeable("x", x)
    t = x.dtype.type
    _sgd(xf, gf, check_scalar("lr", lr, t), check_scalar("weight_decay", weight_decay, t))
    return x


def momentum_sgd_update(x: np.ndarray, velocity: np.ndarray, grad: np.ndarray, lr: float,
                        momentum: float, weight_decay: float = 0.0,
                        nesterov: bool = False) -> np.ndarray:
    """Momentum SGD step (heavy ball, or Nesterov with ``nesterov=True``), in place.

    Examples
    --------
    >>> import numpy as np
    >>> x, v = np.zeros(2), np.ones(2)
    >>> momentum_sgd_update(x, v, np.ones(2), lr=0.1, momentum=0.5)
    array([-0.15, -0.15])
    >>> v
    array([1.5, 1.5])
    """
    xf = check_float_array("x", x)
    vf = check_like("velocity", velocity, "x", x)
    gf = check_like("grad", grad, "x", x)
    check_writeable("x", x)
    check_writeable("velocity", velocity)
    if not isinstance(nesterov, (bool, np.bool_)):
        raise TypeError(f"nesterov: must be a bool, got {type(nesterov).__name__}")
    t = x.dtype.type
    _momentum(xf, vf, gf, check_scalar("lr", lr, t),
              check_scalar("momentum", momentum, t, high=1.0, high_inclusive=False),
              check_scalar("weight_decay", weight_decay, t), bool(nesterov))
    return x
