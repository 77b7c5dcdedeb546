"""Plain numpy references for the kernels (slow, obvious, no numba)."""

from __future__ import annotations

import numpy as np


def easgd_worker(x, g, c, lr, rho):
    return x - lr * (g + rho * (x - c))


def center_async(c, x, lr, rho):
    return c + (lr * rho) * (x - c)


def center_sync(c, s, p, lr, rho):
    return c + (lr * rho) * (s - p * c)


def elastic_exchange(x, c, alpha):
    d = alpha * (x - c)
    return x - d, c + d


def measgd(x, v, g, c, lr, rho, mu):
    v2 = mu * v - lr * g
    return x + v2 - lr * rho * (x - c), v2


def sgd(x, g, lr, wd):
    return x - lr * (g + wd * x)


def momentum_sgd(x, v, g, lr, mu, wd, nesterov):
    d = g + wd * x
    v2 = mu * v + d
    step = d + mu * v2 if nesterov else v2
    return x - lr * step, v2


def chunk_sizes(n, p):
    return [n // p + (1 if k < n % p else 0) for k in range(p)]


def ring_sum_same_order(X):
    """Sum of the rows of X in the ring's order: chunk c is accumulated over ranks c, c+1, ... (mod P)."""
    p, n = X.shape
    out = np.empty(n, dtype=X.dtype)
    bounds = np.concatenate(([0], np.cumsum(chunk_sizes(n, p)))).astype(int)
    for c in range(p):
        lo, hi = bounds[c], bounds[c + 1]
        acc = X[c % p, lo:hi].copy()
        for k in range(1, p):
            acc = X[(c + k) % p, lo:hi] + acc
        out[lo:hi] = acc
    return out


def ring_sent_elements(n, p):
    """Per-rank elements sent by ring allreduce: all chunks but r+1 (reduce-scatter), all but r+2 (allgather)."""
    s = chunk_sizes(n, p)
    if p == 1:
        return [0]
    return [(n - s[(r + 1) % p]) + (n - s[(r + 2) % p]) for r in range(p)]


def tree_sent_elements(n, p):
    """Per-rank elements sent by binomial reduce + broadcast: each non-root sends n once in the reduce;
    in the broadcast every rank sends n per child."""
    sent = [0] * p
    for r in range(1, p):
        sent[r] += n
    mask = 1
    while mask < p:
        for r in range(0, p - mask, 2 * mask):
            sent[r] += n
        mask *= 2
    return sent


def densify(indices, values, n_rows):
    out = np.zeros((n_rows, values.shape[1]), dtype=values.dtype)
    np.add.at(out, indices, values)
    return out


def model_loss_grad(params, X, y, n_in, h, n_out):
    """Mean softmax cross-entropy and its gradient, flat layout as dlscale.kernels.model."""
    B = X.shape[0]
    if h == 0:
        W = params[: n_in * n_out].reshape(n_in, n_out)
        b = params[n_in * n_out:]
        L = X @ W + b
    else:
        o = n_in * h
        W1 = params[:o].reshape(n_in, h)
        b1 = params[o: o + h]
        W2 = params[o + h: o + h + h * n_out].reshape(h, n_out)
        b2 = params[o + h + h * n_out:]
        Z = X @ W1 + b1
        H = np.maximum(Z, 0)
        L = H @ W2 + b2
    m = L.max(axis=1, keepdims=True)
    E = np.exp(L - m)
    S = E.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(S[:, 0]) + m[:, 0] - L[np.arange(B), y]))
    D = E / S
    D[np.arange(B), y] -= 1
    D /= B
    if h == 0:
        return loss, np.concatenate([(X.T @ D).ravel(), D.sum(0)])
    dZ = (D @ W2.T) * (Z > 0)
    return loss, np.concatenate([(X.T @ dZ).ravel(), dZ.sum(0), (H.T @ D).ravel(), D.sum(0)])


def cnn_loss_grad_hits(params, X, y, side, F, H, n_out):
    """Mean loss, gradient and hits of dlscale.kernels.cnn's network, in plain numpy."""
    B, c = X.shape[0], side - 2
    q = c // 2
    nf = F * q * q
    o = np.cumsum([0, F * 9, F, nf * H, H, H * n_out, n_out])
    K = params[o[0]:o[1]].reshape(F, 3, 3)
    kb = params[o[1]:o[2]]
    W1 = params[o[2]:o[3]].reshape(nf, H)
    b1 = params[o[3]:o[4]]
    W2 = params[o[4]:o[5]].reshape(H, n_out)
    b2 = params[o[5]:o[6]]
    img = X.reshape(B, side, side)
    patches = np.stack([img[:, u:u + c, v:v + c] for u in range(3) for v in range(3)], -1)
    Zpre = np.einsum("brsk,fk->bfrs", patches, K.reshape(F, 9)) + kb[None, :, None, None]
    Z = np.maximum(Zpre, 0)
    Zc = Z[:, :, :2 * q, :2 * q]
    P = 0.25 * Zc.reshape(B, F, q, 2, q, 2).sum(axis=(3, 5)).reshape(B, nf)
    Apre = P @ W1 + b1
    A = np.maximum(Apre, 0)
    L = A @ W2 + b2
    hits = int(np.sum(np.argmax(L, axis=1) == y))
    m = L.max(axis=1, keepdims=True)
    E = np.exp(L - m)
    S = E.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(S[:, 0]) + m[:, 0] - L[np.arange(B), y]))
    D = E / S
    D[np.arange(B), y] -= 1
    D /= B
    dA = (D @ W2.T) * (Apre > 0)
    dP = (dA @ W1.T).reshape(B, F, q, 1, q, 1)
    dZ = np.zeros_like(Z)
    dZ[:, :, :2 * q, :2 * q] = np.broadcast_to(0.25 * dP, (B, F, q, 2, q, 2)).reshape(
        B, F, 2 * q, 2 * q)
    dZ *= Zpre > 0
    gK = np.einsum("brsk,bfrs->fk", patches, dZ).ravel()
    grad = np.concatenate([gK, dZ.sum(axis=(0, 2, 3)), (P.T @ dA).ravel(), dA.sum(0),
                           (A.T @ D).ravel(), D.sum(0)])
    return loss, grad, hits
