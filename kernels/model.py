"""A small real model for co-simulated training: softmax regression and a one-hidden-layer MLP.

Parameters live in ONE flat vector (so the SGD, EASGD, allreduce and fusion kernels
act on them directly); :class:`ModelShape` says how it is cut:
``W1 (n_in, n_hidden), b1 (n_hidden), W2 (n_hidden, n_out), b2 (n_out)`` for the
MLP (ReLU hidden layer), ``W (n_in, n_out), b (n_out)`` for softmax regression
(``n_hidden = 0``).  The loss is the mean softmax cross-entropy over the batch.

Softmax probabilities below the dtype's smallest normal number are flushed to
zero, as TensorFlow's CPU kernels do (they run with flush-to-zero set). Without
it, a trained model's confident predictions underflow into subnormal numbers,
which x86 cores handle in microcode: on this project's 2-core VM the MLP's step
slowed from 83 us to as much as 113 us as training went on, so a step timed on
freshly initialised parameters (the calibration's) did not describe a step of
the training. The change to the gradient is below the smallest normal number.

Examples
--------
>>> import numpy as np
>>> shape = ModelShape(n_in=4, n_hidden=0, n_out=3)
>>> params = init_params(shape, seed=0)
>>> X = np.ones((2, 4)); y = np.array([0, 2])
>>> grad = np.empty_like(params)
>>> round(loss_and_grad(params, grad, X, y, shape), 4) > 0
True
>>> 0.0 <= accuracy(params, X, y, shape) <= 1.0
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.kernels._checks import check_float_array, check_int, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["ModelShape", "accuracy", "forward", "init_params", "loss_and_grad"]


@dataclass(frozen=True)
class ModelShape:
    """Layer sizes of the small model; ``n_hidden = 0`` means softmax regression."""

    n_in: int
    n_hidden: int
    n_out: int

    def __post_init__(self) -> None:
        check_int("n_in", self.n_in, low=1)
        check_int("n_hidden", self.n_hidden, low=0)
        check_int("n_out", self.n_out, low=2)

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector.

        >>> ModelShape(64, 32, 10).n_params
        2410
        """
        if self.n_hidden == 0:
            return self.n_in * self.n_out + self.n_out
        return self.n_in * self.n_hidden + self.n_hidden + self.n_hidden * self.n_out + self.n_out


@njit()
def _affine(X: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X @ W + b`` (loops in i-k-j order, so the inner loop is contiguous)."""
    Z = np.empty((X.shape[0], W.shape[1]), dtype=X.dtype)
    for i in range(X.shape[0]):
        for j in range(W.shape[1]):
            Z[i, j] = b[j]
        for k in range(X.shape[1]):
            a = X[i, k]
            for j in range(W.shape[1]):
                Z[i, j] += a * W[k, j]
    return Z


@njit()
def _mm_tn(A: np.ndarray, B: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = (A.T @ B).ravel()`` for C-contiguous ``A (m, p)``, ``B (m, q)``."""
    p = A.shape[1]
    q = B.shape[1]
    for t in range(p * q):
        out[t] = 0.0
    for k in range(A.shape[0]):
        for i in range(p):
            a = A[k, i]
            for j in range(q):
                out[i * q + j] += a * B[k, j]


@njit()
def _mm_nt(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B.T`` for C-contiguous ``A (m, q)``, ``B (p, q)``."""
    C = np.empty((A.shape[0], B.shape[0]), dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[j, k]
            C[i, j] = s
    return C


@njit()
def _colsum(D: np.ndarray, out: np.ndarray) -> None:
    for j in range(D.shape[1]):
        out[j] = 0.0
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            out[j] += D[i, j]


@njit()
def _logits(p: np.ndarray, X: np.ndarray, n_in: int, h: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits and the hidden pre-activation ``Z`` (``Z`` is empty for softmax regression)."""
    if h == 0:
        W = p[: n_in * n_out].reshape((n_in, n_out))
        b = p[n_in * n_out: n_in * n_out + n_out]
        return _affine(X, W, b), np.empty((0, 0), dtype=X.dtype)
    o = n_in * h
    W1 = p[:o].reshape((n_in, h))
    b1 = p[o: o + h]
    W2 = p[o + h: o + h + h * n_out].reshape((h, n_out))
    b2 = p[o + h + h * n_out: o + h + h * n_out + n_out]
    Z = _affine(X, W1, b1)
    H = np.empty_like(Z)
    for i in range(Z.shape[0]):
        for j in range(h):
            H[i, j] = Z[i, j] if Z[i, j] > 0 else 0.0
    return _affine(H, W2, b2), Z


@njit()
def _loss_grad(p: np.ndarray, g: np.ndarray, X: np.ndarray, y: np.ndarray, n_in: int, h: int, n_out: int,
               tiny: float) -> float:
    B: int = X.shape[0]
    L, Z = _logits(p, X, n_in, h, n_out)
    loss = 0.0
    D = np.empty_like(L)
    for i in range(B):
        m = L[i, 0]
        for j in range(1, n_out):
            m = max(m, L[i, j])
        s = 0.0
        for j in range(n_out):
            e = np.exp(L[i, j] - m)
            D[i, j] = e
            s += e
        loss += np.log(s) + m - L[i, y[i]]
        for j in range(n_out):
            D[i, j] = D[i, j] / s / B
            if D[i, j] < tiny:  # flush to zero, as TensorFlow's CPU kernels do (FTZ)
                D[i, j] = 0.0
        D[i, y[i]] -= 1.0 / B
    if h == 0:
        _mm_tn(X, D, g[: n_in * n_out])
        _colsum(D, g[n_in * n_out:])
        return float(loss) / max(B, 1)
    o = n_in * h
    W2 = p[o + h: o + h + h * n_out].reshape((h, n_out))
    H = np.empty_like(Z)
    for i in range(B):
        for j in range(h):
            H[i, j] = Z[i, j] if Z[i, j] > 0 else 0.0
    _mm_tn(H, D, g[o + h: o + h + h * n_out])
    _colsum(D, g[o + h + h * n_out:])
    dZ = _mm_nt(D, W2)
    for i in range(B):
        for j in range(h):
            if Z[i, j] <= 0:
                dZ[i, j] = 0.0
    _mm_tn(X, dZ, g[:o])
    _colsum(dZ, g[o: o + h])
    return float(loss) / max(B, 1)


@njit()
def _accuracy(p: np.ndarray, X: np.ndarray, y: np.ndarray, n_in: int, h: int, n_out: int) -> int:
    L, _ = _logits(p, X, n_in, h, n_out)
    hits = 0
    for i in range(X.shape[0]):
        best = 0
        for j in range(1, n_out):
            if L[i, j] > L[i, best]:
                best = j
        if best == y[i]:
            hits += 1
    return hits


def _check(params: np.ndarray, X: np.ndarray, y: np.ndarray | None,
           shape: ModelShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(shape, ModelShape):
        raise TypeError(f"shape: must be a ModelShape, got {type(shape).__name__}")
    p = check_float_array("params", params, ndim=1)
    if p.size != shape.n_params:
        raise ValueError(f"params: must have {shape.n_params} elements for {shape}, got {p.size}")
    x = check_float_array("X", X, ndim=2)
    if x.shape[1] != shape.n_in:
        raise ValueError(f"X: must have {shape.n_in} columns, got shape {x.shape}")
    if x.dtype != p.dtype:
        raise TypeError(f"X: dtype {x.dtype} does not match params dtype {p.dtype}")
    if y is None:
        return p, x, np.empty(0, dtype=np.int64)
    if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or y.shape != (x.shape[0],):
        raise ValueError(f"y: must be an integer array of shape ({x.shape[0]},)")
    if y.size and (y.min() < 0 or y.max() >= shape.n_out):
        raise ValueError(f"y: labels must be in [0, {shape.n_out}), got range [{y.min()}, {y.max()}]")
    return p, x, np.ascontiguousarray(y, dtype=np.int64)


def init_params(shape: ModelShape, seed: int, dtype: type = np.float64) -> np.ndarray:
    """Seeded initial parameters: He-normal weights, zero biases.

    >>> init_params(ModelShape(2, 0, 2), seed=1).shape
    (6,)
    """
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype: must be float32 or float64, got {np.dtype(dtype)}")
    p: np.ndarray = np.zeros(shape.n_params, dtype=dtype)
    if shape.n_hidden == 0:
        p[: shape.n_in * shape.n_out] = rng.normal(0, np.sqrt(1 / shape.n_in), shape.n_in * shape.n_out)
    else:
        o = shape.n_in * shape.n_hidden
        p[:o] = rng.normal(0, np.sqrt(2 / shape.n_in), o)
        k = shape.n_hidden * shape.n_out
        p[o + shape.n_hidden: o + shape.n_hidden + k] = rng.normal(0, np.sqrt(2 / shape.n_hidden), k)
    return p


def forward(params: np.ndarray, X: np.ndarray, shape: ModelShape) -> np.ndarray:
    """Return the logits ``(batch, n_out)``."""
    p, x, _ = _check(params, X, None, shape)
    return _logits(p, x, shape.n_in, shape.n_hidden, shape.n_out)[0]


def loss_and_grad(params: np.ndarray, grad: np.ndarray, X: np.ndarray, y: np.ndarray,
                  shape: ModelShape) -> float:
    """Mean cross-entropy loss of batch ``(X, y)``; its gradient is written into ``grad``."""
    p, x, yy = _check(params, X, y, shape)
    g = check_float_array("grad", grad, ndim=1)
    if g.shape != p.shape or g.dtype != p.dtype:
        raise ValueError(f"grad: must match params ({p.size} x {p.dtype}), got {g.size} x {g.dtype}")
    check_writeable("grad", grad)
    return float(_loss_grad(p, g, x, yy, shape.n_in, shape.n_hidden, shape.n_out,
                            float(np.finfo(p.dtype).tiny)))


def accuracy(params: np.ndarray, X: np.ndarray, y: np.ndarray, shape: ModelShape) -> float:
    """Fraction of rows of ``X`` whose arg-max logit is the label (0.0 for an empty set)."""
    p, x, yy = _check(params, X, y, shape)
    if x.shape[0] == 0:
        return 0.0
    return int(_accuracy(p, x, yy, shape.n_in, shape.n_hidden, shape.n_out)) / int(x.shape[0])
