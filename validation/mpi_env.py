"""Lazy access to MPI (mpi4py) and facts about the MPI job: hosts, versions.

``mpi4py`` initialises MPI when ``mpi4py.MPI`` is first imported, so nothing in
dlscale imports it at module level: :func:`get_mpi` does, on demand, and turns a
missing mpi4py or MPI library into one line saying how to install it.

MPICH reads its control variables (``MPIR_CVAR_*``, such as the allreduce algorithm)
from the environment once, in ``MPI_Init``; mpi4py has no ``MPI_T`` control-variable
write API. :func:`select_allreduce_algorithm` therefore sets the environment
*before* the first import, which chooses one algorithm per ``mpiexec`` launch.

Examples
--------
>>> INSTALL_HINT
'pip install dlscale[mpi]'
>>> MPICH_ALLREDUCE["ring"]
'ring'
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from typing import Any

from dlscale.perfmodel.errors import ConfigError, DlscaleError, unknown_name

__all__ = [
    "INSTALL_HINT",
    "MPICH_ALLREDUCE",
    "MPINotAvailable",
    "get_mpi",
    "host_groups",
    "one_blas_thread",
    "oversubscription_env",
    "provenance",
    "select_allreduce_algorithm",
]

#: How to get MPI: mpi4py plus the MPICH wheel (which brings ``mpiexec``).
INSTALL_HINT = "pip install dlscale[mpi]"

#: Model allreduce name -> MPICH ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM`` value
#: (MPICH 4/5 ``src/mpi/coll/cvars.txt``).
MPICH_ALLREDUCE: dict[str, str] = {
    "ring": "ring",
    "recursive-doubling": "recursive_doubling",
    "rabenseifner": "reduce_scatter_allgather",
    "binomial-tree": "tree",
}

#: Model allreduce name -> Open MPI ``coll_tuned_allreduce_algorithm`` number
#: (Open MPI ``ompi/mca/coll/tuned/coll_tuned_allreduce_decision.c``).
OMPI_ALLREDUCE: dict[str, str] = {
    "recursive-doubling": "3",
    "ring": "4",
    "rabenseifner": "6",
}


class MPINotAvailable(DlscaleError):
    """mpi4py or the MPI library it needs cannot be loaded."""


def get_mpi() -> Any:
    """Import and return ``mpi4py.MPI`` (which initialises MPI).

    Raises :class:`MPINotAvailable` with a one-line install hint where mpi4py or
    libmpi is missing.
    """
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MPINotAvailable(
            f"MPI is not available ({reason}); install it with `{INSTALL_HINT}` "
            "and run under `mpiexec -n N`"
        ) from None
    return MPI


#: MPICH progress throttling: after this many polls that find nothing, a waiting
#: rank calls ``usleep(1)`` and so yields its core (MPICH ``MPIR_CVAR_CH4_PROGRESS_THROTTLE``).
THROTTLE_ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "10",
}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def oversubscription_env(mode: str = "auto", environ: Any = None) -> dict[str, str]:
    """Make waiting MPI ranks yield their core when there are more ranks than cores.

    MPICH waits by polling; with more ranks on a host than cores, a rank waiting
    for a message holds a core its partner needs, and every step of a collective
    costs a scheduler time slice (milliseconds instead of microseconds). With
    ``mode="auto"`` this sets :data:`THROTTLE_ENV` where the ranks on this host
    (``MPI_LOCALNRANKS`` from MPICH's launcher, ``OMPI_COMM_WORLD_LOCAL_SIZE``
    from Open MPI's) outnumber the cores this process may run on and the user
    has not set the variable; ``"on"`` always, ``"off"`` never. Must run before
    :func:`get_mpi`. Returns what it set.

    Examples
    --------
    >>> oversubscription_env("auto", environ={"MPI_LOCALNRANKS": "1"})
    {}
    >>> sorted(oversubscription_env("on", environ={}))[0]
    'MPIR_CVAR_CH4_PROGRESS_THROTTLE'
    """
    env = os.environ if environ is None else environ
    if mode not in ("auto", "on", "off"):
        raise ConfigError(f"yield: must be auto, on or off, got {mode!r}")
    if mode == "off" or "MPIR_CVAR_CH4_PROGRESS_THROTTLE" in env:
        return {}
    local = env.get("MPI_LOCALNRANKS") or env.get("OMPI_COMM_WORLD_LOCAL_SIZE") or "1"
    if mode == "auto" and not (local.isdigit() and int(local) > _cores()):
        return {}
    env.update(THROTTLE_ENV)
    return dict(THROTTLE_ENV)


def select_allreduce_algorithm(name: str, environ: Any = None) -> dict[str, str]:
    """Set the environment so the MPI library uses allreduce algorithm ``name``.

    Must run before :func:`get_mpi` in every rank (the settings are read by
    ``MPI_Init``). Sets the MPICH and the Open MPI variables (each library ignores
    the other's) in ``environ`` (default ``os.environ``); returns what it set.
    ``"default"`` leaves the library's choice.

    Examples
    --------
    >>> env = select_allreduce_algorithm("ring", environ={})
    >>> env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"], env["OMPI_MCA_coll_tuned_allreduce_algorithm"]
    ('ring', '4')
    """
    if name == "default":
        return {}
    if name not in MPICH_ALLREDUCE:
        raise unknown_name("allreduce_algorithm", name, [*MPICH_ALLREDUCE, "default"])
    env = {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": MPICH_ALLREDUCE[name],
        # MPICH's ch4 shared-memory allreduce would otherwise bypass the choice
        "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0",
    }
    if name in OMPI_ALLREDUCE:
        env["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1"
        env["OMPI_MCA_coll_tuned_allreduce_algorithm"] = OMPI_ALLREDUCE[name]
    (os.environ if environ is None else environ).update(env)
    return env


def one_blas_thread() -> Any:
    """Context manager: one BLAS thread per process while it is active.

    Under MPI the ranks are the parallelism; OpenBLAS worker threads also spin for
    a while after each call, taking the cores that MPI ranks poll on. Uses
    ``threadpoolctl`` (a scikit-learn dependency); a no-op context without it.
    """
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - depends on the environment
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


def host_groups(comm: Any) -> dict[str, list[int]]:
    """Host name -> ranks of ``comm`` on it (every rank gets the same answer)."""
    MPI = get_mpi()
    names = comm.allgather(MPI.Get_processor_name())
    groups: dict[str, list[int]] = {}
    for rank, host in enumerate(names):
        groups.setdefault(host, []).append(rank)
    return groups


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except ImportError:
        return "not installed"
    return str(getattr(mod, "__version__", "unknown"))


def provenance(comm: Any, argv: list[str] | None = None) -> dict[str, Any]:
    """Where and how a measurement was taken, for the profile's ``provenance``."""
    MPI = get_mpi()
    groups = host_groups(comm)
    library = MPI.Get_library_version().strip().splitlines()
    return {
        "hosts": sorted(groups),
        "ranks": comm.Get_size(),
        "ranks_per_host": {h: len(r) for h, r in sorted(groups.items())},
        "mpi_library": library[0] if library else "unknown",
        "mpi_library_version": MPI.Get_library_version().strip(),
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "mpi4py": _version("mpi4py"),
        "numba": _version("numba"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(argv if argv is not None else sys.argv),
        "cores": _cores(),
        "allreduce_algorithm_env": {
            k: v for k, v in os.environ.items()
            if k.startswith(("MPIR_CVAR_ALLREDUCE", "OMPI_MCA_coll_tuned"))
        },
        "mpi_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("MPIR_CVAR")},
    }
