"""Residual networks (He et al., CVPR 2016): ResNet-50 and ResNet-101.

Bottleneck blocks (1x1 reduce, 3x3, 1x1 expand, each convolution without bias and
followed by batch norm) with the stride of a downsampling block on the 3x3
convolution: the "v1.5" form of torchvision, NVIDIA's and MLPerf's reference code.
The original paper puts the stride on the first 1x1 (v1), which costs 3.86 G
instead of 4.1 G multiply-adds per 224x224 image; the parameter count is the same.

FLOP convention: a multiply-add counts 2 FLOPs. ResNet-50 is "4.1 GFLOPs" in most
tables, where "FLOPs" means multiply-adds; in this catalog it is about 8.2 GFLOPs
of convolutions and fully connected layer (plus about 1% for batch norm, ReLU,
pooling and the residual additions).

Examples
--------
>>> m = resnet50()
>>> m.params
25557032
>>> conv_fc = sum(l.forward_flops for l in m.layers if l.kind in ("conv", "fc"))
>>> round(conv_fc / 2 / 1e9, 2)       # multiply-adds, G
4.09
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.catalog.layers import Net
from dlscale.perfmodel.training.workload import Layer, Model

__all__ = ["resnet", "resnet50", "resnet101"]

#: Bottleneck blocks per stage (He et al. 2016, Table 1).
RESNET_BLOCKS: dict[int, tuple[int, int, int, int]] = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}


def _conv_bn(net: Net, name: str, out_ch: int, kernel: int, stride: int = 1,
             pad: int = 0, relu: bool = True) -> None:
    net.conv(name, out_ch, kernel, stride=stride, pad=pad, bias=False)
    net.bn(f"{name}_bn")
    if relu:
        net.relu(f"{name}_relu")


# He et al. CVPR 2016 (arXiv 1512.03385), Fig. 5 and Table 1: 1x1, 3x3, 1x1 (4x width)
def _bottleneck(net: Net, name: str, width: int, stride: int) -> None:
    c_in = net.shape[0]
    out_ch = 4 * width
    entry_shape = net.shape
    _conv_bn(net, f"{name}_a", width, 1)
    _conv_bn(net, f"{name}_b", width, 3, stride=stride, pad=1)
    _conv_bn(net, f"{name}_c", out_ch, 1, relu=False)
    main_shape = net.shape
    if stride != 1 or c_in != out_ch:
        shortcut = Net(net.name, entry_shape)
        shortcut.layers = net.layers
        _conv_bn(shortcut, f"{name}_proj", out_ch, 1, stride=stride, relu=False)
    n = out_ch * main_shape[1] * main_shape[2]
    # residual addition and the ReLU after it: 1 FLOP per element each
    net.add(Layer(f"{name}_add", "other", 0, float(n), n), main_shape)
    net.relu(f"{name}_relu")


# He et al. CVPR 2016, Table 1: 7x7/2 stem, 3x3/2 max-pool, stage widths 64-512, fc 1000
def resnet(depth: int) -> Model:
    """ResNet-``depth`` (50, 101 or 152) on 224x224 ImageNet images.

    Parameters
    ----------
    depth : int
        50, 101 or 152 (a key of :data:`RESNET_BLOCKS`).

    Returns
    -------
    Model
        Layer by layer (bottleneck blocks), with the source of its shapes.
    """
    net = Net(f"resnet{depth}", (3, 224, 224))
    _conv_bn(net, "conv1", 64, 7, stride=2, pad=3)
    net.pool("pool1", 3, 2, pad=1)
    for stage, (blocks, width) in enumerate(zip(RESNET_BLOCKS[depth], (64, 128, 256, 512), strict=True),
                                            start=2):
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 2) else 1
            _bottleneck(net, f"res{stage}{chr(ord('a') + b) if b < 26 else b}", width, stride)
    net.global_pool("pool5")
    net.fc("fc1000", 1000)
    return Model(f"resnet{depth}", tuple(net.layers), (3, 224, 224), "imagenet-1k",
                 DATASETS["imagenet-1k"],
                 "He et al. CVPR 2016, Table 1; stride on 3x3 (torchvision v1.5)")


# He et al. CVPR 2016, Table 1 (50-layer)
def resnet50() -> Model:
    """ResNet-50: 25,557,032 parameters, 4.1 G multiply-adds per image."""
    return resnet(50)


# He et al. CVPR 2016, Table 1 (101-layer)
def resnet101() -> Model:
    """ResNet-101: 44,549,160 parameters, 7.8 G multiply-adds per image."""
    return resnet(101)
