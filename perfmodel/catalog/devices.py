"""Compute devices: KNL, Xeon, POWER9 and NVIDIA GPUs, with datasheet figures.

``sustained_fraction`` is ONE figure per device and precision: the fraction of the device's peak
that a cited deep-learning training measurement reached, computed here from the
measured throughput (:func:`measured_fraction`)::

    fraction = samples_per_s * 3 * forward_flops(model) / peak_flops(precision)

with ``3 x forward`` the usual training cost (forward, backward to activations,
backward to weights) and the forward FLOPs of the catalog's own layer-by-layer
model (a multiply-add counts 2). Each is measured in the precision the device
trains in natively: fp32 up to Pascal; mixed precision (tensor cores) on Volta,
whose ``peak_fp16_flops`` is the tensor-core peak. Where no measurement on the
exact part exists, the one from its closest sibling (same microarchitecture) is
used and the comment says so. No value was chosen to make a published scaling
figure come out.

Examples
--------
>>> v100 = DEVICES["v100-sxm2"]
>>> v100.peak_fp16_flops / 1e12, v100.memory_bandwidth_Bps / 1e9
(125.0, 900.0)
>>> round(v100.sustained_fraction_for("fp32"), 3), round(v100.sustained_fraction_for("fp16"), 3)
(0.434, 0.213)
"""

from __future__ import annotations

from ..hardware import Device
from ..units import GB, TFLOPS, GB_per_s, GHz
from .models_cnn import alexnet
from .models_resnet import resnet50

__all__ = ["DEVICES", "FRACTION_DERIVATIONS", "measured_fraction"]

_RESNET50_FWD = resnet50().forward_flops   # 8.24e9 FLOPs per 224x224 image
_ALEXNET_FWD = alexnet().forward_flops     # 1.46e9 FLOPs per 227x227 image

#: device name -> one-line derivation of its sustained_fraction (shown by the catalog).
FRACTION_DERIVATIONS: dict[str, str] = {}


def measured_fraction(samples_per_s: float, forward_flops: float, peak_flops: float) -> float:
    """Fraction of ``peak_flops`` reached by a training run of ``samples_per_s``.

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
    return samples_per_s * 3.0 * forward_flops / peak_flops


def _derive(names: tuple[str, ...], text: str, samples_per_s: float, forward_flops: float,
            peak_flops: float) -> float:
    frac = measured_fraction(samples_per_s, forward_flops, peak_flops)
    for name in names:
        FRACTION_DERIVATIONS[name] = f"{text} -> {frac:.3f}"
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
# "caffe time" with models/intel_optimized_models/alexnet/knl). 444 x 3 x 1.457e9 /
# 6.093e12 = 0.319. The 7230 (same core, fewer and slower cores) and the flat-mode
# entries use the same measured fraction.
_KNL_7250_FP32 = 68 * 1.40 * GHz * 64
_KNL_FRACTION = _derive(
    ("xeon-phi-7250-flat", "xeon-phi-7250-cache", "xeon-phi-7230-flat", "xeon-phi-7230-cache"),
    "Intel Caffe AlexNet training, KNL 7250, 444 img/s (intel/caffe#132) x 3 x 1.457 GFLOP "
    "/ 6.09 TFLOPS fp32", 444.0, _ALEXNET_FWD, _KNL_7250_FP32)


def _knl(name: str, cores: int, clock_hz: float, mode: str) -> Device:
    fp64 = cores * clock_hz * 32
    return Device(
        name=name, kind="knl", cores=cores, clock_hz=clock_hz,
        peak_fp64_flops=fp64, peak_fp32_flops=2 * fp64, peak_fp16_flops=2 * fp64,
        memory_bytes=96 * GB,                           # DDR4 per node (NERSC, TACC guides)
        memory_bandwidth_Bps=90 * GB_per_s,             # DDR4 STREAM triad (Intel, Raman 2016)
        sustained_fraction=_KNL_FRACTION,
        fast_memory_bytes=16 * GB,                      # MCDRAM (Intel ARK)
        fast_memory_bandwidth_Bps=(490 if mode == "flat" else 350) * GB_per_s,  # STREAM, above
        memory_mode=mode, tdp_w=215.0,                  # Intel ARK
        source="Intel ARK; Sodani et al. IEEE Micro 2016; Intel STREAM-on-KNL note (Raman 2016)",
    )


# ---------------------------------------------------------------------------------
# Intel Xeon Platinum 8160 (Skylake-SP), one socket: 24 cores, 2.1 GHz nominal, two
# AVX-512 FMA units = 32 fp64 FLOP/cycle/core (Intel ARK; the TOP500 Rpeak of
# Stampede2 counts the SKX nodes at 2.1 GHz). 6 channels DDR4-2666 = 128 GB/s per
# socket; 96 GB per socket on Stampede2 (192 GB per 2-socket node, TACC guide).
# Sustained fraction: no published single-node training throughput for the 8160 was
# found; the closest Xeon figure with the same library (MKL-DNN): Intel Caffe AlexNet
# training at 256 images/s on 2 x Xeon E5-2699 v3 (Haswell-EP, 2 x 18 cores x 2.3 GHz
# x 32 fp32 FLOP/cycle = 2.65 TFLOPS fp32) (01org/caffe pull request #16, 2016).
# 256 x 3 x 1.457e9 / 2.65e12 = 0.422. Transferred to Skylake-SP as is.
_HSW_2S_FP32 = 2 * 18 * 2.3 * GHz * 32
_XEON_FRACTION = _derive(
    ("xeon-8160",), "Intel Caffe (MKL-DNN) AlexNet training, 2x E5-2699 v3, 256 img/s "
    "(01org/caffe#16) x 3 x 1.457 GFLOP / 2.65 TFLOPS fp32 (Haswell sibling)",
    256.0, _ALEXNET_FWD, _HSW_2S_FP32)
# POWER9 (Summit, IBM AC922): only the host in every catalog machine; no public DL
# training measurement on it was found, so the Xeon MKL-DNN fraction is used as a
# stand-in (documented; it enters only host-side compute, if any).
FRACTION_DERIVATIONS["power9-22c"] = (
    "no POWER9 DL training measurement found; Xeon MKL-DNN figure used as stand-in "
    f"-> {_XEON_FRACTION:.3f}")

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
#    learning" with CaffeNet on one K40 = 250 images/s; CaffeNet has AlexNet's
#    FLOPs; K40 (GK110B, 2880 cores, 875 MHz boost) = 5.04 TFLOPS fp32; transferred to
#    the K20X (GK110, same SMX design).
#  - P100 PCIe and V100 PCIe use the fraction of their SXM2 sibling (same chip).
_P100_FRACTION = _derive(("p100-sxm2", "p100-pcie"),
                         "TF benchmarks DGX-1 P100 ResNet-50 219 img/s x 3 x 8.24 GFLOP / 10.6 TFLOPS",
                         219.0, _RESNET50_FWD, 10.6 * TFLOPS)
_K80_FRACTION = _derive(("k80",),
                        "TF benchmarks GCE K80 ResNet-50 52 img/s x 3 x 8.24 GFLOP / 4.37 TFLOPS (GK210)",
                        52.0, _RESNET50_FWD, 8.73 / 2 * TFLOPS)
_V100_FRACTION_FP16 = _derive(("v100-sxm2 (fp16)", "v100-pcie (fp16)"),
                              "NVIDIA blog May 2018 ResNet-50 mixed precision 1,075 img/s x 3 x "
                              "8.24 GFLOP / 125 TFLOPS tensor", 1075.0, _RESNET50_FWD, 125 * TFLOPS)
_V100_FRACTION = _derive(("v100-sxm2", "v100-pcie"),
                         "Dell EMC AI reference guide: V100 fp32 TF ResNet-50 1.26 x P100 = 276 img/s "
                         "x 3 x 8.24 GFLOP / 15.7 TFLOPS", 1.26 * 219.0, _RESNET50_FWD, 15.7 * TFLOPS)
_KEPLER_FRACTION = _derive(("k20x",),
                           "Caffe CaffeNet 4 ms/image learning on K40 = 250 img/s x 3 x 1.457 GFLOP "
                           "/ 5.04 TFLOPS (GK110 sibling)", 250.0, _ALEXNET_FWD, 2880 * 2 * 0.875e9)


def _gpu(name: str, sms: int, clock_hz: float, fp64: float, fp32: float, fp16: float,
         mem_gb: float, bw_gbps: float, frac: float, tdp_w: float, source: str,
         frac_fp16: float = 0.0) -> Device:
    return Device(name=name, kind="gpu", cores=sms, clock_hz=clock_hz,
                  peak_fp64_flops=fp64 * TFLOPS, peak_fp32_flops=fp32 * TFLOPS,
                  peak_fp16_flops=fp16 * TFLOPS, memory_bytes=mem_gb * GB,
                  memory_bandwidth_Bps=bw_gbps * GB_per_s, sustained_fraction=frac,
                  sustained_fraction_fp16=frac_fp16, tdp_w=tdp_w, source=source)


DEVICES: dict[str, Device] = {
    "xeon-phi-7250-flat": _knl("xeon-phi-7250-flat", 68, 1.40 * GHz, "flat"),
    "xeon-phi-7250-cache": _knl("xeon-phi-7250-cache", 68, 1.40 * GHz, "cache"),
    "xeon-phi-7230-flat": _knl("xeon-phi-7230-flat", 64, 1.30 * GHz, "flat"),
    "xeon-phi-7230-cache": _knl("xeon-phi-7230-cache", 64, 1.30 * GHz, "cache"),
    "xeon-8160": Device(
        name="xeon-8160", kind="cpu", cores=24, clock_hz=2.1 * GHz,
        peak_fp64_flops=24 * 2.1 * GHz * 32,          # 1.61 TFLOPS (AVX-512, 2 FMA units)
        peak_fp32_flops=24 * 2.1 * GHz * 64,          # 3.23 TFLOPS
        peak_fp16_flops=24 * 2.1 * GHz * 64,          # no faster fp16 math
        memory_bytes=96 * GB,                         # half of 192 GB/node (TACC guide)
        memory_bandwidth_Bps=6 * 2.666e9 * 8,         # 6 x DDR4-2666 x 8 B = 128 GB/s
        sustained_fraction=_XEON_FRACTION, tdp_w=150.0,   # Intel ARK
        source="Intel ARK Xeon Platinum 8160; TACC Stampede2 user guide"),
    "power9-22c": Device(
        name="power9-22c", kind="cpu", cores=22, clock_hz=3.07 * GHz,
        # 8 fp64 FLOP/cycle per SMT4 core (2 x 2-wide fp64 FMA, IBM POWER9 user manual)
        peak_fp64_flops=22 * 3.07 * GHz * 8, peak_fp32_flops=22 * 3.07 * GHz * 16,
        peak_fp16_flops=22 * 3.07 * GHz * 16,
        memory_bytes=256 * GB,                        # 512 GB DDR4 per node / 2 (OLCF guide)
        memory_bandwidth_Bps=8 * 2.666e9 * 8,         # 8 x DDR4-2666 = 170 GB/s per socket
        sustained_fraction=_XEON_FRACTION, tdp_w=190.0,
        source="OLCF Summit user guide; IBM POWER9 processor user manual"),
    # NVIDIA Tesla K20X datasheet: 14 SMX, 732 MHz, 1.31 / 3.95 TFLOPS, 6 GB, 250 GB/s, 235 W
    "k20x": _gpu("k20x", 14, 0.732 * GHz, 1.31, 3.95, 3.95, 6, 250, _KEPLER_FRACTION, 235.0,
                 "NVIDIA Tesla K20X datasheet"),
    # NVIDIA Tesla K80 datasheet, per GK210 (half board): 13 SMX, 875 MHz boost,
    # 1.455 / 4.365 TFLOPS, 12 GB, 240 GB/s, 150 W
    "k80": _gpu("k80", 13, 0.875 * GHz, 2.91 / 2, 8.73 / 2, 8.73 / 2, 12, 240, _K80_FRACTION,
                150.0, "NVIDIA Tesla K80 datasheet (one GK210 of two per board)"),
    # NVIDIA Tesla P100 datasheet / Pascal whitepaper: SXM2 56 SMs 1480 MHz 5.3/10.6/21.2
    # TFLOPS, 16 GB HBM2 732 GB/s, 300 W; PCIe 1303 MHz 4.7/9.3/18.7 TFLOPS, 250 W
    "p100-sxm2": _gpu("p100-sxm2", 56, 1.480 * GHz, 5.3, 10.6, 21.2, 16, 732, _P100_FRACTION,
                      300.0, "NVIDIA Tesla P100 datasheet; Pascal GP100 whitepaper"),
    "p100-pcie": _gpu("p100-pcie", 56, 1.303 * GHz, 4.7, 9.3, 18.7, 16, 732, _P100_FRACTION,
                      250.0, "NVIDIA Tesla P100 PCIe datasheet"),
    # NVIDIA Tesla V100 datasheet / Volta whitepaper: SXM2 80 SMs 1530 MHz 7.8/15.7/125
    # TFLOPS, 16 GB HBM2 900 GB/s, 300 W; PCIe 1380 MHz 7/14/112 TFLOPS, 250 W
    "v100-sxm2": _gpu("v100-sxm2", 80, 1.530 * GHz, 7.8, 15.7, 125.0, 16, 900, _V100_FRACTION,
                      300.0, "NVIDIA Tesla V100 datasheet; Volta GV100 whitepaper",
                      frac_fp16=_V100_FRACTION_FP16),
    "v100-pcie": _gpu("v100-pcie", 80, 1.380 * GHz, 7.0, 14.0, 112.0, 16, 900, _V100_FRACTION,
                      250.0, "NVIDIA Tesla V100 PCIe datasheet", frac_fp16=_V100_FRACTION_FP16),
}
