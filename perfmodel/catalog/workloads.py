"""Preset training setups, one per catalog model (same names).

Every preset trains with synchronous SGD and ``collective="auto"``: the allreduce the
cluster's software stack selects itself per message size and rank count
(:mod:`.runtimes`; ``--collective ring`` and the others are what-ifs); batch per device and
precision are the published defaults of the model's reference training recipe,
cited next to each. Override any field with ``dataclasses.replace`` or in a
workload TOML file (``base = "resnet50"``).

Examples
--------
>>> w = WORKLOADS["resnet50"]
>>> w.batch_per_device, w.precision, w.algorithm, w.collective
(32, 'fp32', 'sync-sgd', 'auto')
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.models import MODELS
from dlscale.perfmodel.training.workload import Workload
from dlscale.perfmodel.units import MiB

__all__ = ["WORKLOADS"]


def _preset(name: str, batch: int, source: str, **kw: object) -> Workload:
    return Workload(name=name, model=MODELS[name], batch_per_device=batch,
                    algorithm="sync-sgd", collective="auto", source=source, **kw)  # type: ignore[arg-type]


WORKLOADS: dict[str, Workload] = {
    # Caffe examples/mnist/lenet_train_test.prototxt: batch 64; lenet_solver: 10,000
    # iterations x 64 = 640,000 samples = 10.7 epochs of 60,000
    # (github.com/BVLC/caffe/tree/master/examples/mnist).
    "lenet": _preset("lenet", 64, "Caffe lenet_train_test.prototxt / lenet_solver.prototxt",
                     epochs=10_000 * 64 / 60_000),
    # EASGD paper (Zhang et al. 2015, Sec. 5): minibatch 128 per worker.
    "cifar10-net": _preset("cifar10-net", 128, "Zhang, Choromanska, LeCun NIPS 2015"),
    # Caffe models/bvlc_alexnet/train_val.prototxt: batch 256 on one GPU; 450,000
    # iterations x 256 = 90 epochs (github.com/BVLC/caffe/tree/master/models/bvlc_alexnet).
    "alexnet": _preset("alexnet", 256, "Caffe bvlc_alexnet train_val / solver", epochs=90.0),
    # You, Buluc, Demmel SC'17 do not state the batch in the abstract; EASGD's 128 is
    # assumed (the same recipe family).
    "alexnet-cifar10": _preset("alexnet-cifar10", 128, "assumed: EASGD minibatch 128"),
    # Caffe models/bvlc_googlenet/train_val.prototxt: batch 32; quick_solver 2.4 M
    # iterations x 32 = 60 epochs (github.com/BVLC/caffe/tree/master/models/bvlc_googlenet).
    "googlenet": _preset("googlenet", 32, "Caffe bvlc_googlenet train_val / quick_solver",
                         epochs=60.0),
    # Simonyan & Zisserman 2015, Sec. 3.1: batch 256 over 4 GPUs = 64 per GPU, 74 epochs.
    "vgg16": _preset("vgg16", 64, "Simonyan & Zisserman ICLR 2015, Sec. 3.1", epochs=74.0),
    "vgg19": _preset("vgg19", 64, "Simonyan & Zisserman ICLR 2015, Sec. 3.1", epochs=74.0),
    # Goyal et al. 2017 ("ImageNet in 1 hour"): 32 images per GPU, 90 epochs; the same
    # per-worker batch as Codreanu et al.'s 64-node runs.
    "resnet50": _preset("resnet50", 32, "Goyal et al. arXiv 1706.02677", epochs=90.0),
    "resnet101": _preset("resnet101", 32, "Goyal et al. arXiv 1706.02677", epochs=90.0),
    # Szegedy et al. CVPR 2016, Sec. 8: batch 32 per replica, 100 epochs.
    "inception-v3": _preset("inception-v3", 32, "Szegedy et al. CVPR 2016, Sec. 8",
                            epochs=100.0),
    # Cavdar et al. ISC 2019: about 5,000 tokens per process, Horovod fusion 128 MB;
    # with 28 tokens per sentence (models_transformer) 5000 // 28 = 178 sentence pairs.
    # Stock Horovod does not densify the shared embedding's gradient
    # (sparse_as_dense=False), the behaviour that paper fixes.
    "transformer-base": _preset("transformer-base", 5000 // 28, "Cavdar et al. ISC 2019",
                                fusion_threshold_bytes=128 * MiB, sparse_as_dense=False,
                                epochs=1.0),
    "transformer-big": _preset("transformer-big", 5000 // 28, "Cavdar et al. ISC 2019",
                               fusion_threshold_bytes=128 * MiB, sparse_as_dense=False,
                               epochs=1.0),
    # Laanait et al. 2019: mixed precision (fp16 tensor cores) and graph-aware grouping
    # of gradients. Batch per GPU is not in the abstract: 4 samples of the assumed
    # 1024 x 128 x 128 input is an assumption (models_fcn A1).
    "fcn-summit": _preset("fcn-summit", 4, "Laanait et al. arXiv 1909.11150 (batch assumed)",
                          precision="fp16", grouping="graph-aware", epochs=1.0),
}
