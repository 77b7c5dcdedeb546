"""Plain convolutional networks: LeNet, the EASGD CIFAR net, AlexNet, VGG.

Each builder walks the published layer list with :class:`~.layers.Net`; totals are
sums of per-layer figures computed from the geometry.

Examples
--------
>>> lenet().params                      # Caffe's LeNet: 431,080 weights and biases
431080
>>> round(alexnet().params / 1e6, 2)    # Caffe bvlc_alexnet: 60,965,224
60.97
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.catalog.layers import Net
from dlscale.perfmodel.training.workload import Model

__all__ = ["alexnet", "alexnet_cifar10", "cifar10_net", "lenet", "vgg", "vgg16", "vgg19"]


def _model(name: str, net: Net, input_shape: tuple[int, ...], dataset: str, source: str) -> Model:
    return Model(name, tuple(net.layers), input_shape, dataset, DATASETS[dataset], source)


# Caffe examples/mnist/lenet_train_test.prototxt (github.com/BVLC/caffe); LeCun et al. 1998
def lenet() -> Model:
    """LeNet-5 as in Caffe's ``examples/mnist/lenet_train_test.prototxt``.

    conv1 20@5x5 -> max-pool 2/2 -> conv2 50@5x5 -> max-pool 2/2 -> ip1 500 -> ReLU
    -> ip2 10, on 28x28 MNIST digits: 431,080 parameters.
    """
    net = Net("lenet", (1, 28, 28))
    net.conv("conv1", 20, 5)
    net.pool("pool1", 2, 2)
    net.conv("conv2", 50, 5)
    net.pool("pool2", 2, 2)
    net.fc("ip1", 500)
    net.relu("relu1")
    net.fc("ip2", 10)
    return _model("lenet", net, (1, 28, 28), "mnist",
                  "LeCun et al. 1998; Caffe examples/mnist/lenet_train_test.prototxt")


def cifar10_net() -> Model:
    """The 7-layer CIFAR-10 convnet of the EASGD paper (Zhang, Choromanska, LeCun 2015).

    Zhang et al. (NIPS 2015, Sec. 5 and supplement) train CIFAR-10 on random 3x28x28
    crops with: conv 64@5x5 -> ReLU -> max-pool, conv 128@5x5 -> ReLU -> max-pool,
    conv 64@3x3 -> ReLU -> max-pool, fc 256 -> ReLU, fc 256 -> ReLU, fc 10.
    The layer widths are as recalled from the paper's experimental section; the text
    could not be re-checked while writing this entry, so treat them as an assumption
    too. Assumptions where the text is silent: unpadded ("valid") convolutions with
    stride 1, as Torch7's ``SpatialConvolution`` defaults, and 2x2 max-pooling with
    stride 2. The parameter count (368,586) follows from those assumptions; no
    published total exists to check it against.
    """
    net = Net("cifar10-net", (3, 28, 28))
    for i, (ch, k) in enumerate(((64, 5), (128, 5), (64, 3)), start=1):
        net.conv(f"conv{i}", ch, k)
        net.relu(f"relu{i}")
        net.pool(f"pool{i}", 2, 2)
    net.fc("fc1", 256)
    net.relu("relu_fc1")
    net.fc("fc2", 256)
    net.relu("relu_fc2")
    net.fc("fc3", 10)
    return _model("cifar10-net", net, (3, 28, 28), "cifar-10",
                  "Zhang, Choromanska, LeCun, NIPS 2015 (EASGD), CIFAR-10 network")


def _alexnet_layers(net: Net, groups: int, classes: int) -> None:
    """AlexNet layers (Krizhevsky et al. 2012) in Caffe's bvlc_alexnet order."""
    net.conv("conv1", 96, 11, stride=4)
    net.relu("relu1")
    net.lrn("norm1")
    net.pool("pool1", 3, 2, ceil=True)
    net.conv("conv2", 256, 5, pad=2, groups=groups)
    net.relu("relu2")
    net.lrn("norm2")
    net.pool("pool2", 3, 2, ceil=True)
    net.conv("conv3", 384, 3, pad=1)
    net.relu("relu3")
    net.conv("conv4", 384, 3, pad=1, groups=groups)
    net.relu("relu4")
    net.conv("conv5", 256, 3, pad=1, groups=groups)
    net.relu("relu5")
    net.pool("pool5", 3, 2, ceil=True)
    net.fc("fc6", 4096)
    net.relu("relu6")
    net.fc("fc7", 4096)
    net.relu("relu7")
    net.fc("fc8", classes)


def alexnet() -> Model:
    """AlexNet on ImageNet, Caffe's ``bvlc_alexnet`` (227x227 input, two-tower groups).

    60,965,224 parameters (Krizhevsky et al. 2012 quote "60 million"); about 0.72 G
    multiply-adds per image.
    """
    net = Net("alexnet", (3, 227, 227))
    _alexnet_layers(net, groups=2, classes=1000)
    return _model("alexnet", net, (3, 227, 227), "imagenet-1k",
                  "Krizhevsky et al. NIPS 2012; Caffe models/bvlc_alexnet")


# You, Buluc, Demmel SC'17 (arXiv 1708.02983): 249 MB of weights; AlexNet's layers
# (Krizhevsky et al. NIPS 2012, Fig. 2) on 227x227 inputs (see the docstring)
def alexnet_cifar10() -> Model:
    """AlexNet trained on CIFAR-10 in You, Buluc, Demmel (SC'17).

    The paper states only that the weights are 249 MB. How this entry is sized:
    CIFAR-10 images upscaled to 227x227 and fed to the single-tower AlexNet
    (``groups = 1``, the form Caffe and most frameworks use on one device) with the
    ImageNet 1000-way classifier kept. That is 62,378,344 parameters = 249.5 MB in
    fp32, within 0.2% of the stated 249 MB. With a 10-way classifier the same
    network has 58,325,066 parameters (233.3 MB, 6.3% below the stated size); the
    stated size points to the 1000-way head, so it is kept. The prototxt of the
    paper is not public: this is an inference from the stated weight size.
    """
    net = Net("alexnet-cifar10", (3, 227, 227))
    _alexnet_layers(net, groups=1, classes=1000)
    return _model("alexnet-cifar10", net, (3, 227, 227), "cifar-10",
                  "You, Buluc, Demmel SC'17 (249 MB weights); single-tower AlexNet")


#: VGG configurations D (16 weight layers) and E (19), Simonyan & Zisserman 2015,
#: Table 1; "M" is a 2x2/2 max-pool.
VGG_CONFIGS: dict[int, tuple[int | str, ...]] = {
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
         512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
         512, 512, 512, 512, "M"),
}


# Simonyan & Zisserman, ICLR 2015 (arXiv 1409.1556), Table 1: 3x3 convolutions, fc
# 4096-4096-1000, 224x224 inputs
def vgg(depth: int) -> Model:
    """VGG-``depth`` (16 or 19) on 224x224 ImageNet images.

    Parameters
    ----------
    depth : int
        16 or 19 (a key of ``VGG_CONFIGS``).

    Returns
    -------
    Model
        Layer by layer, with the source of its shapes.

    Examples
    --------
    >>> vgg(16).params, vgg(19).params
    (138357544, 143667240)
    """
    net = Net(f"vgg{depth}", (3, 224, 224))
    block, conv = 1, 1
    for item in VGG_CONFIGS[depth]:
        if item == "M":
            net.pool(f"pool{block}", 2, 2)
            block, conv = block + 1, 1
        else:
            net.conv(f"conv{block}_{conv}", int(item), 3, pad=1)
            net.relu(f"relu{block}_{conv}")
            conv += 1
    net.fc("fc6", 4096)
    net.relu("relu6")
    net.fc("fc7", 4096)
    net.relu("relu7")
    net.fc("fc8", 1000)
    return _model(f"vgg{depth}", net, (3, 224, 224), "imagenet-1k",
                  "Simonyan & Zisserman, ICLR 2015, Table 1 (config D/E)")


# Simonyan & Zisserman 2015, Table 1 (configuration D)
def vgg16() -> Model:
    """VGG-16 (configuration D): 138,357,544 parameters."""
    return vgg(16)


# Simonyan & Zisserman 2015, Table 1 (configuration E)
def vgg19() -> Model:
    """VGG-19 (configuration E): 143,667,240 parameters."""
    return vgg(19)
