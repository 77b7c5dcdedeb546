"""Co-simulation: real parameters and the real numba kernels, in simulated event order.

Every simulated worker holds a real parameter vector of the small model of
:mod:`dlscale.kernels` (softmax regression or a one-hidden-layer MLP) and draws its
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
>>> from dlscale.simulator.training_run import simulate_training
>>> r = simulate_training(get_cluster("cori-knl"), get_workload("googlenet"), 4,
...                       algorithm="async-easgd", iterations=30, mode="cosim",
...                       efficiency=False, cosim_options={"lr": 0.3})
>>> r.surrogate.startswith("digits"), r.curve[-1]["accuracy"] > 0.5
(True, True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import dlscale.kernels as K
from dlscale.perfmodel.errors import ConfigError

from .schedules_lr import Schedule, make_schedule
from .training_common import RunContext

__all__ = ["CosimOptions", "Numerics", "make_numerics"]


@dataclass(frozen=True)
class CosimOptions:
    """Settings of the co-simulated numerics.

    Attributes
    ----------
    dataset : {"digits", "synthetic"}
    hidden : int
        Hidden units of the MLP (0: softmax regression).
    batch : int
        Samples per worker per step.
    lr : float
        Base learning rate.
    lr_schedule : str
        :func:`~.schedules_lr.make_schedule` spec.
    beta : float
        EASGD moving rate: the elastic coefficient is ``alpha = beta / P`` (Zhang et
        al. 2015 use ``beta = 0.9``).
    momentum : float
        Momentum of MSGD / MEASGD / sync SGD (0: the workload's).
    eval_every : int
        Evaluate after this many iterations (all workers' steps).
    chunks : int
        Hogwild read-modify-write granularity (chunks of the center).
    synthetic_samples : int
        Size of the synthetic set.
    """

    dataset: str = "digits"
    hidden: int = 32
    batch: int = 16
    lr: float = 0.05
    lr_schedule: str = "constant"
    beta: float = 0.9
    momentum: float = 0.0
    eval_every: int = 5
    chunks: int = 8
    synthetic_samples: int = 4000


class Numerics:
    """Real arrays of every worker and the master (see module docstring)."""

    def __init__(self, ctx: RunContext, opts: CosimOptions, seed: int) -> None:
        if opts.dataset == "digits":
            data = K.load_digits_split(seed=seed)
        elif opts.dataset == "synthetic":
            data = K.synthetic_classification(opts.synthetic_samples, seed=seed)
        else:
            raise ConfigError(f"cosim dataset: must be 'digits' or 'synthetic', got "
                              f"{opts.dataset!r}")
        for name in ("batch", "eval_every", "chunks"):
            if int(getattr(opts, name)) < 1:
                raise ConfigError(f"cosim {name}: must be >= 1, got {getattr(opts, name)!r}")
        self.alg = ctx.algorithm
        self.P = ctx.ranks
        self.data, self.opts = data, opts
        self.shape = K.ModelShape(data.n_features, opts.hidden, data.n_classes)
        self.schedule: Schedule = make_schedule(opts.lr_schedule)
        self.mu = opts.momentum or ctx.workload.momentum
        self.alpha = min(opts.beta / self.P, 1.0)
        self.rho = self.alpha / opts.lr
        init = K.init_params(self.shape, seed)
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
        net = f"{opts.dataset} {'MLP' if opts.hidden else 'softmax'} " \
              f"{self.shape.n_in}-{opts.hidden}-{self.shape.n_out}" if opts.hidden else \
              f"{opts.dataset} softmax {self.shape.n_in}-{self.shape.n_out}"
        self.label = f"{net} (surrogate numerics; timing of {model} on {ctx.cluster.name})"

    # -- helpers -----------------------------------------------------------------------
    def _lr(self) -> float:
        return self.schedule(self.steps // self.P, self.opts.lr)

    def _grad(self, w: int, at: np.ndarray) -> None:
        idx = self.rngs[w].integers(0, len(self.data.y_train), self.opts.batch)
        K.loss_and_grad(at, self.g[w], self.data.X_train[idx], self.data.y_train[idx],
                        self.shape)

    def _evaluated(self) -> np.ndarray:
        return self.x[0] if self.alg == "sync-sgd" else self.center

    def _record(self, t: float) -> None:
        p = self._evaluated()
        loss = K.loss_and_grad(p, self.tmp, self.data.X_test, self.data.y_test, self.shape)
        acc = K.accuracy(p, self.data.X_test, self.data.y_test, self.shape)
        self.curve.append({"iteration": self.steps / self.P, "time_s": float(t),
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
            out["ensemble_accuracy"] = float(K.accuracy(avg, self.data.X_test,
                                                        self.data.y_test, self.shape))
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
    for name, lo, hi in (("lr", 0.0, math.inf), ("beta", 0.0, 1.0), ("momentum", 0.0, 1.0)):
        v = getattr(opts, name)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not (ok and lo <= v and (v <= hi if hi == 1.0 and name == "beta" else v < hi)):
            allowed = ">= 0" if hi == math.inf else ("in [0, 1]" if name == "beta" else "in [0, 1)")
            raise ConfigError(f"cosim options: {name} must be a finite number {allowed}, "
                              f"got {v!r}")
    for name in ("batch", "eval_every", "chunks", "synthetic_samples"):
        v = getattr(opts, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"cosim options: {name} must be an integer >= 1, got {v!r}")
    make_schedule(opts.lr_schedule)
    return opts


def make_numerics(ctx: RunContext, options: dict, seed: int) -> Numerics:
    """Build the numerics of a co-simulated run from :class:`CosimOptions` fields."""
    return Numerics(ctx, check_cosim_options(options), seed)
