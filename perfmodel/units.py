"""Unit conversion factors to SI (seconds, bytes, bytes per second, FLOP/s).

Everything inside dlscale is SI; these factors are applied once, at the edge, where
a TOML key or a datasheet figure carries another unit (``bandwidth_GBps``,
``latency_us``; :data:`dlscale.perfmodel.machine.tomlmap.UNITS` maps key suffixes to these). Decimal prefixes for rates (a datasheet's GB/s is 1e9 B/s), binary
prefixes where a name says so (GiB, MiB, KiB).

Examples
--------
>>> 25 * GB_per_s
25000000000.0
>>> 1.5 * us
1.5e-06
>>> BYTES_PER_ELEMENT["fp16"]
2
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

#: Bytes per element at each training precision (IEEE 754-2008, Sec. 3.6: binary64,
#: binary32, binary16 are 8, 4 and 2 bytes). Mixed precision is ``fp16`` here: its
#: activations and gradients travel as binary16. The one table of the project.
BYTES_PER_ELEMENT: dict[str, int] = {"fp64": 8, "fp32": 4, "fp16": 2}
