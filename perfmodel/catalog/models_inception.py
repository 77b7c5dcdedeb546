"""Inception networks: GoogLeNet (Inception-v1) and Inception-v3.

Branches of an Inception module start from the same input shape; their outputs are
concatenated along the channels. Auxiliary classifiers are training-time heads
that the published parameter totals leave out, so they are left out here too.

Examples
--------
>>> round(googlenet().params / 1e6, 2)   # Szegedy et al. 2015, Table 1: 6.8 M
7.0
>>> inception_v3().params                # torchvision inception_v3 without aux: 23,834,568
23834568
"""

from __future__ import annotations

from collections.abc import Callable

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.catalog.layers import Net
from dlscale.perfmodel.training.workload import Model

__all__ = ["googlenet", "inception_v3"]

#: GoogLeNet Inception modules (Szegedy et al. CVPR 2015, Table 1): name ->
#: (#1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj); "pool" marks a
#: 3x3/2 max-pool before the module.
GOOGLENET_MODULES: tuple[tuple[str, tuple[int, int, int, int, int, int]] | str, ...] = (
    ("3a", (64, 96, 128, 16, 32, 32)),
    ("3b", (128, 128, 192, 32, 96, 64)),
    "pool",
    ("4a", (192, 96, 208, 16, 48, 64)),
    ("4b", (160, 112, 224, 24, 64, 64)),
    ("4c", (128, 128, 256, 24, 64, 64)),
    ("4d", (112, 144, 288, 32, 64, 64)),
    ("4e", (256, 160, 320, 32, 128, 128)),
    "pool",
    ("5a", (256, 160, 320, 32, 128, 128)),
    ("5b", (384, 192, 384, 48, 128, 128)),
)


def _run_branches(net: Net, branches: list[Callable[[Net], object]]) -> None:
    """Run each branch (a function of a sub-builder) from the current shape; concat."""
    shapes: list[tuple[int, ...]] = []
    for branch in branches:
        sub = net.branch()
        branch(sub)
        shapes.append(sub.shape)
    net.concat_channels(shapes)


def _pool(net: Net, name: str, kernel: int, stride: int, pad: int = 0) -> Net:
    net.pool(name, kernel, stride, pad=pad)
    return net


def _conv_relu(net: Net, name: str, ch: int, k: int, stride: int = 1, pad: int = 0) -> Net:
    net.conv(name, ch, k, stride=stride, pad=pad)
    net.relu(f"{name}_relu")
    return net


# Szegedy et al. CVPR 2015 (arXiv 1409.4842), Fig. 2(b) and Table 1: the branch kernels
def _googlenet_module(net: Net, p: str, c1: int, r3: int, c3: int, r5: int, c5: int,
                      pp: int) -> None:
    """One GoogLeNet Inception module: 1x1, 3x3, 5x5 and pool-projection branches."""
    _run_branches(net, [
        lambda s: _conv_relu(s, f"{p}_1x1", c1, 1),
        lambda s: (_conv_relu(s, f"{p}_3x3_reduce", r3, 1), _conv_relu(s, f"{p}_3x3", c3, 3, pad=1)),
        lambda s: (_conv_relu(s, f"{p}_5x5_reduce", r5, 1), _conv_relu(s, f"{p}_5x5", c5, 5, pad=2)),
        lambda s: (_pool(s, f"{p}_pool", 3, 1, pad=1), _conv_relu(s, f"{p}_pool_proj", pp, 1)),
    ])


def googlenet() -> Model:
    """GoogLeNet (Szegedy et al. 2015) on 224x224 images, as Caffe's bvlc_googlenet.

    Convolutions carry biases (Caffe); the published 6.8 M counts weights only, the
    biases add about 7.6 K. Total about 7.0 M with the 1024x1000 classifier.
    """
    net = Net("googlenet", (3, 224, 224))
    _conv_relu(net, "conv1", 64, 7, stride=2, pad=3)
    net.pool("pool1", 3, 2, ceil=True)
    net.lrn("norm1")
    _conv_relu(net, "conv2_reduce", 64, 1)
    _conv_relu(net, "conv2", 192, 3, pad=1)
    net.lrn("norm2")
    net.pool("pool2", 3, 2, ceil=True)
    pools = 3
    for item in GOOGLENET_MODULES:
        if item == "pool":
            net.pool(f"pool{pools}", 3, 2, ceil=True)
            pools += 1
            continue
        assert not isinstance(item, str)
        name, widths = item
        _googlenet_module(net, f"inception_{name}", *widths)
    net.global_pool("pool5")
    net.fc("loss3_classifier", 1000)
    return Model("googlenet", tuple(net.layers), (3, 224, 224), "imagenet-1k",
                 DATASETS["imagenet-1k"], "Szegedy et al. CVPR 2015, Table 1; Caffe bvlc_googlenet")


def _cbn(net: Net, name: str, ch: int, k: int | tuple[int, int], stride: int = 1,
         pad: int | tuple[int, int] = 0) -> Net:
    """Inception-v3's BasicConv2d: convolution without bias, batch norm, ReLU."""
    net.conv(name, ch, k, stride=stride, pad=pad, bias=False)
    net.bn(f"{name}_bn")
    net.relu(f"{name}_relu")
    return net


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionA)
def _inception_a(net: Net, p: str, pool_features: int) -> None:
    _run_branches(net, [
        lambda s: _cbn(s, f"{p}_1x1", 64, 1),
        lambda s: (_cbn(s, f"{p}_5x5_1", 48, 1), _cbn(s, f"{p}_5x5_2", 64, 5, pad=2)),
        lambda s: (_cbn(s, f"{p}_3x3dbl_1", 64, 1), _cbn(s, f"{p}_3x3dbl_2", 96, 3, pad=1),
                   _cbn(s, f"{p}_3x3dbl_3", 96, 3, pad=1)),
        lambda s: (_pool(s, f"{p}_pool", 3, 1, pad=1), _cbn(s, f"{p}_pool_proj", pool_features, 1)),
    ])


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionB)
def _inception_b(net: Net, p: str) -> None:
    _run_branches(net, [
        lambda s: _cbn(s, f"{p}_3x3", 384, 3, stride=2),
        lambda s: (_cbn(s, f"{p}_3x3dbl_1", 64, 1), _cbn(s, f"{p}_3x3dbl_2", 96, 3, pad=1),
                   _cbn(s, f"{p}_3x3dbl_3", 96, 3, stride=2)),
        lambda s: _pool(s, f"{p}_pool", 3, 2),
    ])


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionC)
def _inception_c(net: Net, p: str, c7: int) -> None:
    _run_branches(net, [
        lambda s: _cbn(s, f"{p}_1x1", 192, 1),
        lambda s: (_cbn(s, f"{p}_7x7_1", c7, 1), _cbn(s, f"{p}_7x7_2", c7, (1, 7), pad=(0, 3)),
                   _cbn(s, f"{p}_7x7_3", 192, (7, 1), pad=(3, 0))),
        lambda s: (_cbn(s, f"{p}_7x7dbl_1", c7, 1),
                   _cbn(s, f"{p}_7x7dbl_2", c7, (7, 1), pad=(3, 0)),
                   _cbn(s, f"{p}_7x7dbl_3", c7, (1, 7), pad=(0, 3)),
                   _cbn(s, f"{p}_7x7dbl_4", c7, (7, 1), pad=(3, 0)),
                   _cbn(s, f"{p}_7x7dbl_5", 192, (1, 7), pad=(0, 3))),
        lambda s: (_pool(s, f"{p}_pool", 3, 1, pad=1), _cbn(s, f"{p}_pool_proj", 192, 1)),
    ])


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionD)
def _inception_d(net: Net, p: str) -> None:
    _run_branches(net, [
        lambda s: (_cbn(s, f"{p}_3x3_1", 192, 1), _cbn(s, f"{p}_3x3_2", 320, 3, stride=2)),
        lambda s: (_cbn(s, f"{p}_7x7x3_1", 192, 1),
                   _cbn(s, f"{p}_7x7x3_2", 192, (1, 7), pad=(0, 3)),
                   _cbn(s, f"{p}_7x7x3_3", 192, (7, 1), pad=(3, 0)),
                   _cbn(s, f"{p}_7x7x3_4", 192, 3, stride=2)),
        lambda s: _pool(s, f"{p}_pool", 3, 2),
    ])


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionE's split 1x3 / 3x1)
def _split_3x3(s: Net, p: str) -> Net:
    """The 1x3 and 3x1 pair that Inception-E runs side by side (outputs concatenated)."""
    _run_branches(s, [
        lambda t: _cbn(t, f"{p}a", 384, (1, 3), pad=(0, 1)),
        lambda t: _cbn(t, f"{p}b", 384, (3, 1), pad=(1, 0)),
    ])
    return s


# Szegedy et al. CVPR 2016 (arXiv 1512.00567), Figs. 5-7 and Table 1; widths as torchvision's inception.py (InceptionE)
def _inception_e(net: Net, p: str) -> None:
    _run_branches(net, [
        lambda s: _cbn(s, f"{p}_1x1", 320, 1),
        lambda s: (_cbn(s, f"{p}_3x3_1", 384, 1), _split_3x3(s, f"{p}_3x3_2")),
        lambda s: (_cbn(s, f"{p}_3x3dbl_1", 448, 1), _cbn(s, f"{p}_3x3dbl_2", 384, 3, pad=1),
                   _split_3x3(s, f"{p}_3x3dbl_3")),
        lambda s: (_pool(s, f"{p}_pool", 3, 1, pad=1), _cbn(s, f"{p}_pool_proj", 192, 1)),
    ])


def inception_v3() -> Model:
    """Inception-v3 (Szegedy et al. CVPR 2016) on 299x299 images, no auxiliary head.

    Layer list as torchvision's ``inception_v3`` (Mixed_5b ... Mixed_7c); batch norm
    with scale and shift; 23,834,568 parameters without the auxiliary classifier.
    """
    net = Net("inception-v3", (3, 299, 299))
    _cbn(net, "conv1a_3x3", 32, 3, stride=2)
    _cbn(net, "conv2a_3x3", 32, 3)
    _cbn(net, "conv2b_3x3", 64, 3, pad=1)
    net.pool("pool1", 3, 2)
    _cbn(net, "conv3b_1x1", 80, 1)
    _cbn(net, "conv4a_3x3", 192, 3)
    net.pool("pool2", 3, 2)
    _inception_a(net, "mixed5b", 32)
    _inception_a(net, "mixed5c", 64)
    _inception_a(net, "mixed5d", 64)
    _inception_b(net, "mixed6a")
    for name, c7 in (("mixed6b", 128), ("mixed6c", 160), ("mixed6d", 160), ("mixed6e", 192)):
        _inception_c(net, name, c7)
    _inception_d(net, "mixed7a")
    _inception_e(net, "mixed7b")
    _inception_e(net, "mixed7c")
    net.global_pool("pool3")
    net.fc("fc", 1000)
    return Model("inception-v3", tuple(net.layers), (3, 299, 299), "imagenet-1k",
                 DATASETS["imagenet-1k"],
                 "Szegedy et al. CVPR 2016 (Inception-v3); torchvision layer list")
