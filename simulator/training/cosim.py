"""Co-simulation: real parameters and the real numba kernels, in simulated event order.

Every simulated worker holds a real parameter vector of the small model of
:mod:`dlscale.kernels` (softmax regression, a one-hidden-layer MLP or a small CNN) and draws its
own mini-batches from the digits data (or the seeded synthetic set); the master holds
the center variable (EASGD family) or the weights (SGD baselines). The training
processes call the hooks below at the simulated instants of the events, so the
ordering, the staleness of the weights a gradient is computed on, and in Hogwild the
updates overwritten by concurrent ones, are those of the simulated cluster:

- ``local_step(w, k)``: worker ``w`` computes its gradient on the weights it holds
  and applies its local update (SGD; Nesterov momentum for MEASGD; the elastic step
  for Sync EASGD), or keeps the gradient for the master (SGD baselines);
- ``exchange(w)``: the locked master applies worker ``w``'s exchange atomically
  (:func:`~dlscale.kernels.easgd_elastic_exchange`, :func:`~dlscale.kernels.sgd_update`,
  :func:`~dlscale.kernels.momentum_sgd_update`) and the worker pulls the result;
- ``hog_payload`` / ``hog_read`` / ``hog_write`` / ``hog_pull``: the lock-free master,
  a read-modify-write of one chunk of the center at a time (a chunk read before
  another update's write to it and written after overwrites that update);
- ``sync_step`` (Sync SGD: gradients of all workers summed by the ring allreduce of
  :func:`~dlscale.kernels.allreduce_inplace`, then momentum SGD), ``round_begin`` /
  ``round_end`` (Sync EASGD: sum of the workers, then the synchronous center update).

When the timed workload is a catalog model (say GoogLeNet), the numerics are a
surrogate, and the result says so.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training.run import simulate_training
>>> r = simulate_training(get_cluster("cori-knl"), get_workload("googlenet"), 4,
...                       algorithm="async-easgd", iterations=30, mode="cosim",
...                       efficiency=False, cosim_options={"lr": 0.3})
>>> r.surrogate.startswith("digits"), r.curve[-1]["accuracy"] > 0.5
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import dlscale.kernels as K
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.workload import EASGD_FAMILY
from dlscale.simulator.training.common import RunContext
from dlscale.simulator.training.schedules_lr import Schedule, make_schedule

__all__ = ["CosimOptions", "Numerics", "check_beta", "make_numerics"]


@dataclass(frozen=True)
class CosimOptions:
    """Settings of the co-simulated numerics.

    Attributes
    ----------
    dataset : {"digits", "synthetic"}
    model : {"mlp", "cnn"}
        The one-hidden-layer MLP (softmax regression with ``hidden = 0``) of
        :mod:`dlscale.kernels.model`, or the small CNN of :mod:`dlscale.kernels.cnn`
        (needs square images: the digits are 8 x 8).
    filters : int
        Convolution filters of the CNN.
    hidden : int
        Hidden units of the MLP (0: softmax regression) or of the CNN's dense layer.
    batch : int
        Samples per worker per step.
    lr : float
        Base learning rate.
    lr_schedule : str
        :func:`~dlscale.simulator.training.schedules_lr.make_schedule` spec.
    beta : float
        EASGD moving rate: the elastic coefficient is ``alpha = beta / P`` (Zhang et
        al. 2015 use ``beta = 0.9``). Allowed: ``0 <= beta <= P`` (:func:`check_beta`).
    momentum : float
        Momentum of MSGD / MEASGD / sync SGD (0: the workload's).
    eval_every : int
        Evaluate after this many iterations (all workers' steps).
    chunks : int
        Hogwild read-modify-write granularity (chunks of the center).
    synthetic_samples : int
        Size of the synthetic set.
    validation_fraction : float
        Fraction of the training split held out as a validation split (0: none; the
        model then trains on the whole training split). Drawn with its own seeded
        permutation, so it never overlaps the test split.
    eval_split : {"test", "validation"}
        Which split the curve's accuracy and loss are measured on (a tuning search
        measures on the validation split, so the test split plays no part in it).
    data_seed : int or None
        Seed of the data split (train / validation / test); None: the run's seed.
        Repeats over run seeds keep one split with a fixed ``data_seed``.
    """

    dataset: str = "digits"
    model: str = "mlp"
    filters: int = 8
    hidden: int = 32
    batch: int = 16
    lr: float = 0.05
    lr_schedule: str = "constant"
    beta: float = 0.9
    momentum: float = 0.0
    eval_every: int = 5
    chunks: int = 8
    synthetic_samples: int = 4000
    validation_fraction: float = 0.0
    eval_split: str = "test"
    data_seed: int | None = None


def _holdout(data: K.Dataset, fraction: float, seed: int) -> tuple[K.Dataset, tuple]:
    """Split ``fraction`` of the training rows off as a validation set (seeded)."""
    n = len(data.y_train)
    perm = np.random.default_rng([seed, 0x7A1]).permutation(n)
    nv = round(fraction * n)
    if not 0 < nv < n:
        raise ConfigError(f"cosim validation_fraction: {fraction!r} leaves no training or no "
                          f"validation rows of {n}")
    va, tr = np.sort(perm[:nv]), np.sort(perm[nv:])
    train = K.Dataset(np.ascontiguousarray(data.X_train[tr]), data.y_train[tr],
                      data.X_test, data.y_test, data.n_classes)
    return train, (np.ascontiguousarray(data.X_train[va]), data.y_train[va])


class Numerics:
    """Real arrays of every worker and the master (see module docstring)."""

    #: Loss-and-gradient and accuracy kernels of the model (MLP or CNN).
    _loss: Callable[..., float]
    _acc: Callable[..., float]

    def __init__(self, ctx: RunContext, opts: CosimOptions, seed: int) -> None:
        for name in ("batch", "eval_every", "chunks"):
            if int(getattr(opts, name)) < 1:
                raise ConfigError(f"cosim {name}: must be >= 1, got {getattr(opts, name)!r}")
        if opts.eval_split not in ("test", "validation"):
            raise ConfigError(f"cosim eval_split: must be 'test' or 'validation', got "
                              f"{opts.eval_split!r}")
        if not 0.0 <= opts.validation_fraction < 1.0:
            raise ConfigError(f"cosim validation_fraction: must be in [0, 1), got "
                              f"{opts.validation_fraction!r}")
        if opts.eval_split == "validation" and opts.validation_fraction == 0.0:
            raise ConfigError("cosim eval_split: 'validation' needs validation_fraction > 0")
        dseed = seed if opts.data_seed is None else int(opts.data_seed)
        if opts.dataset == "digits":
            data = K.load_digits_split(seed=dseed)
        elif opts.dataset == "synthetic":
            data = K.synthetic_classification(opts.synthetic_samples, seed=dseed)
        else:
            raise ConfigError(f"cosim dataset: must be 'digits' or 'synthetic', got "
                              f"{opts.dataset!r}")
        self.eval_X, self.eval_y = data.X_test, data.y_test
        if opts.validation_fraction > 0:
            data, val = _holdout(data, opts.validation_fraction, dseed)
            if opts.eval_split == "validation":
                self.eval_X, self.eval_y = val
        self.alg = ctx.algorithm
        self.P = ctx.ranks
        self.data, self.opts = data, opts
        self.shape, init, net = self._model(data, opts, seed)
        self.schedule: Schedule = make_schedule(opts.lr_schedule)
        self.mu = opts.momentum or ctx.workload.momentum
        self.alpha = check_beta(opts.beta, self.P, self.alg) if self.alg in EASGD_FAMILY else 0.0
        self.rho = self.alpha / opts.lr
        n = init.size
        self.center = init.copy()
        self.x = np.tile(init, (self.P, 1))           # worker parameters
        self.g = np.zeros((self.P, n))                # worker gradients
        self.v = np.zeros((self.P, n))                # worker velocities (MEASGD)
        self.vc = np.zeros(n)                         # master / sync velocity
        self.tmp = np.zeros(n)
        self.rngs = [np.random.default_rng([seed, w]) for w in range(self.P)]
        self.chunks = min(opts.chunks, n)
        self.bounds = np.linspace(0, n, self.chunks + 1).round().astype(int)
        self.steps = 0
        self.curve: list[dict] = []
        self.snapshots: list[np.ndarray] = []
        self._sum = np.zeros(n)
        self._next_eval = opts.eval_every * self.P
        model = ctx.workload.model.name
        self.label = f"{net} (surrogate numerics; timing of {model} on {ctx.cluster.name})"

    def _model(self, data: K.Dataset, opts: CosimOptions, seed: int) -> tuple:
        """Shape, initial parameters and name of the model; its loss and accuracy kernels."""
        nf, nc = data.n_features, data.n_classes
        if opts.model == "cnn":
            side = math.isqrt(nf)
            if side * side != nf or side < 4 or opts.hidden < 1:
                raise ConfigError(f"cosim model: 'cnn' needs square images of side >= 4 and "
                                  f"hidden >= 1, got {nf} features and hidden {opts.hidden}")
            cnn = K.CNNShape(side, int(opts.filters), int(opts.hidden), nc)
            self._loss, self._acc = K.cnn_loss_and_grad, K.cnn_accuracy
            return cnn, K.cnn_init_params(cnn, seed), \
                f"{opts.dataset} CNN {side}x{side}-conv3x3x{opts.filters}-pool2-" \
                f"{opts.hidden}-{nc}"
        if opts.model != "mlp":
            raise ConfigError(f"cosim model: must be 'mlp' or 'cnn', got {opts.model!r}")
        shape = K.ModelShape(nf, opts.hidden, nc)
        self._loss, self._acc = K.loss_and_grad, K.accuracy
        name = f"{opts.dataset} MLP {nf}-{opts.hidden}-{nc}" if opts.hidden else \
            f"{opts.dataset} softmax {nf}-{nc}"
        return shape, K.init_params(shape, seed), name

    # -- helpers -----------------------------------------------------------------------
    def _lr(self) -> float:
        return self.schedule(self.steps // self.P, self.opts.lr)

    def _grad(self, w: int, at: np.ndarray) -> None:
        idx = self.rngs[w].integers(0, len(self.data.y_train), self.opts.batch)
        self._loss(at, self.g[w], self.data.X_train[idx], self.data.y_train[idx],
                        self.shape)

    def _evaluated(self) -> np.ndarray:
        return self.x[0] if self.alg == "sync-sgd" else self.center

    def _record(self, t: float) -> None:
        p = self._evaluated()
        loss = self._loss(p, self.tmp, self.eval_X, self.eval_y, self.shape)
        acc = self._acc(p, self.eval_X, self.eval_y, self.shape)
        self.curve.append({"iteration": self.steps / self.P, "time_s": float(t),
                           "samples": self.steps * self.opts.batch,
                           "loss": float(loss), "accuracy": float(acc)})

    def step_done(self, w: int, k: int, t: float) -> None:
        """One worker step finished at simulated time ``t``."""
        self.steps += 1
        it = self.steps // self.P
        if self.steps % self.P == 0 and self.schedule.snapshot(it - 1):
            self.snapshots.append(self._evaluated().copy())
        if self.steps >= self._next_eval:
            self._next_eval += self.opts.eval_every * self.P
            self._record(t)

    def step_done_all(self, k: int, t: float) -> None:
        """All workers finished step ``k`` (lock-step algorithms)."""
        for w in range(self.P):
            self.step_done(w, k, t)

    # -- asynchronous and round-based algorithms ----------------------------------------
    def local_step(self, w: int, k: int) -> None:
        """Worker ``w``'s gradient and local update."""
        lr, x = self._lr(), self.x[w]
        if self.alg == "async-measgd":
            look = K.nesterov_lookahead(x, self.v[w], self.mu, out=self.tmp)
            self._grad(w, look)
            K.measgd_worker_update(x, self.v[w], self.g[w], x, lr, 0.0, self.mu)
        elif self.alg == "sync-easgd":
            self._grad(w, x)
            K.easgd_worker_update(x, self.g[w], self.center, lr, self.rho)
        elif self.alg in ("easgd", "async-easgd", "hogwild-easgd"):
            self._grad(w, x)
            K.sgd_update(x, self.g[w], lr)
        else:                                   # SGD baselines: the master applies it
            self._grad(w, x)

    def exchange(self, w: int) -> None:
        """The locked master applies worker ``w``'s exchange; ``w`` pulls the result."""
        if self.alg in ("easgd", "async-easgd", "async-measgd"):
            K.easgd_elastic_exchange(self.x[w], self.center, self.alpha)
            return
        if self.alg == "async-msgd":
            K.momentum_sgd_update(self.center, self.vc, self.g[w], self._lr(), self.mu)
        else:
            K.sgd_update(self.center, self.g[w], self._lr())
        self.x[w] = self.center

    def hog_payload(self, w: int) -> np.ndarray:
        """What worker ``w`` pushes: its weights (EASGD) or its gradient (SGD)."""
        return (self.x[w] if self.alg == "hogwild-easgd" else self.g[w]).copy()

    def hog_read(self, w: int, j: int, payload: np.ndarray) -> tuple:
        """Read chunk ``j`` of the center (start of a read-modify-write)."""
        lo, hi = self.bounds[j], self.bounds[j + 1]
        return self.center[lo:hi].copy(), payload[lo:hi], self._lr()

    def hog_write(self, w: int, j: int, token: tuple) -> None:
        """Write chunk ``j`` back, computed from what was read (end of the RMW)."""
        snap, part, lr = token
        if self.alg == "hogwild-easgd":
            K.easgd_center_update_async(snap, part, self.alpha, 1.0)
        else:
            K.sgd_update(snap, part, lr)
        self.center[self.bounds[j]:self.bounds[j + 1]] = snap

    def hog_pull(self, w: int) -> None:
        """Worker ``w`` reads the center as it is now."""
        if self.alg == "hogwild-easgd":
            K.easgd_elastic_exchange(self.x[w], self.center.copy(), self.alpha)
        else:
            self.x[w] = self.center

    def round_begin(self, b: int) -> None:
        """Sync EASGD: the reduce sums the workers' weights."""
        np.sum(self.x, axis=0, out=self._sum)

    def round_end(self, b: int) -> None:
        """Sync EASGD: the center update from the sum, then the broadcast."""
        K.easgd_center_update_sync(self.center, self._sum, self.P, self._lr(), self.rho)

    # -- synchronous SGD ---------------------------------------------------------------
    def sync_step(self, k: int, t: float) -> None:
        """Every worker's gradient on its replica, ring allreduce (the sum lands in every
        worker's row), and each worker's momentum SGD step on its own replica."""
        for w in range(self.P):
            self._grad(w, self.x[w])
        if self.P > 1:
            K.allreduce_inplace(self.g, "ring")
        self.g /= self.P
        lr = self._lr()
        for w in range(self.P):
            K.momentum_sgd_update(self.x[w], self.v[w], self.g[w], lr, self.mu)
        self.step_done_all(k, t)

    # -- summary -----------------------------------------------------------------------
    def counters(self) -> dict:
        """Final accuracy of the collapsed ensemble, when the schedule takes snapshots."""
        out: dict = {}
        if self.snapshots:
            avg = np.mean(self.snapshots, axis=0)
            out["ensemble_snapshots"] = len(self.snapshots)
            out["ensemble_accuracy"] = float(self._acc(avg, self.eval_X, self.eval_y,
                                                       self.shape))
        return out


def check_cosim_options(options: dict) -> CosimOptions:
    """Validate co-simulation settings (names and ranges) before anything runs.

    Examples
    --------
    >>> check_cosim_options({"lr": -1})
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: cosim options: lr must be a finite number >= 0, got -1
    """
    import math

    names = {f.name for f in dataclasses.fields(CosimOptions)}
    bad = sorted(set(options) - names)
    if bad:
        raise ConfigError(f"cosim options: unknown {', '.join(bad)}; valid: "
                          f"{', '.join(sorted(names))}")
    opts = CosimOptions(**options)
    # beta's upper bound depends on the worker count (check_beta, when the run starts)
    for name, lo, hi in (("lr", 0.0, math.inf), ("beta", 0.0, math.inf),
                         ("momentum", 0.0, 1.0)):
        v = getattr(opts, name)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not (ok and lo <= v < hi):
            allowed = ">= 0" if hi == math.inf else "in [0, 1)"
            raise ConfigError(f"cosim options: {name} must be a finite number {allowed}, "
                              f"got {v!r}")
    for name in ("batch", "eval_every", "chunks", "synthetic_samples"):
        v = getattr(opts, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"cosim options: {name} must be an integer >= 1, got {v!r}")
    make_schedule(opts.lr_schedule)
    return opts


def check_beta(beta: float, workers: int, algorithm: str = "async-easgd") -> float:
    """The elastic rate ``alpha = beta / workers`` of an EASGD run, refused where the
    algorithm's update would overshoot.

    Zhang, Choromanska, LeCun, "Deep learning with Elastic Averaging SGD", NIPS 2015,
    Sec. 3: ``alpha = eta rho`` and ``beta = p alpha``. Each elastic exchange of the
    asynchronous form (their Algorithm 1; here ``easgd``, ``async-easgd``,
    ``async-measgd``, ``hogwild-easgd``) moves a worker and the center by
    ``alpha (x^i - x~)``, a fraction ``alpha`` of their distance: above 1 they pass
    each other, so ``0 <= alpha <= 1``, i.e. ``0 <= beta <= p``; ``beta`` itself may
    exceed 1 (the tuner's 2.7 on 16 workers is ``alpha`` = 0.169). The synchronous
    center update (their Eq. 6, ``sync-easgd``) is the moving average
    ``x~ <- (1 - beta) x~ + beta mean(x^i)``, so there ``0 <= beta <= 1``.

    >>> check_beta(2.7, 16)
    0.16875
    >>> check_beta(2.7, 2)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: cosim options: beta 2.7 on 2 workers gives async-easgd's elastic rate alpha = beta / p = 1.35 > 1; allowed: 0 <= beta <= p = 2 (Zhang et al. NIPS 2015, Sec. 3)
    >>> check_beta(2.7, 16, "sync-easgd")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: cosim options: beta 2.7: sync-easgd's center moves as (1 - beta) center + beta mean; allowed: 0 <= beta <= 1 (Zhang et al. NIPS 2015, Eq. 6)
    """
    alpha = beta / workers
    if algorithm == "sync-easgd" and not 0.0 <= beta <= 1.0:
        raise ConfigError(f"cosim options: beta {beta!r}: sync-easgd's center moves as "
                          "(1 - beta) center + beta mean; allowed: 0 <= beta <= 1 "
                          "(Zhang et al. NIPS 2015, Eq. 6)")
    if not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"cosim options: beta {beta!r} on {workers} workers gives "
                          f"{algorithm}'s elastic rate alpha = beta / p = {alpha:.3g} > 1; "
                          f"allowed: 0 <= beta <= p = {workers} (Zhang et al. NIPS 2015, "
                          "Sec. 3)")
    return alpha


def make_numerics(ctx: RunContext, options: dict, seed: int) -> Numerics:
    """Build the numerics of a co-simulated run from :class:`CosimOptions` fields."""
    return Numerics(ctx, check_cosim_options(options), seed)
