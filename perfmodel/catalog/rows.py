"""Catalog registries as table rows (list of dicts) for ``dlscale catalog``.

Rows carry display units in their keys (``_GBps``, ``_TFLOPS``, ``_us``) and the
short source of each entry.

Examples
--------
>>> rows = catalog_rows("devices")
>>> rows[0]["name"], rows[0]["fp32_TFLOPS"]
('xeon-phi-7250-flat', 6.093)
>>> catalog_rows("planets")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: catalog kind: unknown name 'planets'; valid: ...
"""

from __future__ import annotations

from typing import Any

from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES, GROUPINGS

__all__ = ["CATALOG_KINDS", "DESCRIPTIONS", "catalog_rows"]

CATALOG_KINDS = ("devices", "machines", "networks", "models", "topologies", "algorithms",
                 "links", "nodes", "workloads", "runtimes", "message-factors", "transformers")

#: One-line descriptions of the training algorithms and collective names (a topology
#: family's is its :attr:`~dlscale.perfmodel.machine.topologies.Family.summary`).
DESCRIPTIONS: dict[str, str] = {
    "sync-sgd": "synchronous data-parallel SGD: allreduce of gradients every step",
    "easgd": "original EASGD: master exchanges with workers round-robin (Zhang et al. 2015)",
    "sync-easgd": "EASGD with broadcast of W and tree reduction of the W_i (You et al. SC'17)",
    "async-easgd": "asynchronous EASGD, parameter server, first come first served",
    "async-measgd": "asynchronous EASGD with momentum on the worker",
    "hogwild-easgd": "asynchronous EASGD without a lock on the master",
    "async-sgd": "asynchronous SGD with a parameter server",
    "async-msgd": "asynchronous momentum SGD with a parameter server",
    "hogwild-sgd": "lock-free asynchronous SGD (Recht et al. 2011)",
    "ring": "ring allreduce: reduce-scatter then allgather, 2(p-1) steps",
    "recursive-doubling": "log2 p exchanges of the whole vector",
    "rabenseifner": "recursive-halving reduce-scatter + recursive-doubling allgather",
    "binomial-tree": "binomial-tree reduce followed by broadcast",
    "double-binary-tree": "two complementary pipelined binary trees (Sanders et al. 2009; NCCL)",
    "hierarchical": "intra-node reduce, inter-node allreduce, intra-node broadcast",
    "auto": "per size and rank count the fastest of the above, as MPI/NCCL tuners pick",
    "fusion": "Horovod tensor fusion with rank-0 negotiation",
    "graph-aware": "graph-aware gradient groups with decentralized orchestration (Laanait et al. 2019)",
}


# numerical: catalog tables show 3 decimals
def _r(x: float, digits: int = 3) -> float:
    return round(float(x), digits)


def _devices() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.devices import DEVICES, FRACTION_DERIVATIONS

    return [{
        "name": d.name, "kind": d.kind, "cores": d.cores, "clock_GHz": _r(d.clock_hz / 1e9),
        "fp64_TFLOPS": _r(d.peak_fp64_flops / 1e12), "fp32_TFLOPS": _r(d.peak_fp32_flops / 1e12),
        "fp16_TFLOPS": _r(d.peak_fp16_flops / 1e12), "memory_GB": _r(d.memory_bytes / 1e9),
        "memory_GBps": _r(d.memory_bandwidth_Bps / 1e9),
        "fast_memory_GB": _r(d.fast_memory_bytes / 1e9),
        "fast_memory_GBps": _r(d.fast_memory_bandwidth_Bps / 1e9), "memory_mode": d.memory_mode,
        "sustained_fraction": _r(d.sustained_fraction),
        "sustained_fraction_fp16": _r(d.sustained_fraction_for("fp16")), "tdp_W": d.tdp_w,
        "fraction_derivation": FRACTION_DERIVATIONS.get(d.name, ""), "source": d.source,
    } for d in DEVICES.values()]


def _machines() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.clusters import CLUSTERS

    return [{
        "name": c.name, "max_nodes": c.max_nodes, "device": c.node.device.name,
        "devices_per_node": c.node.devices_per_node, "intra_link": c.node.intra_link.name,
        "nic": c.node.nic.name, "nic_GBps": _r(c.node.nic.bandwidth_Bps / 1e9),
        "topology": c.network.topology.family, "network": c.network.name,
        "runtime": c.runtime.name,
        "price_per_node_hour": c.price_per_node_hour, "source": c.source,
    } for c in CLUSTERS.values()]


def _runtimes() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.runtimes import runtime_rows

    return runtime_rows()


def _message_factors() -> list[dict[str, Any]]:
    from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS

    return [{"name": f.name, "from_bytes": int(lo), "latency_factor": lat,
             "bandwidth_factor": bw, "source": f.source}
            for f in MESSAGE_FACTORS.values()
            for lo, lat, bw in zip(f.min_bytes, f.latency, f.bandwidth, strict=True)]


def _links() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.links import LINKS

    return [{"name": k.name, "type": "link", "bandwidth_GBps": _r(k.bandwidth_Bps / 1e9),
             "latency_us": _r(k.latency_s * 1e6), "topology": "", "max_nodes": 0,
             "source": k.source} for k in LINKS.values()]


def _networks() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.clusters import NETWORKS

    rows = [{"name": n.name, "type": "network", "bandwidth_GBps": _r(n.link.bandwidth_Bps / 1e9),
             "latency_us": _r(n.hop_latency_s * 1e6), "topology": n.topology.family,
             "max_nodes": n.max_nodes, "source": n.source} for n in NETWORKS.values()]
    return rows + _links()


def _nodes() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.nodes import NODES

    return [{"name": n.name, "device": n.device.name, "devices_per_node": n.devices_per_node,
             "intra_link": n.intra_link.name, "nic": n.nic.name,
             "host_link": n.host_link.name if n.host_link else "",
             "memory_GB": _r(n.memory_bytes / 1e9), "source": n.source} for n in NODES.values()]


def _models() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.models import MODELS

    return [{
        "name": m.name, "dataset": m.dataset, "params_M": _r(m.params / 1e6),
        "sparse_params_M": _r(m.sparse_params / 1e6),
        "forward_GFLOP": _r(m.forward_flops / 1e9), "layers": len(m.layers),
        "input_shape": "x".join(map(str, m.input_shape)),
        "samples_per_epoch": m.samples_per_epoch, "source": m.source,
    } for m in MODELS.values()]


def _transformers() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.models_llm import LLMS

    return [{"name": t.name, "params_B": _r(t.params / 1e9), "layers": t.layers,
             "hidden": t.hidden, "heads": t.heads, "kv_heads": t.kv_heads or t.heads,
             "seq": t.seq, "vocab": t.vocab, "experts": t.experts or 1, "source": t.source}
            for t in LLMS.values()]


def _workloads() -> list[dict[str, Any]]:
    from dlscale.perfmodel.catalog.workloads import WORKLOADS

    return [{"name": w.name, "model": w.model.name, "batch_per_device": w.batch_per_device,
             "precision": w.precision, "algorithm": w.algorithm, "collective": w.collective,
             "epochs": _r(w.epochs), "source": w.source} for w in WORKLOADS.values()]


def _topologies() -> list[dict[str, Any]]:
    from dlscale.perfmodel.machine.topologies import FAMILIES

    return [{"name": name, "description": f.summary} for name, f in FAMILIES.items()]


def _algorithms() -> list[dict[str, Any]]:
    rows = []
    for kind, names in (("training", ALGORITHMS), ("collective", COLLECTIVES),
                        ("grouping", GROUPINGS)):
        rows += [{"name": n, "type": kind, "description": DESCRIPTIONS.get(n, "")} for n in names]
    return rows


_BUILDERS = {
    "devices": _devices, "machines": _machines, "networks": _networks, "models": _models,
    "topologies": _topologies, "algorithms": _algorithms, "links": _links, "nodes": _nodes,
    "workloads": _workloads, "runtimes": _runtimes, "message-factors": _message_factors,
    "transformers": _transformers,
}


def catalog_rows(kind: str) -> list[dict[str, Any]]:
    """Rows (one dict per entry, same keys in every row) for catalog ``kind``.

    ``kind`` is one of :data:`CATALOG_KINDS`; "machines" lists the clusters,
    "networks" the interconnects followed by the links.

    Parameters
    ----------
    kind : str
        One of :data:`CATALOG_KINDS`.

    Returns
    -------
    list of dict
        One row per entry.

    Raises
    ------
    ConfigError
        An unknown ``kind`` (listing the valid ones).
    """
    if kind not in _BUILDERS:
        raise unknown_name("catalog kind", kind, CATALOG_KINDS)
    return _BUILDERS[kind]()
