"""What a node's storage delivers: an upper bound on the samples/s it can train on.

Real data is read before it is decoded. A node that trains ``r`` samples/s reads
``r x`` the data set's mean encoded sample size (:data:`MEAN_SAMPLE_BYTES`) per
second, so its rate cannot exceed

``storage rate = delivered bytes/s / mean sample bytes``,

where the delivered bytes/s are the node's storage read path
(``node.storage_read_Bps``) times the share of it a file system delivers: for a shared
file system read over the node's link (``storage_path = "network"``) the cited
:data:`FS_EFFICIENCY`, for a disk in the node (``"local"``) its rated rate. A node
whose storage is not described (``storage_read_Bps = 0``), synthetic data and a data
set of unknown sample size have no such bound. The input pipeline
(:func:`dlscale.perfmodel.training.outside.loader_rate_per_node`) takes the lesser of
this rate and the host cores' decode rate, so ``predict`` and ``simulate`` apply the
same bound; where it is the storage that binds, the row's limit is ``"storage"``.

Examples
--------
>>> import dataclasses
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> c, w = get_cluster("p100-cluster"), get_workload("googlenet")
>>> storage_rate_per_node(c, w)                  # storage not described: no bound
inf
>>> node = dataclasses.replace(c.node, storage_read_Bps=10e9 / 8)   # NFS over 10 GbE
>>> round(storage_rate_per_node(dataclasses.replace(c, node=node), w))
8143
>>> round(MEAN_SAMPLE_BYTES["imagenet-1k"])
115440
"""

from __future__ import annotations

import math

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload

__all__ = ["FS_EFFICIENCY", "ILSVRC2012_TRAIN_TAR_BYTES", "MEAN_SAMPLE_BYTES",
           "delivered_Bps", "storage_note", "storage_rate_per_node"]

#: Bytes of ``ILSVRC2012_img_train.tar``, the ILSVRC-2012 training set as ImageNet
#: distributes it (the JPEG files of its 1,281,167 images, in one tar of 1,000 class
#: tars): ``SIZES = [147897477120]`` for ``ILSVRC2012_img_train.tar`` in
#: CompVis/taming-transformers ``taming/data/imagenet.py`` (class ``ImageNetTrain``,
#: which checks the download against it); the same figure in jkjung-avt's
#: keras_imagenet README (``ls -l``: ``147897477120 ... ILSVRC2012_img_train.tar``).
#: The tar framing (a 512-byte header and the padding to 512 bytes per file, about
#: 0.7 % of it) is counted with the images.
ILSVRC2012_TRAIN_TAR_BYTES = 147_897_477_120

#: Mean encoded bytes of one training sample, per data set: what reading a sample
#: costs the storage path (ILSVRC-2012: the train tarball over its image count,
#: 147,897,477,120 / 1,281,167 = 115,440 bytes). A data set not listed has no bound.
MEAN_SAMPLE_BYTES: dict[str, float] = {
    "imagenet-1k": ILSVRC2012_TRAIN_TAR_BYTES / DATASETS["imagenet-1k"],
}

#: Share of a link's signalling rate that a shared file system's reads deliver to one
#: client. Both sources read NFS over one 10 Gb/s Ethernet port (1.25e9 B/s):
#: low 0.24, honnef.co "NFS sequential read performance" (2023): with the Linux NFS
#: client's default 128 kB read-ahead, 32 kB reads reach "300 MB/s"; central 0.752,
#: the same notes: "Setting read ahead to 1 MiB, same as the rsize, gets us to 940
#: MB/s" (a client tuned as a training loader's many outstanding reads are);
#: high 0.859, Brendan Gregg, "Up to 2 Gbytes/sec NFS" (2008), NFSv3 from a Sun
#: Storage 7410 over one 10 GbE interface: "50 Gbytes of total payload was moved over
#: NFS ... about 1 Gbyte/sec" (his Gbytes are GiB: "10 GbE should peak at about 1.164
#: Gbyte/sec"), 1.074e9 / 1.25e9. The fraction is taken to hold on other links
#: (IPoIB, 25-100 GbE) [assumption: no source read measures those].
FS_EFFICIENCY = CitedRange(
    "fs_read_efficiency", central=940e6 / 1.25e9, low=300e6 / 1.25e9,
    high=2**30 / 1.25e9, unit="fraction of the storage link's rate",
    source="honnef.co notes 'NFS sequential read performance' (10 GbE: 300 MB/s with the "
           "default read-ahead, 940 MB/s with read-ahead = rsize); Brendan Gregg, 'Up to 2 "
           "Gbytes/sec NFS' (2008: about 1 GiB/s of NFSv3 payload over one 10 GbE port)")
register(FS_EFFICIENCY)


def delivered_Bps(cluster: Cluster, end: str = "central") -> float:
    """Bytes/s one node's storage delivers (0: not described).

    Parameters
    ----------
    cluster : Cluster
        Its node's ``storage_read_Bps`` and ``storage_path``.
    end : {"central", "low", "high"}
        Which end of :data:`FS_EFFICIENCY` (a local disk is the same at every end).

    Examples
    --------
    >>> import dataclasses
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("p100-cluster")
    >>> node = dataclasses.replace(c.node, storage_read_Bps=2e9, storage_path="local")
    >>> delivered_Bps(dataclasses.replace(c, node=node), "low")
    2000000000.0
    """
    node = cluster.node
    share = 1.0 if node.storage_path == "local" else at_end(FS_EFFICIENCY, end)
    return float(node.storage_read_Bps) * share


def storage_rate_per_node(cluster: Cluster, workload: Workload, end: str = "central") -> float:
    """Samples/s one node's storage can feed (``inf``: no bound).

    Parameters
    ----------
    cluster : Cluster
        Its node's storage read path.
    workload : Workload
        Its data (real or synthetic) and its model's data set.
    end : {"central", "low", "high"}
        Which end of :data:`FS_EFFICIENCY`.
    """
    size = MEAN_SAMPLE_BYTES.get(workload.model.dataset, 0.0)
    delivered = delivered_Bps(cluster, end)
    if workload.data == "synthetic" or size <= 0 or delivered <= 0:
        return math.inf
    return delivered / size


def storage_note(cluster: Cluster, workload: Workload) -> str:
    """The note of a row whose storage bounds it: what is read, what is delivered.

    Parameters
    ----------
    cluster, workload
        As for :func:`storage_rate_per_node`.

    Examples
    --------
    >>> import dataclasses
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> c, w = get_cluster("p100-cluster"), get_workload("googlenet")
    >>> node = dataclasses.replace(c.node, storage_read_Bps=125e6)
    >>> storage_note(dataclasses.replace(c, node=node), w)
    'storage-bound: 814 samples/s x 115.4 kB = 94 MB/s per node, what its storage delivers (1 Gb/s network file system x 0.752)'
    """
    node = cluster.node
    size = MEAN_SAMPLE_BYTES.get(workload.model.dataset, 0.0)
    rate = storage_rate_per_node(cluster, workload)
    how = ("local disk" if node.storage_path == "local"
           else f"network file system x {FS_EFFICIENCY.central:.3g}")
    return (f"storage-bound: {rate:,.0f} samples/s x {size / 1e3:.1f} kB = "
            f"{rate * size / 1e6:,.0f} MB/s per node, what its storage delivers "
            f"({node.storage_read_Bps * 8 / 1e9:g} Gb/s {how})")
