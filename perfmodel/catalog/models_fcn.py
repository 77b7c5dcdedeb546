"""'fcn-summit': a fully-convolutional encoder-decoder after Laanait et al. 2019.

Laanait et al. (arXiv 1909.11150) train a fully-convolutional network that maps
convergent-beam electron diffraction (CBED) data to the projected electrostatic
potential of the sample, on 27,600 V100 GPUs of Summit. The abstract does not give
the network's size, so this entry is an APPROXIMATION built from stated
assumptions; it was not adjusted to make any throughput or efficiency come out.

Assumptions (each one a choice, not a published figure):

A1. Input: 1024 channels of 128 x 128 (a 32 x 32 scan of CBED patterns, each
    binned to 128 x 128, stacked as channels); output: one 128 x 128 map.
A2. Encoder: a 3x3 stem to 256 channels, then four stages of two 3x3
    convolutions (batch norm, ReLU) followed by a 2x2 stride-2 convolution that
    halves the map; widths 256, 256, 512, 512; bottleneck of two 3x3 convolutions
    with 1024 channels at 8 x 8.
A3. Decoder: the mirror image: per stage a 2x2 stride-2 transposed convolution
    that doubles the map, then two 3x3 convolutions; widths 512, 512, 256, 256.
    No skip connections (encoder-decoder, not U-Net).
A4. Head: a 1x1 convolution to one output channel.
A5. Convolutions have no bias (batch norm follows each), except the head.

Examples
--------
>>> m = fcn_summit()
>>> m.input_shape
(1024, 128, 128)
>>> m.layers[-1].activation_elements      # one 128 x 128 output map
16384
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.catalog.layers import Net
from dlscale.perfmodel.training.workload import Model

__all__ = ["FCN_WIDTHS", "fcn_summit"]

#: Encoder stage widths (assumption A2); the decoder uses them in reverse (A3).
FCN_WIDTHS = (256, 256, 512, 512)
#: Bottleneck width (assumption A2).
FCN_BOTTLENECK = 1024


# assumption A2: 3x3 convolutions, batch norm, ReLU
def _cbr(net: Net, name: str, ch: int, k: int = 3) -> None:
    net.conv(name, ch, k, pad=k // 2, bias=False)
    net.bn(f"{name}_bn")
    net.relu(f"{name}_relu")


def fcn_summit() -> Model:
    """The approximate Summit FCN of assumptions A1-A5 (see the module docstring)."""
    net = Net("fcn-summit", (1024, 128, 128))      # assumption A1
    _cbr(net, "stem", FCN_WIDTHS[0])
    for i, w in enumerate(FCN_WIDTHS):
        _cbr(net, f"enc{i}_conv1", w)
        _cbr(net, f"enc{i}_conv2", w)
        net.conv(f"enc{i}_down", w, 2, stride=2, bias=False)
    _cbr(net, "mid_conv1", FCN_BOTTLENECK)
    _cbr(net, "mid_conv2", FCN_BOTTLENECK)
    for i, w in enumerate(reversed(FCN_WIDTHS)):
        net.deconv(f"dec{i}_up", w, 2, 2, bias=False)
        _cbr(net, f"dec{i}_conv1", w)
        _cbr(net, f"dec{i}_conv2", w)
    net.conv("head", 1, 1)
    return Model("fcn-summit", tuple(net.layers), (1024, 128, 128), "cbed-summit",  # A1, assumed
                 DATASETS["cbed-summit"],
                 "approximation after Laanait et al. 2019 (arXiv 1909.11150); assumptions A1-A5")
