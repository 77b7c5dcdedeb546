"""Compute devices: KNL, Xeon, POWER9 and NVIDIA GPUs, with datasheet figures.

``sustained_fraction`` is ONE figure per device and precision: the fraction of the
device's peak that a dense matrix multiply sustains in training (the reference class
of :mod:`dlscale.perfmodel.compute.efficiency`). It is not typed in: it is SOLVED from a cited
end-to-end training measurement (a model, a batch, a precision, samples/s on one
device) so that the same model that predicts -- :func:`~dlscale.perfmodel.compute.roofline.layer_times`
(the roofline with its per-class efficiencies, batch utilization and memory ceiling)
plus :func:`~dlscale.perfmodel.compute.roofline.update_s` -- gives back exactly that rate
(:func:`solve_fraction`, bisection). Each is measured in the precision the device
trains in natively: fp32 up to Pascal; mixed precision (tensor cores) on Volta, whose
``peak_fp16_flops`` is the tensor-core peak. Where no measurement on the exact part
exists, the one from its closest sibling (same microarchitecture) is solved on the
sibling's own figures and transferred; the comment says so. No value was chosen to
make a published scaling figure come out.

:data:`FRACTION_SOURCES` keeps every measurement (device, model, batch, precision,
rate), so a test can predict it back through the public ``predict`` path.

Examples
--------
>>> v100 = DEVICES["v100-sxm2"]
>>> v100.peak_fp16_flops / 1e12, v100.memory_bandwidth_Bps / 1e9
(125.0, 900.0)
>>> src = FRACTION_SOURCES["v100-sxm2 (fp16)"]
>>> src.samples_per_s, src.batch, src.model.name
(1075.0, 256, 'resnet50')
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dlscale.perfmodel.catalog.devices_2020s import BASE_2020S, RATES, STAND_INS
from dlscale.perfmodel.catalog.models_cnn import alexnet
from dlscale.perfmodel.catalog.models_resnet import resnet50
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Device
from dlscale.perfmodel.training.workload import Model
from dlscale.perfmodel.units import GB, TFLOPS, GB_per_s, GHz

__all__ = ["DEVICES", "FRACTION_DERIVATIONS", "FRACTION_SOURCES", "FractionSource",
           "measured_fraction", "solve_fraction"]

_RESNET50 = resnet50()      # 8.24e9 FLOPs per 224x224 image
_ALEXNET = alexnet()        # 1.46e9 FLOPs per 227x227 image

#: device name -> one-line derivation of its sustained_fraction (shown by the catalog).
FRACTION_DERIVATIONS: dict[str, str] = {}


@dataclass(frozen=True)
class FractionSource:
    """One cited single-device training measurement a sustained fraction is solved from.

    ``device`` is the part the measurement ran on (its own fraction is a placeholder);
    ``applies_to`` the catalog devices that take the solved fraction.
    """

    device: Device
    model: Model
    batch: int
    precision: str
    samples_per_s: float
    text: str
    applies_to: tuple[str, ...]


#: label -> the measurement behind a sustained fraction.
FRACTION_SOURCES: dict[str, FractionSource] = {}


def measured_fraction(samples_per_s: float, forward_flops: float, peak_flops: float) -> float:
    """Effective fraction of ``peak_flops`` a run of ``samples_per_s`` implies (``3 x forward``).

    Counts the direct-convolution FLOPs, so it can exceed 1 where fast algorithms run
    (not the device's sustained fraction, which :func:`solve_fraction` gives).

    Parameters
    ----------
    samples_per_s : float
        Measured training throughput (a cited benchmark).
    forward_flops : float
        Forward FLOPs per sample; training is counted as three times that.
    peak_flops : float
        The device's peak at the run's precision.

    Returns
    -------
    float
        The sustained fraction the catalog stores.

    Examples
    --------
    >>> round(measured_fraction(219.0, 8.24e9, 10.6e12), 3)   # P100, ResNet-50, TF
    0.511
    """
    # a training step costs 3x the forward pass (backward = 2x forward: gradients with
    # respect to inputs and to weights; Kaplan et al. 2020, arXiv 2001.08361, Sec. 2.1)
    return samples_per_s * 3.0 * forward_flops / peak_flops


def _with_fraction(device: Device, precision: str, fraction: float) -> Device:
    if precision == "fp16" and device.sustained_fraction_fp16 > 0:
        return replace(device, sustained_fraction_fp16=fraction)
    return replace(device, sustained_fraction=fraction)


def _rate(device: Device, model: Model, precision: str, batch: int) -> float:
    t = layer_times(model, device, precision, batch).total_s + update_s(model.params, device)
    return batch / float(t)


def solve_fraction(device: Device, model: Model, precision: str, batch: int,
                   samples_per_s: float) -> float:
    """The sustained fraction at which one ``device`` trains ``model`` at ``samples_per_s``.

    Bisection on the fraction in ``(0, 1]`` of the same per-iteration time the model
    predicts (forward, backward, weight update; momentum SGD); the rate grows with the
    fraction. A rate that even a fraction of 1 cannot reach is a ConfigError.

    Examples
    --------
    >>> p100 = DEVICES["p100-sxm2"]
    >>> f = solve_fraction(p100, _RESNET50, "fp32", 64, 219.0)
    >>> round(_rate(_with_fraction(p100, "fp32", f), _RESNET50, "fp32", 64), 6)
    219.0
    """
    lo, hi = 0.0, 1.0
    top = _rate(_with_fraction(device, precision, hi), model, precision, batch)
    if top < samples_per_s:
        raise ConfigError(
            f"sustained_fraction of {device.name}: {samples_per_s:g} samples/s of {model.name} "
            f"at batch {batch} needs more than the whole {precision} peak in this model "
            f"(at most {top:.4g} samples/s)")
    # numerical: bisection halves the bracket until it is 1e-12 wide (about 40 of the
    # at most 200 steps); the solved fraction is exact to round-off
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _rate(_with_fraction(device, precision, mid), model, precision, batch) < samples_per_s:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:       # numerical: see the loop above
            break
    return hi


def _derive(label: str, device: Device, model: Model, precision: str, batch: int,
            samples_per_s: float, text: str, applies_to: tuple[str, ...]) -> float:
    frac = solve_fraction(device, model, precision, batch, samples_per_s)
    FRACTION_SOURCES[label] = FractionSource(_with_fraction(device, precision, frac), model,
                                             batch, precision, samples_per_s, text, applies_to)
    for name in applies_to:
        FRACTION_DERIVATIONS[name] = (f"{text}; solved so that the model gives it back "
                                      f"-> {frac:.3f}")
    return frac


# ---------------------------------------------------------------------------------
# Intel Xeon Phi (Knights Landing). Peak = cores x 2 AVX-512 VPUs x 8 fp64 lanes x 2
# (FMA) x base clock = 32 fp64 FLOP/cycle/core (Sodani et al., IEEE Micro 36(2) 2016);
# fp32 twice that; no faster fp16 math (fp16 peak = fp32 peak). Intel ARK: 7250 68
# cores 1.40 GHz 215 W; 7230 64 cores 1.30 GHz 215 W; 16 GB MCDRAM on package.
# Memory: 96 GB DDR4-2400 per node on Cori and Stampede2 (NERSC Cori and TACC
# Stampede2 user guides); bandwidths are STREAM triad as Intel publishes them
# (K. Raman, "Optimizing memory bandwidth in Knights Landing on STREAM Triad", Intel
# 2016): about 90 GB/s DDR4 and 490 GB/s MCDRAM in flat mode; cache mode about
# 350 GB/s (MCDRAM as a memory-side cache, tag and miss overheads; same article,
# approximate).
# Sustained fraction: Intel Caffe (MKL2017 engine) AlexNet training on one Xeon Phi
# 7250 in cache mode, batch 256: 444 images/s (intel/caffe GitHub issue #132, 2017,
# "caffe time" with models/intel_optimized_models/alexnet/knl); solved on the 7250
# cache-mode entry. The 7230 (same core, fewer and slower cores) and the flat-mode
# entries take the same fraction.
_PLACEHOLDER = 0.5      # replaced by the solved fraction before DEVICES is built


def _knl(name: str, cores: int, clock_hz: float, mode: str) -> Device:
    fp64 = cores * clock_hz * 32        # 32 fp64 FLOP/cycle/core (Sodani et al. 2016)
    return Device(
        name=name, kind="knl", cores=cores, clock_hz=clock_hz,
        peak_fp64_flops=fp64, peak_fp32_flops=2 * fp64, peak_fp16_flops=2 * fp64,
        memory_bytes=96 * GB,                           # DDR4 per node (NERSC, TACC guides)
        memory_bandwidth_Bps=90 * GB_per_s,             # DDR4 STREAM triad (Intel, Raman 2016)
        sustained_fraction=_PLACEHOLDER,
        fast_memory_bytes=16 * GB,                      # MCDRAM (Intel ARK)
        fast_memory_bandwidth_Bps=(490 if mode == "flat" else 350) * GB_per_s,  # STREAM, above
        memory_mode=mode, tdp_w=215.0,                  # Intel ARK
        # definition: both bandwidths above are STREAM triad already, so a streaming
        # kernel reaches all of them (perfmodel/compute/streaming.py applies no share)
        stream_fraction=1.0,
        source="Intel ARK; Sodani et al. IEEE Micro 2016; Intel STREAM-on-KNL note (Raman 2016)",
    )


# ---------------------------------------------------------------------------------
# Intel Xeon Platinum 8160 (Skylake-SP), one socket: 24 cores, 2.1 GHz nominal, two
# AVX-512 FMA units = 32 fp64 FLOP/cycle/core (Intel ARK; the TOP500 Rpeak of
# Stampede2 counts the SKX nodes at 2.1 GHz). 6 channels DDR4-2666 = 128 GB/s per
# socket; 96 GB per socket on Stampede2 (192 GB per 2-socket node, TACC guide).
# Sustained fraction: no published single-node training throughput for the 8160 was
# found; the closest Xeon figure with the same library (MKL-DNN): Intel Caffe AlexNet
# training at 256 images/s on 2 x Xeon E5-2699 v3 (01org/caffe pull request #16, 2016;
# batch not stated there: Caffe's AlexNet default of 256 is assumed). Solved on the
# Haswell pair's own figures (below) and transferred to Skylake-SP as is.
# Intel ARK E5-2699 v3: 18 cores, 2.3 GHz, AVX2 2 FMA units = 16 fp64 (32 fp32)
# FLOP/cycle/core, 4 x DDR4-2133 = 68 GB/s per socket, 145 W; up to 768 GB per socket.
_HASWELL_2S = Device(
    name="2x-xeon-e5-2699v3", kind="cpu", cores=36, clock_hz=2.3 * GHz,
    peak_fp64_flops=36 * 2.3 * GHz * 16, peak_fp32_flops=36 * 2.3 * GHz * 32,
    peak_fp16_flops=36 * 2.3 * GHz * 32, memory_bytes=2 * 768 * GB,
    memory_bandwidth_Bps=2 * 4 * 2.133e9 * 8, sustained_fraction=_PLACEHOLDER, tdp_w=290.0,
    source="Intel ARK Xeon E5-2699 v3 (two sockets)")
# POWER9 (Summit, IBM AC922): only the host in every catalog machine; no public DL
# training measurement on it was found, so the Xeon MKL-DNN fraction is used as a
# stand-in (documented; it enters only host-side compute, if any).

# ---------------------------------------------------------------------------------
# NVIDIA GPUs: peaks and memory from the NVIDIA datasheets / whitepapers named in each
# entry's source. Kepler and Pascal fp16 peak: K20X/K80 have no faster fp16 (= fp32);
# P100 runs fp16 at 2x fp32; V100's fp16 peak is the tensor-core peak.
# K80: one board carries two GK210 GPUs; frameworks see each GK210 as one device, so
# one catalog device is one GK210 = half a board (NVIDIA K80 datasheet, boost clock
# 875 MHz: board 8.73 TFLOPS fp32, 2.91 fp64, 24 GB GDDR5, 480 GB/s, 300 W).
# Sustained fractions:
#  - P100 (SXM2): TensorFlow benchmarks (tensorflow.org/performance/benchmarks, 2017),
#    DGX-1 P100, ResNet-50, batch 64, synthetic data, 1 GPU: 219 images/s fp32.
#  - K80 (GK210): same page, Google Compute Engine K80, ResNet-50 batch 64: 52 images/s.
#  - V100 (SXM2), mixed precision (sustained_fraction_fp16): NVIDIA developer blog
#    "Volta Tensor Core GPU achieves new AI performance milestones" (May 2018): one
#    V100, ResNet-50 training, mixed precision, 1,075 images/s; against the 125 TFLOPS
#    tensor-core peak.
#  - V100 (SXM2), fp32 (sustained_fraction): Dell EMC "Ready Solutions for AI: Deep
#    Learning with NVIDIA" reference guide v1.0 (2018), section 3.1.2: in fp32 with
#    TensorFlow, V100-SXM2 trains ResNet-50 26% faster than P100-SXM2; applied to the
#    TF-benchmarks P100 figure above: 1.26 x 219 = 276 images/s, against 15.7 TFLOPS.
#  - K20X: Caffe (caffe.berkeleyvision.org, performance notes): "4 ms/image for
#    learning" with CaffeNet on one K40 = 250 images/s (batch 256, the CaffeNet
#    reference solver's); CaffeNet has AlexNet's FLOPs. Solved on the K40's own
#    figures (NVIDIA Tesla K40 datasheet: GK110B, 15 SMX, 2880 cores, 875 MHz boost,
#    5.04 TFLOPS fp32, 1.68 fp64, 12 GB, 288 GB/s, 235 W) and transferred to the K20X
#    (GK110, same SMX design).
#  - P100 PCIe and V100 PCIe use the fraction of their SXM2 sibling (same chip).
# Batches: the TF benchmarks page ran ResNet-50 at 64 per GPU; the Dell figure is a
# ratio applied to it (64 too); the NVIDIA blog does not state its batch: 256, the
# batch NVIDIA's own ResNet-50 scripts suggest for mixed precision on a 16 GB V100
# (NVIDIA DeepLearningExamples / NGC "ResNet v1.5 for TensorFlow", performance
# section), is assumed.


# Streaming bandwidth (Device.stream_fraction, perfmodel/compute/streaming.py): CUDA
# STREAM triad with ECC on, mohamso/stream-cuda README.md (commit 7a99f4f5, its table
# of devices): K20X 180.45 GB/s (Abel; 181.60 on Taurus), P100 557.23 (EPIC), K80
# 175.62 (Taurus, one GK210); over the datasheet figures 250, 732 and 240 GB/s. The
# K40 (GK110B, the K20X's sibling) takes the K20X share and both P100s the P100's
# (same HBM2 stack, 732 GB/s). No such figure was found for V100: it takes the
# common share (HBM_ACHIEVABLE_FRACTION), as do the CPUs, whose catalog figures are
# channel x rate x width, not STREAM (an assumption beyond the A100 it is measured on).
# https://github.com/mohamso/stream-cuda README.md, STREAM Triad table (ECC on):
_STREAM_K20X = 180.45 / 250        # K20X 180.45 GB/s; K20X datasheet 250 GB/s
_STREAM_P100 = 557.23 / 732        # P100 557.23 GB/s; P100 datasheet 732 GB/s
_STREAM_K80 = 175.62 / 240         # K80 175.62 GB/s; K80 datasheet 240 GB/s per GK210


def _gpu(name: str, sms: int, clock_hz: float, fp64: float, fp32: float, fp16: float,
         mem_gb: float, bw_gbps: float, frac: float, tdp_w: float, source: str,
         frac_fp16: float = 0.0, stream: float = 0.0) -> Device:
    return Device(name=name, kind="gpu", cores=sms, clock_hz=clock_hz,
                  peak_fp64_flops=fp64 * TFLOPS, peak_fp32_flops=fp32 * TFLOPS,
                  peak_fp16_flops=fp16 * TFLOPS, memory_bytes=mem_gb * GB,
                  memory_bandwidth_Bps=bw_gbps * GB_per_s, sustained_fraction=frac,
                  sustained_fraction_fp16=frac_fp16, tdp_w=tdp_w, source=source,
                  stream_fraction=stream)


_BASE: dict[str, Device] = {
    # Intel ARK: Xeon Phi 7250 68 cores 1.40 GHz; 7230 64 cores 1.30 GHz
    "xeon-phi-7250-flat": _knl("xeon-phi-7250-flat", 68, 1.40 * GHz, "flat"),  # Intel ARK
    "xeon-phi-7250-cache": _knl("xeon-phi-7250-cache", 68, 1.40 * GHz, "cache"),  # Intel ARK
    "xeon-phi-7230-flat": _knl("xeon-phi-7230-flat", 64, 1.30 * GHz, "flat"),  # Intel ARK
    "xeon-phi-7230-cache": _knl("xeon-phi-7230-cache", 64, 1.30 * GHz, "cache"),  # Intel ARK
    "xeon-8160": Device(
        name="xeon-8160", kind="cpu", cores=24, clock_hz=2.1 * GHz,
        peak_fp64_flops=24 * 2.1 * GHz * 32,          # 1.61 TFLOPS (AVX-512, 2 FMA units)
        peak_fp32_flops=24 * 2.1 * GHz * 64,          # 3.23 TFLOPS
        peak_fp16_flops=24 * 2.1 * GHz * 64,          # no faster fp16 math
        memory_bytes=96 * GB,                         # half of 192 GB/node (TACC guide)
        memory_bandwidth_Bps=6 * 2.666e9 * 8,         # 6 x DDR4-2666 x 8 B = 128 GB/s
        sustained_fraction=_PLACEHOLDER, tdp_w=150.0,   # Intel ARK
        source="Intel ARK Xeon Platinum 8160; TACC Stampede2 user guide"),
    "power9-22c": Device(
        name="power9-22c", kind="cpu", cores=22, clock_hz=3.07 * GHz,
        # 8 fp64 FLOP/cycle per SMT4 core (2 x 2-wide fp64 FMA, IBM POWER9 user manual)
        peak_fp64_flops=22 * 3.07 * GHz * 8, peak_fp32_flops=22 * 3.07 * GHz * 16,
        peak_fp16_flops=22 * 3.07 * GHz * 16,
        memory_bytes=256 * GB,                        # 512 GB DDR4 per node / 2 (OLCF guide)
        memory_bandwidth_Bps=8 * 2.666e9 * 8,         # 8 x DDR4-2666 = 170 GB/s per socket
        sustained_fraction=_PLACEHOLDER, tdp_w=190.0,
        source="OLCF Summit user guide; IBM POWER9 processor user manual"),
    # NVIDIA Tesla K20X datasheet: 14 SMX, 732 MHz, 1.31 / 3.95 TFLOPS, 6 GB, 250 GB/s, 235 W
    "k20x": _gpu("k20x", 14, 0.732 * GHz, 1.31, 3.95, 3.95, 6, 250, _PLACEHOLDER, 235.0,
                 "NVIDIA Tesla K20X datasheet", stream=_STREAM_K20X),
    # NVIDIA Tesla K80 datasheet, per GK210 (half board): 13 SMX, 875 MHz boost,
    # 1.455 / 4.365 TFLOPS, 12 GB, 240 GB/s, 150 W
    "k80": _gpu("k80", 13, 0.875 * GHz, 2.91 / 2, 8.73 / 2, 8.73 / 2, 12, 240, _PLACEHOLDER,
                150.0, "NVIDIA Tesla K80 datasheet (one GK210 of two per board)",
                stream=_STREAM_K80),
    # NVIDIA Tesla P100 datasheet / Pascal whitepaper: SXM2 56 SMs 1480 MHz 5.3/10.6/21.2
    # TFLOPS, 16 GB HBM2 732 GB/s, 300 W; PCIe 1303 MHz 4.7/9.3/18.7 TFLOPS, 250 W
    "p100-sxm2": _gpu("p100-sxm2", 56, 1.480 * GHz, 5.3, 10.6, 21.2, 16, 732, _PLACEHOLDER,
                      300.0, "NVIDIA Tesla P100 datasheet; Pascal GP100 whitepaper",
                      stream=_STREAM_P100),
    "p100-pcie": _gpu("p100-pcie", 56, 1.303 * GHz, 4.7, 9.3, 18.7, 16, 732, _PLACEHOLDER,
                      250.0, "NVIDIA Tesla P100 PCIe datasheet", stream=_STREAM_P100),
    # NVIDIA Tesla V100 datasheet / Volta whitepaper: SXM2 80 SMs 1530 MHz 7.8/15.7/125
    # TFLOPS, 16 GB HBM2 900 GB/s, 300 W; PCIe 1380 MHz 7/14/112 TFLOPS, 250 W
    "v100-sxm2": _gpu("v100-sxm2", 80, 1.530 * GHz, 7.8, 15.7, 125.0, 16, 900, _PLACEHOLDER,
                      300.0, "NVIDIA Tesla V100 datasheet; Volta GV100 whitepaper",
                      frac_fp16=_PLACEHOLDER),
    "v100-pcie": _gpu("v100-pcie", 80, 1.380 * GHz, 7.0, 14.0, 112.0, 16, 900, _PLACEHOLDER,
                      250.0, "NVIDIA Tesla V100 PCIe datasheet", frac_fp16=_PLACEHOLDER),
}

_K40 = _gpu("k40", 15, 0.875 * GHz, 1.68, 5.04, 5.04, 12, 288, _PLACEHOLDER, 235.0,
            "NVIDIA Tesla K40 datasheet", stream=_STREAM_K20X)
_KNL = ("xeon-phi-7250-flat", "xeon-phi-7250-cache", "xeon-phi-7230-flat", "xeon-phi-7230-cache")
_FP32 = {
    # intel/caffe GitHub issue #132 (2017): KNL 7250 cache mode, AlexNet batch 256, 444 img/s
    **dict.fromkeys(_KNL, _derive(
        "xeon-phi-7250-cache", _BASE["xeon-phi-7250-cache"], _ALEXNET, "fp32", 256, 444.0,
        "Intel Caffe AlexNet training, KNL 7250 cache mode, batch 256, 444 img/s "
        "(intel/caffe#132)", _KNL)),
    # 01org/caffe pull request #16 (2016): 2x E5-2699 v3, AlexNet, 256 img/s; batch 256
    # assumed (Caffe's AlexNet default, not stated there)
    **dict.fromkeys(("xeon-8160", "power9-22c"), _derive(
        "2x-xeon-e5-2699v3", _HASWELL_2S, _ALEXNET, "fp32", 256, 256.0,
        "Intel Caffe (MKL-DNN) AlexNet training, 2x E5-2699 v3, batch 256, 256 img/s "
        "(01org/caffe#16; Haswell sibling)", ("xeon-8160", "power9-22c"))),
    # caffe.berkeleyvision.org performance notes: 4 ms/image learning on a K40 = 250
    # img/s; batch 256 of the CaffeNet reference solver
    "k20x": _derive("k40", _K40, _ALEXNET, "fp32", 256, 250.0,
                    "Caffe CaffeNet 4 ms/image learning on K40, batch 256 = 250 img/s "
                    "(GK110 sibling)", ("k20x",)),
    # tensorflow.org/performance/benchmarks (2017): GCE K80, ResNet-50 batch 64, 52 img/s
    "k80": _derive("k80", _BASE["k80"], _RESNET50, "fp32", 64, 52.0,
                   "TF benchmarks GCE K80 (one GK210) ResNet-50 batch 64, 52 img/s", ("k80",)),
    # tensorflow.org/performance/benchmarks (2017): DGX-1 P100, ResNet-50 batch 64, 219 img/s
    **dict.fromkeys(("p100-sxm2", "p100-pcie"), _derive(
        "p100-sxm2", _BASE["p100-sxm2"], _RESNET50, "fp32", 64, 219.0,
        "TF benchmarks DGX-1 P100 ResNet-50 batch 64, 219 img/s", ("p100-sxm2", "p100-pcie"))),
    # Dell EMC Ready Solutions for AI reference guide v1.0 (2018), Sec. 3.1.2: V100 fp32
    # ResNet-50 1.26x P100-SXM2, applied to the 219 img/s above at batch 64
    **dict.fromkeys(("v100-sxm2", "v100-pcie"), _derive(
        "v100-sxm2", _BASE["v100-sxm2"], _RESNET50, "fp32", 64, 1.26 * 219.0,
        "Dell EMC AI reference guide: V100 fp32 TF ResNet-50 1.26 x P100 = 276 img/s at "
        "batch 64", ("v100-sxm2", "v100-pcie"))),
}
FRACTION_DERIVATIONS["power9-22c"] = (
    "no POWER9 DL training measurement found; the Xeon MKL-DNN figure is a stand-in: "
    + FRACTION_DERIVATIONS["power9-22c"])
# NVIDIA developer blog, May 2018: one V100, ResNet-50 mixed precision, 1,075 img/s;
# batch 256 assumed (NVIDIA's ResNet-50 scripts' mixed-precision batch, see above)
_FP16 = dict.fromkeys(("v100-sxm2", "v100-pcie"), _derive(
    "v100-sxm2 (fp16)", _BASE["v100-sxm2"], _RESNET50, "fp16", 256, 1075.0,
    "NVIDIA blog May 2018 ResNet-50 mixed precision, 1,075 img/s (batch 256 assumed)",
    ("v100-sxm2 (fp16)", "v100-pcie (fp16)")))

DEVICES: dict[str, Device] = {
    name: replace(dev, sustained_fraction=_FP32[name],
                  sustained_fraction_fp16=_FP16.get(name, 0.0))
    for name, dev in _BASE.items()
}
# the source entries of the catalog's own devices are the catalog entries
for _label, _src in list(FRACTION_SOURCES.items()):
    if _src.device.name in DEVICES:
        FRACTION_SOURCES[_label] = replace(_src, device=DEVICES[_src.device.name])


# ---------------------------------------------------------------------------------
# Accelerators of the 2020s (datasheets and cited rates: devices_2020s.py). The A100
# fractions are solved on the A100 80 GB figures from NVIDIA DeepLearningExamples'
# single-GPU ResNet-50 rates; the devices of STAND_INS have no cited single-device
# rate and take the A100 fractions as a stand-in (assumption, said in the catalog).
_MODELS = {"resnet50": _RESNET50, "alexnet": _ALEXNET}
_NEW: dict[tuple[str, str], float] = {}
for _cited in RATES:
    _fp16 = _cited.precision == "fp16"
    _standing = tuple(f"{n} (fp16)" if _fp16 else n
                      for n, label in STAND_INS.items() if label == _cited.device)
    _frac = _derive(_cited.label, BASE_2020S[_cited.device], _MODELS[_cited.model],
                    _cited.precision, _cited.batch, _cited.samples_per_s, _cited.text,
                    _cited.applies_to + _standing)
    for _name in _cited.applies_to + _standing:
        _NEW[(_name.removesuffix(" (fp16)"), _cited.precision)] = _frac
for _name in STAND_INS:
    FRACTION_DERIVATIONS[_name] = (
        "no cited single-device training rate found; assumption: the A100 fraction "
        "stands in: " + FRACTION_DERIVATIONS[_name])
DEVICES.update({
    name: replace(dev, sustained_fraction=_NEW[(name, "fp32")],
                  sustained_fraction_fp16=_NEW[(name, "fp16")])
    for name, dev in BASE_2020S.items()
})
for _label, _src in list(FRACTION_SOURCES.items()):
    if _src.device.name in BASE_2020S:
        FRACTION_SOURCES[_label] = replace(_src, device=DEVICES[_src.device.name])
