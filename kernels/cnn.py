"""A small convolutional network for co-simulated training on square images (the 8x8 digits).

Layers: a 3x3 valid convolution of the one-channel ``side x side`` image into
``filters`` maps with ReLU, 2x2 average pooling, a dense ReLU layer of ``n_hidden``
units and a dense softmax layer of ``n_out`` classes; the loss is the mean softmax
cross-entropy over the batch. As in :mod:`.model`, the parameters live in ONE flat
vector (so the SGD, EASGD, allreduce and fusion kernels act on them directly), cut as
``K (filters, 3, 3), kb (filters), W1 (filters q q, n_hidden), b1 (n_hidden),
W2 (n_hidden, n_out), b2 (n_out)`` with ``q = (side - 2) // 2`` the pooled side.
Softmax probabilities below the smallest normal number are flushed to zero, as in
:mod:`.model` (and TensorFlow's CPU kernels).

Examples
--------
>>> import numpy as np
>>> shape = CNNShape(side=8, filters=4, n_hidden=8, n_out=3)
>>> shape.n_params
363
>>> p = cnn_init_params(shape, seed=0)
>>> X = np.random.default_rng(0).random((5, 64)); y = np.array([0, 1, 2, 0, 1])
>>> g = np.empty_like(p)
>>> cnn_loss_and_grad(p, g, X, y, shape) > 0, 0.0 <= cnn_accuracy(p, X, y, shape) <= 1.0
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.kernels._checks import check_float_array, check_int, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["CNNShape", "cnn_accuracy", "cnn_init_params", "cnn_loss_and_grad"]


@dataclass(frozen=True)
class CNNShape:
    """Sizes of the small CNN (see module docstring)."""

    side: int
    filters: int
    n_hidden: int
    n_out: int

    def __post_init__(self) -> None:
        check_int("side", self.side, low=4)
        check_int("filters", self.filters, low=1)
        check_int("n_hidden", self.n_hidden, low=1)
        check_int("n_out", self.n_out, low=2)

    @property
    def n_in(self) -> int:
        """Pixels of one image (columns of ``X``)."""
        return self.side * self.side

    @property
    def n_features(self) -> int:
        """Pooled features fed to the dense layer: ``filters q q``."""
        q = (self.side - 2) // 2
        return self.filters * q * q

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector.

        >>> CNNShape(8, 8, 32, 10).n_params
        2746
        """
        f, h = self.filters, self.n_hidden
        return f * 9 + f + self.n_features * h + h + h * self.n_out + self.n_out


@njit()
def _cnn_forward(p: np.ndarray, x: np.ndarray, side: int, F: int, H: int, n_out: int,
                 Z: np.ndarray, P: np.ndarray, A: np.ndarray, L: np.ndarray) -> int:
    """One image ``x`` forward: feature maps ``Z``, pooled ``P``, hidden ``A``, logits ``L``; arg-max."""
    c = side - 2
    q = c // 2
    nf = F * q * q
    okb = F * 9
    oW1 = okb + F
    ob1 = oW1 + nf * H
    oW2 = ob1 + H
    ob2 = oW2 + H * n_out
    for f in range(F):                       # convolution + ReLU
        for r in range(c):
            for s1 in range(c):
                acc = p[okb + f]
                for u in range(3):
                    for v in range(3):
                        acc += p[f * 9 + u * 3 + v] * x[(r + u) * side + s1 + v]
                Z[f, r, s1] = acc if acc > 0 else 0.0
    for f in range(F):                       # 2x2 average pooling
        for a in range(q):
            for b in range(q):
                P[(f * q + a) * q + b] = 0.25 * (Z[f, 2 * a, 2 * b] + Z[f, 2 * a + 1, 2 * b]
                                                 + Z[f, 2 * a, 2 * b + 1]
                                                 + Z[f, 2 * a + 1, 2 * b + 1])
    for h in range(H):                       # dense + ReLU
        acc = p[ob1 + h]
        for k in range(nf):
            acc += P[k] * p[oW1 + k * H + h]
        A[h] = acc if acc > 0 else 0.0
    best = 0
    for j in range(n_out):                   # logits
        acc = p[ob2 + j]
        for h in range(H):
            acc += A[h] * p[oW2 + h * n_out + j]
        L[j] = acc
        if L[j] > L[best]:
            best = j
    return best


@njit()
def _cnn_backward(p: np.ndarray, g: np.ndarray, x: np.ndarray, side: int, F: int, H: int,
                  n_out: int, Z: np.ndarray, P: np.ndarray, A: np.ndarray, L: np.ndarray,
                  dA: np.ndarray) -> None:
    """Add one image's gradient to ``g``, ``L`` holding d loss / d logits (batch mean)."""
    q = (side - 2) // 2
    nf = F * q * q
    okb = F * 9
    oW1 = okb + F
    ob1 = oW1 + nf * H
    oW2 = ob1 + H
    ob2 = oW2 + H * n_out
    for h in range(H):
        dh = 0.0
        for j in range(n_out):
            g[oW2 + h * n_out + j] += A[h] * L[j]
            dh += p[oW2 + h * n_out + j] * L[j]
        dA[h] = dh if A[h] > 0 else 0.0
    for j in range(n_out):
        g[ob2 + j] += L[j]
    for h in range(H):
        g[ob1 + h] += dA[h]
    for k in range(nf):
        dp = 0.0
        for h in range(H):
            g[oW1 + k * H + h] += P[k] * dA[h]
            dp += p[oW1 + k * H + h] * dA[h]
        f = k // (q * q)
        a = (k // q) % q
        b = k % q
        d = 0.25 * dp
        for r in range(2 * a, 2 * a + 2):
            for s2 in range(2 * b, 2 * b + 2):
                if Z[f, r, s2] > 0:
                    g[okb + f] += d
                    for u in range(3):
                        for v in range(3):
                            g[f * 9 + u * 3 + v] += d * x[(r + u) * side + s2 + v]


@njit()
def _cnn(p: np.ndarray, g: np.ndarray, X: np.ndarray, y: np.ndarray, side: int, F: int, H: int,
         n_out: int, tiny: float, grad: bool) -> tuple[float, int]:
    """Loss (sum over the batch) and hits; the batch-mean gradient into ``g`` if ``grad``."""
    B: int = X.shape[0]
    c = side - 2
    q = c // 2
    if grad:
        for t in range(g.shape[0]):
            g[t] = 0.0
    Z = np.empty((F, c, c))
    P = np.empty(F * q * q)
    A = np.empty(H)
    L = np.empty(n_out)
    dA = np.empty(H)
    loss = 0.0
    hits = 0
    for i in range(B):
        best = _cnn_forward(p, X[i], side, F, H, n_out, Z, P, A, L)
        if best == y[i]:
            hits += 1
        m = L[best]
        ly = L[y[i]]
        s = 0.0
        for j in range(n_out):
            L[j] = np.exp(L[j] - m)
            s += L[j]
        loss += np.log(s) + m - ly
        if not grad:
            continue
        for j in range(n_out):                   # d loss / d logits (batch mean)
            d = L[j] / s / B
            L[j] = d if d >= tiny else 0.0       # flush to zero, as TensorFlow's CPU kernels
        L[y[i]] -= 1.0 / B
        _cnn_backward(p, g, X[i], side, F, H, n_out, Z, P, A, L, dA)
    return loss, hits


def _check(params: np.ndarray, X: np.ndarray, y: np.ndarray,
           shape: CNNShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(shape, CNNShape):
        raise TypeError(f"shape: must be a CNNShape, got {type(shape).__name__}")
    p = check_float_array("params", params, ndim=1)
    if p.dtype != np.float64:
        raise TypeError(f"params: the CNN runs in float64, got {p.dtype}")
    if p.size != shape.n_params:
        raise ValueError(f"params: must have {shape.n_params} elements for {shape}, got {p.size}")
    x = check_float_array("X", X, ndim=2)
    if x.shape[1] != shape.n_in or x.dtype != p.dtype:
        raise ValueError(f"X: must be float64 with {shape.n_in} columns ({shape.side} x "
                         f"{shape.side} images), got {x.dtype} of shape {x.shape}")
    if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or y.shape != (x.shape[0],):
        raise ValueError(f"y: must be an integer array of shape ({x.shape[0]},)")
    if y.size and (y.min() < 0 or y.max() >= shape.n_out):
        raise ValueError(f"y: labels must be in [0, {shape.n_out}), got range [{y.min()}, {y.max()}]")
    return p, x, np.ascontiguousarray(y, dtype=np.int64)


def cnn_init_params(shape: CNNShape, seed: int) -> np.ndarray:
    """Seeded initial parameters (float64): He-normal weights, zero biases.

    >>> cnn_init_params(CNNShape(4, 1, 2, 2), seed=1).shape
    (20,)
    """
    if not isinstance(shape, CNNShape):
        raise TypeError(f"shape: must be a CNNShape, got {type(shape).__name__}")
    rng = np.random.default_rng(seed)
    f, h, nf = shape.filters, shape.n_hidden, shape.n_features
    p = np.zeros(shape.n_params)
    p[: f * 9] = rng.normal(0, np.sqrt(2 / 9), f * 9)
    o = f * 9 + f
    p[o: o + nf * h] = rng.normal(0, np.sqrt(2 / nf), nf * h)
    o += nf * h + h
    p[o: o + h * shape.n_out] = rng.normal(0, np.sqrt(2 / h), h * shape.n_out)
    return p


def cnn_loss_and_grad(params: np.ndarray, grad: np.ndarray, X: np.ndarray, y: np.ndarray,
                      shape: CNNShape) -> float:
    """Mean cross-entropy loss of batch ``(X, y)``; its gradient is written into ``grad``."""
    p, x, yy = _check(params, X, y, shape)
    g = check_float_array("grad", grad, ndim=1)
    if g.shape != p.shape or g.dtype != p.dtype:
        raise ValueError(f"grad: must match params ({p.size} x {p.dtype}), got {g.size} x {g.dtype}")
    check_writeable("grad", grad)
    loss, _ = _cnn(p, g, x, yy, shape.side, shape.filters, shape.n_hidden, shape.n_out,
                   float(np.finfo(p.dtype).tiny), True)
    return float(loss) / max(int(x.shape[0]), 1)


def cnn_accuracy(params: np.ndarray, X: np.ndarray, y: np.ndarray, shape: CNNShape) -> float:
    """Fraction of rows of ``X`` whose arg-max logit is the label (0.0 for an empty set)."""
    p, x, yy = _check(params, X, y, shape)
    if x.shape[0] == 0:
        return 0.0
    _, hits = _cnn(p, np.empty(0), x, yy, shape.side, shape.filters, shape.n_hidden,
                   shape.n_out, 0.0, False)
    return int(hits) / int(x.shape[0])
