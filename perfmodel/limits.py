"""The sizes a question may have: each checked from its figures before any allocation.

Every command answers a question whose cost grows with its sizes: the analytical
model holds each collective's schedule (arrays over the ranks, one per step), the
simulator a graph vertex per host, device and switch, a process and its messages per
rank, a co-simulation the parameters of every worker. This module estimates that
cost from the sizes alone and refuses, with one line naming the size, the limit and
why, a question beyond :data:`MEMORY_BUDGET_BYTES` of memory or
:data:`MAX_RANK_STEPS` of simulated work, before anything is built. The per-unit
costs are measured (see each constant) and rounded up, so a refused question would
not have fitted; what the tests and the README run (Summit's 4,608 nodes, 27,648
GPUs, in ``predict`` and ``simulate``) is far inside.

Examples
--------
>>> check_analytical_ranks(27_648)
>>> check_analytical_ranks(60_000_000, "nodes")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: nodes: 60,000,000 ranks; the analytical model keeps ...
"""

from __future__ import annotations

from dlscale.perfmodel.errors import ConfigError

__all__ = [
    "ANALYTICAL_BYTES_PER_COUNT",
    "ANALYTICAL_BYTES_PER_RANK",
    "BANDWIDTH_RANGE_BPS",
    "COSIM_BYTES_PER_PARAMETER",
    "FACTOR_RANGE",
    "GAMMA_RANGE_S_PER_B",
    "LATENCY_RANGE_S",
    "MAX_DEVICES_PER_NODE",
    "MAX_GRID_POINTS",
    "MAX_HIDDEN",
    "MAX_HOST_CORES",
    "MAX_INTEGER",
    "MAX_RAILS",
    "MAX_RANK_STEPS",
    "MEMORY_BUDGET_BYTES",
    "NO_GRAPH_HINT",
    "SIMULATED_BYTES_PER_ELEMENT",
    "check_analytical_curve",
    "check_analytical_ranks",
    "check_cosim",
    "check_count",
    "check_graph",
    "check_host_cores",
    "check_range",
    "check_rank_steps",
]

#: Memory a question may take: 8 GiB, what a laptop or a login node gives one process.
MEMORY_BUDGET_BYTES = 8 * 2**30

#: Analytical model, bytes per rank of the largest node count: each collective's
#: schedule holds arrays over the ranks, one set per step. Measured (peak RSS of
#: ``predict`` of resnet50 on a 3-level fat tree of 6-GPU nodes): 4,608 / 20,000 /
#: 100,000 nodes (27,648 / 120,000 / 600,000 ranks) 341 / 745 / 3,580 MB, 5.9 KB per
#: rank at the margin; 8 KiB rounds it up.
ANALYTICAL_BYTES_PER_RANK = 8 * 1024

#: Analytical model, bytes per node count of one curve (a ``--nodes`` list or range is
#: priced as one curve): what it keeps per count once the plans of its counts are no
#: longer all alive together (each count's step arrays stacked, its rows). Measured
#: (traced peak of ``predict summit resnet50`` over 100 and 400 node counts from 100
#: nodes, caches capped at 2 MB): 13 KB per count at the margin; 64 KiB leaves room
#: for the longer pipelines of larger counts. Before (every plan of the curve alive):
#: 306 B per rank summed over the counts, 4,231 MB at 1,000 counts spread on 1..4,608.
ANALYTICAL_BYTES_PER_COUNT = 64 * 1024

#: Simulator, bytes per graph element (host, device, switch): the graph, its link
#: table, one process and its messages per rank. Measured (peak RSS of ``simulate
#: summit resnet50`` at 256 / 1,024 nodes, 1,792 / 7,168 devices and hosts): 224 /
#: 459 MB, 44 KB per element at the margin (51 KB per rank); 64 KiB rounds it up.
SIMULATED_BYTES_PER_ELEMENT = 64 * 1024

#: Simulated work: ranks x iterations (steps per worker) of one run, summed over the
#: runs of a command (repeats, compared algorithms, tuning grids). The default
#: ``simulate`` of Summit at 4,608 nodes is 27,648 x 20 = 552,960 and takes about
#: 30 s (2-core machine); 50 million is some hours, beyond which a run is a mistake.
MAX_RANK_STEPS = 50_000_000

#: Most points a study's grid may have, whatever its ``max_points``: a sweep keeps
#: every point's key to resume and skip. Measured: enumerating the keys of 1,000,000
#: points takes 17 s and 215 MB (2-core machine), so 10 million is some minutes and
#: about 2 GB before the first point runs.
MAX_GRID_POINTS = 10_000_000

#: Co-simulation, bytes per model parameter per worker: parameters, gradient, moments
#: and the EASGD centre, float64 (4 x 8 B).
COSIM_BYTES_PER_PARAMETER = 32

#: Hidden units of the co-simulation's model: the 8x8 digits have 64 features and 10
#: classes; a hidden layer of more than 65,536 units is no longer the small model.
MAX_HIDDEN = 65_536

#: Devices (or sockets) per node: the largest single-node NVLink domain built, the
#: DGX GH200, joins 256 GPUs (NVIDIA, 2023); 1,024 leaves room for what-ifs.
MAX_DEVICES_PER_NODE = 1024

#: Host CPU cores per node: two-socket servers hold up to 2 x 192 cores (AMD EPYC
#: 9965, AMD product page); 1,024 leaves room for four sockets.
MAX_HOST_CORES = 1024

#: Network rails (independent planes) per node: a DGX H100 has 8 compute NICs
#: (NVIDIA DGX H100 user guide); 64 leaves room for what-ifs.
MAX_RAILS = 64

#: Largest integer a configuration may hold: TOML's integers are 64-bit signed
#: (TOML 1.0, "Integer"); a longer one is refused as the spec asks.
MAX_INTEGER = 2**63 - 1


#: Physical range of a link's bandwidth, bytes per second: from 1 B/s (slower than any
#: wire, a 300-baud modem is 37.5 B/s) to 10 PB/s (5,000x one NVLink 5 GPU's 1.8 TB/s,
#: NVIDIA Blackwell datasheet). Outside it the model's arithmetic over- or underflows.
BANDWIDTH_RANGE_BPS = (1.0, 1e16)

#: Physical range of a latency, seconds: 0 to one hour.
LATENCY_RANGE_S = (0.0, 3600.0)

#: Range of a per-message-size latency or bandwidth factor (SMPI's are 0.1-10).
FACTOR_RANGE = (1e-6, 1e6)

#: Range of a reduction cost, seconds per byte (1 s/B is a 1 B/s reduction).
GAMMA_RANGE_S_PER_B = (0.0, 1.0)


def check_range(value: float, bounds: tuple[float, float], where: str, unit: str,
                why: str = "") -> None:
    """Refuse a figure outside its physical range ``[bounds[0], bounds[1]]``.

    Parameters
    ----------
    value : float
        The figure (already checked to be a number).
    bounds : tuple of float
        Its lowest and highest physical values.
    where : str
        The field or flag, for the message.
    unit : str
        Its unit, for the message.
    why : str, optional
        Where the range comes from, for the message.

    Raises
    ------
    ConfigError
        ``value`` outside the range (NaN and infinities included).

    Examples
    --------
    >>> check_range(1e-299, BANDWIDTH_RANGE_BPS, "link.bandwidth_Bps", "B/s")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: link.bandwidth_Bps: 1e-299 B/s is outside the physical range 1 to 1e+16 B/s
    """
    lo, hi = bounds
    if not lo <= value <= hi:
        tail = f" ({why})" if why else ""
        raise ConfigError(f"{where}: {value:g} {unit} is outside the physical range {lo:g} to "
                          f"{hi:g} {unit}{tail}")


def _gib(n: float) -> str:
    gib = n / 2**30
    return f"{gib:,.0f} GiB" if gib >= 100 else f"{gib:.3g} GiB"


def check_host_cores(value: object, where: str) -> None:
    """Refuse host cores that are not an integer in ``0..MAX_HOST_CORES``.

    Examples
    --------
    >>> check_host_cores(40, "node.host_cores")
    >>> check_host_cores(2.5, "node.host_cores")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: node.host_cores: must be an integer in 0..1024 (0: not described), got 2.5
    """
    if type(value) is not int or not 0 <= value <= MAX_HOST_CORES:
        raise ConfigError(f"{where}: must be an integer in 0..{MAX_HOST_CORES} (0: not "
                          f"described), got {value!r}")


def check_count(value: int, limit: int, where: str, why: str) -> None:
    """Refuse an integer size above ``limit``: ``where: value is more than limit (why)``.

    Parameters
    ----------
    value : int
        The size as given.
    limit : int
        The most allowed.
    where : str
        The field or flag, for the message.
    why : str
        What bounds it.

    Raises
    ------
    ConfigError
        ``value > limit``.

    Examples
    --------
    >>> check_count(2, 64, "rails", "x")
    >>> check_count(10**9, 64, "rails", "the most NICs a node has")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: rails: 1,000,000,000 is more than 64 (the most NICs a node has)
    """
    if value > limit:
        raise ConfigError(f"{where}: {value:,} is more than {limit:,} ({why})")


def check_analytical_ranks(ranks: int, where: str = "nodes", nodes: int = 0) -> None:
    """Refuse an analytical question over more ranks than its schedules can hold.

    Parameters
    ----------
    ranks : int
        Ranks of the largest node count asked.
    where : str, optional
        The input that set them, for the message.
    nodes : int, optional
        Its node count, for the message (0: not named).

    Raises
    ------
    ConfigError
        ``ranks * ANALYTICAL_BYTES_PER_RANK > MEMORY_BUDGET_BYTES``.
    """
    need = ranks * ANALYTICAL_BYTES_PER_RANK
    if need > MEMORY_BUDGET_BYTES:
        most = MEMORY_BUDGET_BYTES // ANALYTICAL_BYTES_PER_RANK
        of = f"{nodes:,} nodes x {ranks // nodes:,} = " if nodes else ""
        raise ConfigError(
            f"{where}: {of}{ranks:,} ranks; the analytical model keeps each collective's "
            f"schedule over the ranks in memory, about {ANALYTICAL_BYTES_PER_RANK // 1024} KiB "
            f"per rank ({_gib(need)}), more than its {_gib(MEMORY_BUDGET_BYTES)} budget: "
            f"at most {most:,} ranks")


def check_analytical_curve(counts: int, where: str = "nodes") -> None:
    """Refuse a curve of more node counts than the analytical model can hold within
    its budget (:data:`ANALYTICAL_BYTES_PER_COUNT` each; the largest count's ranks are
    :func:`check_analytical_ranks`'s).

    Parameters
    ----------
    counts : int
        Node counts in the curve.
    where : str, optional
        The input that set them, for the message.

    Raises
    ------
    ConfigError
        ``counts * ANALYTICAL_BYTES_PER_COUNT > MEMORY_BUDGET_BYTES``.

    Examples
    --------
    >>> check_analytical_curve(4_608)          # every node count of Summit
    >>> check_analytical_curve(10_000_000)     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: nodes: 10,000,000 node counts; one curve keeps ...
    """
    need = counts * ANALYTICAL_BYTES_PER_COUNT
    if need > MEMORY_BUDGET_BYTES:
        most = MEMORY_BUDGET_BYTES // ANALYTICAL_BYTES_PER_COUNT
        raise ConfigError(
            f"{where}: {counts:,} node counts; one curve keeps about "
            f"{ANALYTICAL_BYTES_PER_COUNT // 1024} KiB per node count ({_gib(need)}), more "
            f"than its {_gib(MEMORY_BUDGET_BYTES)} budget: at most {most:,} node counts; "
            f"give fewer (a doubling range 1-N, or a step, N-M:STEP) or run the counts in "
            f"several commands")


#: What :func:`check_graph` suggests instead of a graph too large to simulate.
NO_GRAPH_HINT = "; the analytical model (predict, or --network analytical) needs no graph"


def check_graph(elements: int, where: str = "nodes", what: str = "hosts, devices and switches",
                hint: str = NO_GRAPH_HINT) -> None:
    """Refuse a simulated network of more graph elements than memory holds.

    Parameters
    ----------
    elements : int
        Vertices the simulation builds (hosts, devices, switches or routers).
    where : str, optional
        The input that set them, for the message.
    what : str, optional
        What the elements are, for the message.
    hint : str, optional
        What to do instead, appended to the message.

    Raises
    ------
    ConfigError
        ``elements * SIMULATED_BYTES_PER_ELEMENT > MEMORY_BUDGET_BYTES``.
    """
    need = elements * SIMULATED_BYTES_PER_ELEMENT
    if need > MEMORY_BUDGET_BYTES:
        most = MEMORY_BUDGET_BYTES // SIMULATED_BYTES_PER_ELEMENT
        raise ConfigError(
            f"{where}: the simulation builds {elements:,} {what}, about "
            f"{SIMULATED_BYTES_PER_ELEMENT // 1024} KiB each with their links, processes and "
            f"messages ({_gib(need)}), more than its {_gib(MEMORY_BUDGET_BYTES)} budget: at "
            f"most {most:,}{hint}")


def check_rank_steps(ranks: int, steps: int, runs: int = 1, where: str = "--iterations") -> None:
    """Refuse simulated work above :data:`MAX_RANK_STEPS` rank-iterations.

    Parameters
    ----------
    ranks : int
        Ranks (workers) of one run.
    steps : int
        Iterations (steps per worker) of one run.
    runs : int, optional
        Runs the command makes (repeats x algorithms x grid points).
    where : str, optional
        The input that set them, for the message.

    Raises
    ------
    ConfigError
        ``ranks * steps * runs > MAX_RANK_STEPS``.
    """
    work = ranks * steps * runs
    if work > MAX_RANK_STEPS:
        runs_text = f" x {runs:,} runs" if runs != 1 else ""
        raise ConfigError(
            f"{where}: {ranks:,} ranks x {steps:,} iterations{runs_text} = {work:,} simulated "
            f"rank-iterations, more than {MAX_RANK_STEPS:,} (some hours of simulation; "
            f"ask for fewer)")


def check_cosim(workers: int, parameters: int, where: str = "--hidden") -> None:
    """Refuse a co-simulation whose workers' parameters exceed the memory budget.

    Parameters
    ----------
    workers : int
        Workers, each holding the model.
    parameters : int
        Parameters of the model.
    where : str, optional
        The input that set the model's size, for the message.

    Raises
    ------
    ConfigError
        ``workers * parameters * COSIM_BYTES_PER_PARAMETER > MEMORY_BUDGET_BYTES``.
    """
    need = workers * parameters * COSIM_BYTES_PER_PARAMETER
    if need > MEMORY_BUDGET_BYTES:
        raise ConfigError(
            f"{where}: {workers:,} workers x {parameters:,} parameters x "
            f"{COSIM_BYTES_PER_PARAMETER} B (weights, gradient, moments, centre) = "
            f"{_gib(need)}, more than the co-simulation's {_gib(MEMORY_BUDGET_BYTES)} budget")
