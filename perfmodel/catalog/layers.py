"""Layer-geometry helpers: parameters, forward FLOPs and activations from shapes.

A :class:`Net` walks a network from input to output, keeping the current tensor
shape ``(channels, height, width)`` (or ``(features,)`` after flattening), and each
method appends one :class:`~dlscale.perfmodel.training.workload.Layer` whose figures are
computed from the geometry, never typed in:

- convolution: ``params = k_h k_w (C_in / groups) C_out (+ C_out bias)``,
  ``flops = 2 k_h k_w (C_in / groups) C_out H_out W_out`` (a multiply-add counts
  2 FLOPs) ``+ C_out H_out W_out`` for the bias add;
- fully connected: ``params = n_in n_out (+ n_out)``, ``flops = 2 n_in n_out (+ n_out)``;
- batch norm: ``2 C`` parameters (scale and shift), 4 FLOPs per element at
  training time (subtract mean, divide by deviation, scale, shift);
- ReLU: 1 FLOP per element; pooling: ``k_h k_w`` FLOPs per output element;
  local response normalisation (AlexNet, GoogLeNet): ``2 n + 3`` FLOPs per element
  for a window of ``n`` channels.

Output sizes follow the usual floor rule ``(H + 2 p - k) // s + 1``; pooling can
use Caffe's ceil rule (``ceil=True``), as Caffe's AlexNet and GoogLeNet do.

Examples
--------
>>> net = Net("toy", (1, 28, 28))
>>> net.conv("conv1", 20, 5)              # Caffe LeNet's first layer
>>> net.layers[-1].params, net.shape
(520, (20, 24, 24))
>>> net.layers[-1].forward_flops          # 2*25*20*24*24 + bias adds
587520.0
"""

from __future__ import annotations

import math

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.workload import Layer

__all__ = ["Net", "conv_class", "conv_out"]


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def conv_out(size: int, kernel: int, stride: int, pad: int, ceil: bool = False) -> int:
    """Output size of a convolution or pooling window along one axis.

    Parameters
    ----------
    size, kernel, stride, pad : int
        Input size, window, stride and padding along the axis.
    ceil : bool, optional
        Round up (Caffe's pooling) instead of down.

    Returns
    -------
    int
        Output size.

    Examples
    --------
    >>> conv_out(227, 11, 4, 0)
    55
    >>> conv_out(55, 3, 2, 0), conv_out(112, 3, 2, 1)
    (27, 56)
    >>> conv_out(28, 3, 2, 0), conv_out(28, 3, 2, 0, ceil=True)
    (13, 14)
    """
    span = size + 2 * pad - kernel
    if span < 0:
        raise ConfigError(
            f"layer geometry: kernel {kernel} larger than padded input {size + 2 * pad}"
        )
    return (math.ceil(span / stride) if ceil else span // stride) + 1


def conv_class(kh: int, kw: int, sh: int, sw: int, groups: int, in_ch: int) -> str:
    """Efficiency class of a convolution (see :mod:`dlscale.perfmodel.compute.efficiency`).

    Examples
    --------
    >>> conv_class(3, 3, 1, 1, 1, 64), conv_class(3, 3, 2, 2, 1, 64)
    ('conv3x3', 'conv')
    >>> conv_class(1, 1, 2, 2, 1, 64), conv_class(3, 3, 1, 1, 64, 64), conv_class(7, 7, 2, 2, 1, 3)
    ('gemm', 'depthwise', 'conv')
    """
    if groups > 1 and groups == in_ch:
        return "depthwise"
    if kh == kw == 1:
        return "gemm"               # a 1x1 convolution is a matrix multiply, strided or not
    # Winograd F(m, 3x3) runs 3x3, stride-1, ungrouped layers (Lavin & Gray, CVPR 2016)
    if kh == kw == 3 and sh == sw == 1 and groups == 1:
        return "conv3x3"            # Winograd eligible
    return "conv"


class Net:
    """Builder of a layer list that tracks the current activation shape.

    Parameters
    ----------
    name : str
        Prefix used in error messages.
    shape : tuple of int
        Input shape ``(C, H, W)`` or ``(features,)``.
    """

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        self.name = name
        self.shape: tuple[int, ...] = tuple(shape)
        self.layers: list[Layer] = []

    # -- helpers -----------------------------------------------------------------
    def _chw(self, what: str) -> tuple[int, int, int]:
        if len(self.shape) != 3:    # definition: a feature map is (C, H, W)
            raise ConfigError(f"{self.name}: {what} needs a (C, H, W) input, got {self.shape}")
        c, h, w = self.shape
        return c, h, w

    def add(self, layer: Layer, shape: tuple[int, ...] | None = None) -> None:
        """Append a ready-made layer (and optionally set the new shape)."""
        self.layers.append(layer)
        if shape is not None:
            self.shape = tuple(shape)

    # -- layers ------------------------------------------------------------------
    def conv(self, name: str, out_ch: int, kernel: int | tuple[int, int],
             stride: int | tuple[int, int] = 1, pad: int | tuple[int, int] = 0,
             groups: int = 1, bias: bool = True) -> None:
        """2-D convolution ``kernel`` (square int or ``(k_h, k_w)``)."""
        c, h, w = self._chw(name)
        kh, kw = _pair(kernel)
        sh, sw = _pair(stride)
        ph, pw = _pair(pad)
        if c % groups or out_ch % groups:
            raise ConfigError(f"{self.name}.{name}: channels {c}->{out_ch} not divisible by groups {groups}")
        ho, wo = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        weights = kh * kw * (c // groups) * out_ch
        outputs = out_ch * ho * wo
        params = weights + (out_ch if bias else 0)
        # definition: one multiply-add = 2 FLOPs (the convention of peak FLOP/s figures)
        flops = 2.0 * kh * kw * (c // groups) * outputs + (outputs if bias else 0)
        self.layers.append(Layer(name, "conv", params, flops, outputs,
                                 algo=conv_class(kh, kw, sh, sw, groups, c)))
        self.shape = (out_ch, ho, wo)

    def deconv(self, name: str, out_ch: int, kernel: int, stride: int, bias: bool = True) -> None:
        """Transposed convolution with ``kernel == stride`` (exact upsampling by ``stride``)."""
        c, h, w = self._chw(name)
        ho, wo = h * stride, w * stride
        outputs = out_ch * ho * wo
        params = kernel * kernel * c * out_ch + (out_ch if bias else 0)
        # every input pixel scatters a k x k x out_ch patch: 2 k^2 C_in C_out H W flops
        # (definition: one multiply-add = 2 FLOPs)
        flops = 2.0 * kernel * kernel * c * out_ch * h * w + (outputs if bias else 0)
        # kernel == stride: every input pixel times a (C_in, k^2 C_out) matrix, a GEMM
        self.layers.append(Layer(name, "conv", params, flops, outputs, algo="gemm"))
        self.shape = (out_ch, ho, wo)

    def bn(self, name: str) -> None:
        """Batch normalisation over the channels (scale and shift)."""
        c, h, w = self._chw(name)
        n = c * h * w
        # 4 FLOPs per element: subtract the mean, divide by the deviation, scale, shift
        # (Ioffe & Szegedy 2015, arXiv 1502.03167, Algorithm 1; statistics not counted)
        self.layers.append(Layer(name, "norm", 2 * c, 4.0 * n, n))

    def relu(self, name: str) -> None:
        """ReLU; 1 FLOP per element (kept: its output is needed for backward)."""
        n = math.prod(self.shape)
        self.layers.append(Layer(name, "act", 0, float(n), n))

    # size 5: AlexNet's n = 5 (Krizhevsky et al. NIPS 2012, Sec. 3.3)
    def lrn(self, name: str, size: int = 5) -> None:
        """Local response normalisation across ``size`` channels."""
        n = math.prod(self.shape)
        # Krizhevsky et al. 2012, Sec. 3.3: b = a / (k + alpha sum a^2)^beta: a square and
        # an add per channel of the window (2 size), then add k, power, divide (3)
        self.layers.append(Layer(name, "norm", 0, float((2 * size + 3) * n), n))

    def pool(self, name: str, kernel: int, stride: int, pad: int = 0, ceil: bool = False) -> None:
        """Max or average pooling (same cost model)."""
        c, h, w = self._chw(name)
        ho, wo = conv_out(h, kernel, stride, pad, ceil), conv_out(w, kernel, stride, pad, ceil)
        n = c * ho * wo
        self.layers.append(Layer(name, "pool", 0, float(kernel * kernel * n), n))
        self.shape = (c, ho, wo)

    def global_pool(self, name: str) -> None:
        """Average over the whole feature map, then flatten to ``(C,)``."""
        c, h, w = self._chw(name)
        self.layers.append(Layer(name, "pool", 0, float(c * h * w), c))
        self.shape = (c,)

    def flatten(self) -> None:
        """Flatten ``(C, H, W)`` to ``(C*H*W,)`` (no layer, no cost)."""
        self.shape = (math.prod(self.shape),)

    def fc(self, name: str, out_features: int, bias: bool = True) -> None:
        """Fully connected layer on a flat input (flattens a map first)."""
        n_in = math.prod(self.shape)
        params = n_in * out_features + (out_features if bias else 0)
        flops = 2.0 * n_in * out_features + (out_features if bias else 0)  # definition: MAC = 2
        self.layers.append(Layer(name, "fc", params, flops, out_features))
        self.shape = (out_features,)

    def concat_channels(self, shapes: list[tuple[int, ...]]) -> None:
        """Set the shape to the channel concatenation of branch outputs."""
        hs = {(s[1], s[2]) for s in shapes}
        if len(hs) != 1:
            raise ConfigError(f"{self.name}: cannot concatenate maps of sizes {sorted(hs)}")
        h, w = hs.pop()
        self.shape = (sum(s[0] for s in shapes), h, w)

    def branch(self) -> Net:
        """A sub-builder starting from the current shape whose layers join this net."""
        sub = Net(self.name, self.shape)
        sub.layers = self.layers
        return sub
