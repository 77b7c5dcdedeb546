"""The one registry of collective operations and the algorithms that build them.

Every name of an operation or an algorithm that ``predict``, ``simulate``, the
kernels, the runtimes and the command line accept comes from here: the closed forms
(:data:`~dlscale.perfmodel.network.collectives.ALLREDUCE`), the message schedules
(:func:`~dlscale.perfmodel.network.schedules.build_schedule`), the in-process kernels
(:data:`dlscale.kernels.allreduce.ALGORITHMS`, which sit below this layer and are
checked against it by a test) and the runtimes' own algorithm sets all key on these
names. Adding an algorithm is one :class:`Algorithm` line here plus its schedule
builder and closed form; a test fails while either is missing.

Examples
--------
>>> algorithms("allreduce")
('ring', 'recursive-doubling', 'rabenseifner', 'binomial-tree', 'double-binary-tree', 'hierarchical')
>>> ALLREDUCE_CHOICES[-1], FLAT_ALLREDUCE[-1]
('auto', 'double-binary-tree')
>>> offered_by("nccl")
('ring', 'double-binary-tree')
>>> get("allreduce", "rabenseifner").kernel
'rabenseifner'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALLREDUCE_CHOICES", "CHUNKED", "FLAT_ALLREDUCE", "FOLDING", "LIBRARIES",
           "OPERATIONS", "REGISTRY", "Algorithm", "algorithms", "get", "offered_by"]


@dataclass(frozen=True)
class Algorithm:
    """One way to build a collective operation.

    Attributes
    ----------
    operation : str
        The collective it builds (``"allreduce"``, ``"broadcast"``, ...).
    name : str
        Its short name, shared by every layer and the command line.
    composite : bool
        Built on top of a flat algorithm (``hierarchical``: intra-node reduce, an
        inter-node allreduce of the user's choice, intra-node broadcast).
    chunked : bool
        Its most frequent message is an ``n/p`` chunk (ring, Rabenseifner), not the
        whole vector.
    folding : bool
        A rank count that is not a power of two folds the extra ranks in first
        (Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005, sec. 4).
    kernel : str or None
        Name of the numba kernel that runs it in process, or None if there is none.
    """

    operation: str
    name: str
    composite: bool = False
    chunked: bool = False
    folding: bool = False
    kernel: str | None = None


#: Every (operation, algorithm), the first of an operation being its default.
REGISTRY: tuple[Algorithm, ...] = (
    Algorithm("allreduce", "ring", chunked=True, kernel="ring"),
    Algorithm("allreduce", "recursive-doubling", folding=True),
    Algorithm("allreduce", "rabenseifner", chunked=True, folding=True, kernel="rabenseifner"),
    Algorithm("allreduce", "binomial-tree", kernel="binomial-tree"),
    Algorithm("allreduce", "double-binary-tree"),
    Algorithm("allreduce", "hierarchical", composite=True, kernel="hierarchical"),
    Algorithm("reduce-scatter", "ring", chunked=True),
    Algorithm("allgather", "ring", chunked=True),
    Algorithm("broadcast", "binomial"),
    Algorithm("reduce", "binomial"),
    # MPICH's pairwise exchange (MPIR_Alltoall_intra_pairwise,
    # src/mpi/coll/alltoall/alltoall_intra_pairwise.c): p - 1 steps, one peer each
    Algorithm("alltoall", "pairwise", chunked=True),
    Algorithm("parameter-server", "push-pull"),
    Algorithm("parameter-server", "concurrent"),
)

#: The collective operations, in registry order.
OPERATIONS: tuple[str, ...] = tuple(dict.fromkeys(a.operation for a in REGISTRY))


def algorithms(operation: str) -> tuple[str, ...]:
    """The algorithms of ``operation``, its default first.

    Parameters
    ----------
    operation : str
        A name of :data:`OPERATIONS`.

    Returns
    -------
    tuple of str
        Empty for an unknown operation (callers name the valid ones in their error).
    """
    return tuple(a.name for a in REGISTRY if a.operation == operation)


def get(operation: str, name: str) -> Algorithm:
    """The registry entry of ``name`` for ``operation``.

    Parameters
    ----------
    operation, name : str
        The operation and one of its algorithms.

    Raises
    ------
    KeyError
        If ``operation`` has no algorithm ``name``.
    """
    for a in REGISTRY:
        if a.operation == operation and a.name == name:
            return a
    raise KeyError(f"{operation} has no algorithm {name!r}; valid: "
                   f"{', '.join(algorithms(operation))}")


#: Flat allreduce algorithms (``hierarchical`` is built on top of one of them).
FLAT_ALLREDUCE: tuple[str, ...] = tuple(
    a.name for a in REGISTRY if a.operation == "allreduce" and not a.composite)
#: What ``collective =`` accepts: every allreduce algorithm and ``"auto"``, the stack's
#: own choice (:mod:`dlscale.perfmodel.network.autopolicy`).
ALLREDUCE_CHOICES: tuple[str, ...] = (*algorithms("allreduce"), "auto")
#: Allreduce algorithms whose most frequent message is an ``n/p`` chunk.
CHUNKED: tuple[str, ...] = tuple(
    a.name for a in REGISTRY if a.operation == "allreduce" and a.chunked)
#: Allreduce algorithms that fold a non-power-of-two rank count first.
FOLDING: tuple[str, ...] = tuple(
    a.name for a in REGISTRY if a.operation == "allreduce" and a.folding)

#: Communication library -> the allreduce algorithms it offers, in the order it lists
#: them (the order breaks ties in ``auto``'s least-time choice).
#: NCCL >= 2.4: ring and double binary tree (NCCL 2.4 release notes; Sanders, Speck,
#: Traeff, Parallel Computing 35(12) 2009). MPICH 3.x: recursive doubling below its
#: short-message threshold, Rabenseifner above (Thakur et al. 2005). Intel MPI:
#: the algorithms its I_MPI_ADJUST_ALLREDUCE setting names (recursive doubling,
#: Rabenseifner, reduce + broadcast, ring, topology-aware variants; Intel MPI Library
#: Developer Reference). Gloo: allreduce_ring and
#: allreduce_halving_doubling (Goyal et al., arXiv 1706.02677, sec. 4). RCCL (ROCm's
#: port of NCCL's API): "implemented using Ring and Tree algorithms" (ROCm/rccl
#: docs/index.rst), its Tree NCCL's, chosen per size by the Tree/Ring
#: latency-bandwidth model it keeps from NCCL (ROCm/rccl src/graph/tuning.cc,
#: ncclTopoTuneModel; CollNet, the third, needs switch offload RCCL's AMD nodes lack).
LIBRARIES: dict[str, tuple[str, ...]] = {
    "nccl": ("ring", "double-binary-tree"),
    "rccl": ("ring", "double-binary-tree"),
    "mpich": ("recursive-doubling", "rabenseifner"),
    "intel-mpi": ("recursive-doubling", "rabenseifner", "binomial-tree", "ring",
                  "hierarchical"),
    "gloo": ("ring", "rabenseifner"),
}


def offered_by(library: str) -> tuple[str, ...]:
    """The allreduce algorithms communication library ``library`` offers.

    Parameters
    ----------
    library : str
        A key of :data:`LIBRARIES`.
    """
    return LIBRARIES[library]
