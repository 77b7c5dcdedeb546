"""Data for the small model: scikit-learn's 8x8 digits (no download) and a seeded synthetic set.

scikit-learn is a dependency of dlscale (the extra ``dlscale[data]`` is kept, empty); it
is imported only when the digits are asked for.

Examples
--------
>>> ds = synthetic_classification(200, n_features=5, n_classes=3, seed=0)
>>> ds.X_train.shape, ds.X_test.shape, ds.n_classes
((150, 5), (50, 5), 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlscale.kernels._checks import check_int, check_scalar

__all__ = ["Dataset", "digits_missing", "load_digits_split", "synthetic_classification"]


@dataclass(frozen=True)
class Dataset:
    """A train/test split: float features (rows) and int64 labels ``0 .. n_classes-1``."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    @property
    def n_features(self) -> int:
        """Columns of ``X``."""
        return int(self.X_train.shape[1])


def _dtype(dtype: type) -> np.dtype:
    d = np.dtype(dtype)
    if d not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype: must be float32 or float64, got {d}")
    return d


def _split(X: np.ndarray, y: np.ndarray, test_fraction: float, seed: int, n_classes: int) -> Dataset:
    f = check_scalar("test_fraction", test_fraction, np.float64, high=1.0, high_inclusive=False)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = round(float(f) * len(y))
    te, tr = perm[:n_test], perm[n_test:]
    return Dataset(np.ascontiguousarray(X[tr]), y[tr].astype(np.int64), np.ascontiguousarray(X[te]),
                   y[te].astype(np.int64), n_classes)


_MISSING = ("the 8x8 digits data set needs scikit-learn (a dependency of dlscale), which "
            "cannot be imported: pip install scikit-learn")


def digits_missing() -> str | None:
    """Why the digits data set cannot be loaded, or None when it can.

    Commands that need it (co-simulation, calibration's model step) ask this before
    any work, so a missing scikit-learn is one line rather than a traceback after
    minutes of measuring.

    Examples
    --------
    >>> digits_missing() is None
    True
    """
    try:
        from sklearn.datasets import load_digits  # noqa: F401
    except ImportError:
        return _MISSING
    return None


def load_digits_split(test_fraction: float = 0.25, seed: int = 0, dtype: type = np.float64) -> Dataset:
    """The 1797 8x8 handwritten digits of scikit-learn, pixels scaled to [0, 1], split at random.

    Raises ImportError naming ``pip install scikit-learn`` if scikit-learn is missing
    (a dependency of dlscale; :func:`digits_missing` says so before any work).
    """
    d = _dtype(dtype)
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_MISSING) from exc
    X, y = load_digits(return_X_y=True)
    return _split((X / 16.0).astype(d), y, test_fraction, seed, 10)


def synthetic_classification(n_samples: int, n_features: int = 64, n_classes: int = 10, seed: int = 0,
                             dtype: type = np.float64, separation: float = 3.0,
                             test_fraction: float = 0.25) -> Dataset:
    """Seeded Gaussian blobs: class means ``~ N(0, separation^2 / n_features)`` per coordinate, unit noise.

    Same arguments and seed give the same data bit for bit; any size fits memory-wise
    into large co-simulated runs.
    """
    n = check_int("n_samples", n_samples, low=1)
    nf = check_int("n_features", n_features, low=1)
    nc = check_int("n_classes", n_classes, low=2)
    sep = check_scalar("separation", separation, np.float64)
    d = _dtype(dtype)
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, sep / np.sqrt(nf), size=(nc, nf))
    y = rng.integers(0, nc, size=n)
    X = (means[y] + rng.normal(size=(n, nf))).astype(d)
    return _split(X, y, test_fraction, seed + 1, nc)
