"""Unit conversion factors to SI (seconds, bytes, bytes per second, FLOP/s).

Everything inside dlscale is SI; these factors are applied once, at the edge, where
a TOML key or a datasheet figure carries another unit (``bandwidth_GBps``,
``latency_us``). Decimal prefixes for rates (a datasheet's GB/s is 1e9 B/s), binary
prefixes where a name says so (GiB, MiB, KiB).

Examples
--------
>>> 25 * GB_per_s
25000000000.0
>>> 1.5 * us
1.5e-06
"""

from __future__ import annotations

# time
s = 1.0
ms = 1e-3
us = 1e-6
ns = 1e-9
minute = 60.0
hour = 3600.0

# sizes
B = 1.0
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 1024.0
MiB = 1024.0**2
GiB = 1024.0**3

# rates
GB_per_s = 1e9
Gbit_per_s = 1e9 / 8.0
TFLOPS = 1e12
GFLOPS = 1e9
GHz = 1e9

#: Suffix of a TOML key -> factor to SI. The key ``bandwidth_GBps`` means GB/s.
KEY_SUFFIX_FACTORS: dict[str, float] = {
    "s": s,
    "ms": ms,
    "us": us,
    "ns": ns,
    "B": B,
    "KB": KB,
    "MB": MB,
    "GB": GB,
    "KiB": KiB,
    "MiB": MiB,
    "GiB": GiB,
    "Bps": 1.0,
    "MBps": 1e6,
    "GBps": GB_per_s,
    "Gbps": Gbit_per_s,
    "GFLOPS": GFLOPS,
    "TFLOPS": TFLOPS,
    "GHz": GHz,
}

#: Bytes per element for each precision name used by workloads.
BYTES_PER_ELEMENT: dict[str, int] = {"fp64": 8, "fp32": 4, "fp16": 2, "mixed": 2}
