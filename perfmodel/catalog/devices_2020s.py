"""Accelerators of the 2020s: A100, H100, H200, B200, MI250X (one GCD), MI300X.

Datasheet figures only; the sustained fractions are solved in
:mod:`dlscale.perfmodel.catalog.devices` from the cited single-device training rates
of :data:`RATES` (the same :func:`~dlscale.perfmodel.catalog.devices.solve_fraction`
as for V100 and P100), and the devices without such a rate take a stand-in fraction
named in :data:`STAND_INS` (an assumption, said so in the catalog).

Which peak is which. The catalog's three peaks are the peaks the device *trains* at
in each precision (the convention the V100 entry set: its ``peak_fp16_flops`` is the
tensor-core peak):

- ``peak_fp16_flops``: the dense (not 2:4-sparse) fp16 tensor/matrix-core peak; on
  every device here bf16 runs at the same dense peak (the datasheets list both), so a
  bf16 run is priced as ``fp16`` (2-byte math and messages);
- ``peak_fp32_flops``: the dense peak fp32 *training* runs at by default: TF32 tensor
  cores on NVIDIA Ampere and later (TF32 "is enabled by default" for fp32 training in
  NVIDIA's ResNet-50 scripts, NVIDIA DeepLearningExamples
  PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Enabling TF32"), the fp32
  matrix-core peak on AMD CDNA (rocBLAS/MIOpen fp32 GEMMs run on the matrix cores);
- ``peak_fp64_flops``: the vector (non-tensor) fp64 peak.

Every dense peak the datasheet gives (fp64 vector and tensor, fp32 vector, tf32,
bf16, fp16, fp8) is kept in :data:`PRECISION_PEAKS` and in each entry's ``source``
string, so the ones the model does not train in (fp8) are on record too.

Where a figure was read from a page that reproduces the vendor's datasheet rather than
from the datasheet itself, the comment says "secondary" and names the page.

Examples
--------
>>> BASE_2020S["a100-sxm4-40gb"].peak_fp16_flops / 1e12
312.0
>>> PRECISION_PEAKS["h100-sxm"]["fp8"] / 1e12
1979.0
"""

from __future__ import annotations

from dataclasses import dataclass

from dlscale.perfmodel.machine.hardware import Device
from dlscale.perfmodel.units import GB, TFLOPS, GB_per_s, GHz

__all__ = ["BASE_2020S", "PRECISION_PEAKS", "RATES", "STAND_INS", "Rate"]

#: replaced by the solved or stand-in fraction before the catalog's DEVICES is built
_PLACEHOLDER = 0.5  # definition: a placeholder, overwritten in devices.py


def _peaks(fp64: float, fp64_tensor: float, fp32_vector: float, fp32_matrix: float,
           tf32: float, bf16: float, fp16: float, fp8: float) -> dict[str, float]:
    """Dense peaks in FLOP/s from TFLOPS; 0 = the device has no such math."""
    return {"fp64": fp64 * TFLOPS, "fp64_tensor": fp64_tensor * TFLOPS,
            "fp32_vector": fp32_vector * TFLOPS, "fp32_matrix": fp32_matrix * TFLOPS,
            "tf32": tf32 * TFLOPS, "bf16": bf16 * TFLOPS, "fp16": fp16 * TFLOPS,
            "fp8": fp8 * TFLOPS}


#: device -> dense peak FLOP/s per precision (datasheet; 0 where the device has none).
PRECISION_PEAKS: dict[str, dict[str, float]] = {
    # NVIDIA A100 Tensor Core GPU datasheet (nvidia.com, nvidia-a100-datasheet-us-nvidia-
    # 1758950-r4-web.pdf), dense TFLOPS: FP64 9.7, FP64 Tensor 19.5, FP32 19.5, TF32 156,
    # BF16 312, FP16 312 (the "624" figures are "with sparsity"); no FP8. Secondary
    # readings: glennklockwood.com/garden/processors/A100 (table footnoted to the
    # datasheet) and the PC2 Paderborn wiki page "NVIDIA A100 40GB with NVLINK"
    # (upb-pc2.atlassian.net, "FP16-Performance 312 TFLOPS / 624 TFLOPS*, *With sparsity").
    "a100-sxm4-40gb": _peaks(9.7, 19.5, 19.5, 0, 156, 312, 312, 0),
    "a100-sxm4-80gb": _peaks(9.7, 19.5, 19.5, 0, 156, 312, 312, 0),   # same datasheet
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: FP64 34, FP64 Tensor 67, FP32 67,
    # TF32 989, BF16 1,979, FP16 1,979, FP8 3,958 TFLOPS, all "shown with sparsity.
    # Specifications 1/2 lower without sparsity" for the tensor figures -> dense TF32
    # 494.5, BF16/FP16 989.5, FP8 1979 (secondary: archive-lib.hpctech.co.jp/gpuproduct/
    # nvidia-h100.html reproduces the table and the footnote; glennklockwood.com/garden/
    # processors/h100 gives 494.7 / 989.4 / 1978.9 dense, the same to rounding).
    "h100-sxm": _peaks(34, 67, 67, 0, 989 / 2, 1979 / 2, 1979 / 2, 3958 / 2),
    # NVIDIA H200 Tensor Core GPU datasheet: the same GH100 compute as H100 SXM ("FP8
    # Tensor Core 3,958 TFLOPS*", "*with sparsity", FP64 34 TFLOPS); secondary:
    # lzwjava.github.io/nvidia-h200-gpu-specs-en ("FP8 Tensor Core 3,958 TFLOPS* |
    # Identical") and ai-hpc.github.io 8x-H200 page ("BF16 peak ~1,979", sparse).
    "h200-sxm": _peaks(34, 67, 67, 0, 989 / 2, 1979 / 2, 1979 / 2, 3958 / 2),
    # NVIDIA Blackwell datasheet, HGX B200 (1,000 W) per GPU, dense: FP64 40, FP64 Tensor
    # 40, FP32 80, TF32 1,100 (2,200 sparse), BF16/FP16 2,250, FP8 4,500; secondary:
    # glennklockwood.com/garden/processors/B200 ("The HGX variant of B200 supports the
    # following when configured at 1,000 W"); hmc-tech.com gives the same tensor figures
    # (2.25 PFLOPS BF16, 4.5 PFLOPS FP8 dense).
    "b200": _peaks(40, 40, 80, 0, 1100, 2250, 2250, 4500),
    # AMD Instinct MI250X data sheet (amd.com), whole package: FP64/FP32 vector 47.9,
    # FP64/FP32 matrix 95.7, FP16/BF16 383.0 TFLOPS; no TF32, no FP8 (secondary:
    # zexron.com "AMD MI250(X) Aldebaran" article reproducing AMD's table: "Up to 47.9 TF
    # | Up to 95.7 TF | Up to 383.0 TF"). One GCD, as frameworks see it (OLCF Frontier
    # user guide: "The programmer can think of the 8 GCDs as 8 separate GPUs"), is half:
    # FP64 vector 23.95, matrix 47.85; FP32 vector 23.95 (the 47.9 package figure is
    # packed FP32, two GCDs); FP16/BF16 191.5.
    "mi250x-gcd": _peaks(47.9 / 2, 95.7 / 2, 47.9 / 2, 95.7 / 2, 0, 383.0 / 2, 383.0 / 2, 0),
    # AMD Instinct MI300X data sheet (amd.com), dense: FP64 vector 81.7, FP64 matrix
    # 163.4, FP32 163.4, TF32 653.7, BF16/FP16 1,307.4, FP8 2,614.9 TFLOPS (the doubled
    # figures are with sparsity). Secondary: a GitHub tool's spec table citing AMD
    # ("bf16: 1307.4 ... fp8: 2614.9 ... fp32: 163.4"), jaredwatkins.com MI300 page
    # ("~1.3 PFLOPS FP16; ~2.6 PFLOPS FP8").
    "mi300x": _peaks(81.7, 163.4, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9),
}


#: The A100's matmul rate at its 400 W power cap with training-like (normally
#: distributed) inputs, TFLOP/s, at a shape the tile model quantizes perfectly, in
#: PyTorch on cuBLAS of 2022 (the nearest stack to Megatron-LM's of 2021 found):
#: Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster When Given
#: 'Predictable' Data!" (thonking.ai, 2024): 8192 x 8192 x 8192, "CuBLAS: 258
#: Teraflops ... 83% flop utilization", "benchmark(zero_inputs) # 295 Teraflops",
#: "benchmark(randn_inputs) # 257 Teraflops"; the gap to zeros is the power cap
#: throttling the clock (the same post). 258 is taken; the sources spread it from 257
#: (the same run) to the MAMF's 271.2 (stas00/ml-engineering's README table below: a
#: best-of search over shapes, 2025 software). Not a measurement of Megatron-2021's
#: cuBLAS at its own shapes, which none of the sources read gives.
A100_POWER_CAPPED_GEMM_TFLOPS = 258.0

#: Large matrix products' share of the dense bf16 peak: the "Maximum Achievable Matmul
#: FLOPS" (MAMF: a brute-force search over GEMM shapes, bf16 inputs, no sparsity) of
#: stas00/ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul
#: FLOPS comparison table": "NVIDIA A100 SXM | 267.9 | 312 | 85.9% | ... | CUDA-12.1",
#: a later row of the same table 271.2 (torch 2.6 / CUDA 12.6); "NVIDIA H100 SXM |
#: 792.1 | 989 | 80.1% | CUDA-12.1"; "AMD MI250X | 147.0 | 191.5 | 76.7% | ROCm-6.2 /
#: 1 GCD"; "AMD MI300X | 781.9 | 1300 | 60.1% | ROCm-6.2". Each is of its own table's
#: peak. The table itself warns that shapes a model really uses run lower. A100: not
#: the MAMF but its power-capped rate (:data:`A100_POWER_CAPPED_GEMM_TFLOPS`, thonking.ai).
#: H200: the H100's chip and clocks with faster memory (assumption: the H100's figure).
#: B200: not in the table (0: not known; the transformer path then uses its stand-in
#: fraction).
GEMM_FRACTIONS: dict[str, float] = {
    "a100-sxm4-40gb": A100_POWER_CAPPED_GEMM_TFLOPS / 312,
    "a100-sxm4-80gb": A100_POWER_CAPPED_GEMM_TFLOPS / 312,
    "h100-sxm": 792.1 / 989, "h200-sxm": 792.1 / 989,
    "mi250x-gcd": 147.0 / 191.5, "mi300x": 781.9 / 1300,
}


def _dev(name: str, sms: int, clock_hz: float, fp32_train: float, mem_gb: float,
         bw_gbps: float, tdp_w: float, source: str) -> Device:
    """A catalog device from its :data:`PRECISION_PEAKS` (fp32_train: see the module)."""
    p = PRECISION_PEAKS[name]
    return Device(name=name, kind="gpu", cores=sms, clock_hz=clock_hz,
                  peak_fp64_flops=p["fp64"], peak_fp32_flops=fp32_train,
                  peak_fp16_flops=p["fp16"], memory_bytes=mem_gb * GB,
                  memory_bandwidth_Bps=bw_gbps * GB_per_s, sustained_fraction=_PLACEHOLDER,
                  sustained_fraction_fp16=_PLACEHOLDER, tdp_w=tdp_w, source=source,
                  gemm_fraction_fp16=GEMM_FRACTIONS.get(name, 0.0))


_NV = "fp32 = TF32 tensor (training default)"
_AMD = "fp32 = FP32 matrix cores"

#: The new devices with their datasheet figures (fractions are placeholders).
BASE_2020S: dict[str, Device] = {
    # A100 SXM4 40 GB: 108 SMs, 1,410 MHz boost (NVIDIA Ampere GA100 whitepaper, 2020;
    # secondary: the PC2 wiki's deviceQuery, "(108) Multiprocessors", "GPU Max Clock
    # rate: 1410 MHz"),
    # 40 GB HBM2 at 1,555 GB/s, 400 W max (A100 datasheet; secondary PC2 wiki page:
    # "Memory 1.555 GB/s", "Max Thermal Design Power (TDP) 400 W")
    "a100-sxm4-40gb": _dev(
        "a100-sxm4-40gb", 108, 1.41 * GHz, PRECISION_PEAKS["a100-sxm4-40gb"]["tf32"], 40,
        1555, 400.0,
        f"NVIDIA A100 datasheet; Ampere GA100 whitepaper (dense TFLOPS fp64 9.7/19.5 "
        f"tensor, fp32 19.5, tf32 156, bf16/fp16 312; {_NV})"),
    # A100 SXM4 80 GB: the same GPU with 80 GB HBM2e at 2,039 GB/s, 400 W (A100
    # datasheet; secondary glennklockwood.com: "80 GB HBM2e ... 2.039 GB/s", "Everything
    # else was the same (power, etc)")
    "a100-sxm4-80gb": _dev(
        "a100-sxm4-80gb", 108, 1.41 * GHz, PRECISION_PEAKS["a100-sxm4-80gb"]["tf32"], 80,
        2039, 400.0,
        f"NVIDIA A100 80GB datasheet (dense TFLOPS fp64 9.7/19.5 tensor, fp32 19.5, "
        f"tf32 156, bf16/fp16 312; {_NV})"),
    # H100 SXM5: 132 SMs, 1.98 GHz boost (NVIDIA H100 Tensor Core GPU Architecture
    # whitepaper, 2022; secondary glennklockwood.com/garden/processors/h100: "132 SMs",
    # "1.98 GHz"), 80 GB HBM3 at 3,350 GB/s, up to 700 W (H100 datasheet; secondary
    # archive-lib.hpctech.co.jp: "GPU メモリ帯域幅 3,350 GB/sec", "TDP 700 W")
    "h100-sxm": _dev(
        "h100-sxm", 132, 1.98 * GHz, PRECISION_PEAKS["h100-sxm"]["tf32"], 80, 3350, 700.0,
        f"NVIDIA H100 datasheet; Hopper whitepaper 2022 (dense TFLOPS fp64 34/67 tensor, "
        f"fp32 67, tf32 494.5, bf16/fp16 989.5, fp8 1979; {_NV})"),
    # H200 SXM: GH100 as H100 SXM with 141 GB HBM3e at 4.8 TB/s, 700 W (NVIDIA H200
    # datasheet; secondary aiminingco.com/gpu/h200/specs "141GB of HBM3e memory with
    # 4.8 TB/s", "TDP remains at 700W")
    "h200-sxm": _dev(
        "h200-sxm", 132, 1.98 * GHz, PRECISION_PEAKS["h200-sxm"]["tf32"], 141, 4800, 700.0,
        f"NVIDIA H200 datasheet (H100 SXM compute; dense TFLOPS fp64 34/67 tensor, fp32 "
        f"67, tf32 494.5, bf16/fp16 989.5, fp8 1979; {_NV})"),
    # B200 on HGX B200 (1,000 W): 148 SMs, 1.98 GHz boost (secondary: hmc-tech.com B200
    # spec page, "SMs 148", "Boost Clock 1.98GHz"; NVIDIA publishes no SM count in the
    # datasheet); 8 TB/s HBM3e (Blackwell datasheet; secondary glennklockwood.com "8 TB/s
    # (max)", "1000 W maximum"); capacity 180 GB usable per GPU of the 192 GB of 8 stacks
    # (secondary docs.vultr.com HGX B200 page, nvidia-smi "179 GB HBM3e"; 180 taken)
    "b200": _dev(
        "b200", 148, 1.98 * GHz, PRECISION_PEAKS["b200"]["tf32"], 180, 8000, 1000.0,
        f"NVIDIA Blackwell datasheet, HGX B200 (dense TFLOPS fp64 40, fp32 80, tf32 1100, "
        f"bf16/fp16 2250, fp8 4500; {_NV})"),
    # MI250X, one GCD: 110 of the package's 220 CUs, 1.7 GHz (AMD data sheet; secondary
    # zexron.com: "220 CU", "clock rate of 1.7 GHz"); 64 GB HBM2e per GCD (OLCF Frontier
    # user guide: "each having 64 GB of high-bandwidth memory (HBM2E)"); bandwidth half
    # of the package's 3.2 TB/s = 1,600 GB/s (AMD data sheet "3.2 TB/sec"); power half of
    # the package's 560 W (AMD data sheet; secondary llmpedia.scads.ai "~560 W")
    "mi250x-gcd": _dev(
        "mi250x-gcd", 110, 1.7 * GHz, PRECISION_PEAKS["mi250x-gcd"]["fp32_matrix"], 64,
        1600, 280.0,
        f"AMD Instinct MI250X data sheet, one GCD of two (dense TFLOPS fp64 23.95/47.85 "
        f"matrix, fp32 23.95 vector / 47.85 matrix, bf16/fp16 191.5; {_AMD}); OLCF "
        f"Frontier user guide"),
    # MI300X: 304 CUs, 2,100 MHz peak engine clock, 192 GB HBM3 at 5.3 TB/s, 750 W (AMD
    # Instinct MI300X data sheet; secondary gpu.blog "304 high-throughput compute units,
    # 192 GB of HBM3", "TDP 750 W"; aiwiki.ai "192 GB of HBM3 memory and 5.3 TB/s";
    # the clock is the data sheet's "Peak Engine Clock 2100 MHz", not in a secondary
    # reading found here)
    "mi300x": _dev(
        "mi300x", 304, 2.1 * GHz, PRECISION_PEAKS["mi300x"]["fp32_matrix"], 192, 5300, 750.0,
        f"AMD Instinct MI300X data sheet (dense TFLOPS fp64 81.7/163.4 matrix, fp32 "
        f"163.4, tf32 653.7, bf16/fp16 1307.4, fp8 2614.9; {_AMD})"),
}


@dataclass(frozen=True)
class Rate:
    """A cited single-device training rate of one of :data:`BASE_2020S`.

    ``label`` is the FRACTION_SOURCES key; ``precision`` "fp32" is the device's
    ``peak_fp32_flops`` (TF32 on NVIDIA, see the module), "fp16" mixed precision.
    """

    label: str
    device: str
    model: str
    batch: int
    precision: str
    samples_per_s: float
    text: str
    applies_to: tuple[str, ...]


# NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md,
# "Training performance: NVIDIA DGX A100 (8x A100 80GB)", pytorch-21.03 NGC container,
# row "1" GPU: "938 img/s" TF32 and "2470 img/s" mixed precision. Batch 256 per GPU
# is assumed: the README's main.py default ("-b N, --batch-size N mini-batch size
# (default: 256) per gpu"); the table does not restate it. ResNet-50 v1.5 (stride 2 in
# the 3x3 convolution) costs slightly more than the catalog's v1 ("~5% imgs/sec", same
# README); the rate is taken as measured on v1, as the catalog's V100 figure is.
# The 40 GB part has the same SMs and clocks and 76% of the bandwidth; it takes the
# fraction solved on the 80 GB figures (same chip, same rule as P100/V100 PCIe).
_A100 = ("a100-sxm4-80gb", "a100-sxm4-40gb")
RATES: tuple[Rate, ...] = (
    # DeepLearningExamples RN50 v1.5 README (PyTorch), DGX A100 table: 1 GPU TF32 938 img/s
    Rate("a100-sxm4-80gb", "a100-sxm4-80gb", "resnet50", 256, "fp32", 938.0,
         "NVIDIA DeepLearningExamples RN50 v1.5 PyTorch, 1x A100 80GB TF32, 938 img/s "
         "(batch 256 assumed)", _A100),
    # same README and table: 1 GPU mixed precision 2470 img/s; batch 256 assumed (above)
    Rate("a100-sxm4-80gb (fp16)", "a100-sxm4-80gb", "resnet50", 256, "fp16", 2470.0,
         "NVIDIA DeepLearningExamples RN50 v1.5 PyTorch, 1x A100 80GB mixed precision, "
         "2,470 img/s (batch 256 assumed)", tuple(f"{n} (fp16)" for n in _A100)),
)

#: device -> (FRACTION_SOURCES label whose fractions it takes, why: an assumption).
#: No cited single-device training rate of a catalog model was found for these
#: (searched: NVIDIA DeepLearningExamples READMEs, NVIDIA's "Deep Learning Product
#: Performance" page, which for H100 gives MLPerf time-to-train on 8 or more GPUs,
#: not a rate; AMD's ROCm "performance results" page, which gives Llama inference and
#: training throughput on 8 GPUs, models the catalog does not hold). Assumption: the
#: A100 fractions stand in, the nearest tensor-core GPU with a cited rate, as the Xeon
#: fraction stands in for POWER9; a calibration or ``--measured-samples-per-s``
#: replaces them.
STAND_INS: dict[str, str] = {
    name: "a100-sxm4-80gb" for name in ("h100-sxm", "h200-sxm", "b200", "mi250x-gcd", "mi300x")
}
