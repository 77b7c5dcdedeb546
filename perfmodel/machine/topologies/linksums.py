"""Link sums shared by the families' level loads: flows with the same key share a link.

Examples
--------
>>> import numpy as np
>>> per_link(np.array([3, 3, 5]), np.array([1.0, 2.0, 4.0])).tolist()
[3.0, 3.0, 4.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["link_sums", "per_link"]


def link_sums(keys: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Total weight of each link and each flow's link's index into it (flows with the
    same key share one link)."""
    top = int(keys.max())
    if int(keys.min()) >= 0 and top < 8 * len(keys) + (1 << 16):
        # keys dense enough to count directly (no sort): each link's weights are added
        # in the flows' order either way, so the sums are the same bits
        return np.bincount(keys, weights=weight, minlength=top + 1), keys
    _, inv = np.unique(keys, return_inverse=True)
    return np.bincount(inv, weights=weight), inv


def per_link(keys: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Each flow's link's total weight (flows with the same key share one link)."""
    if len(keys) == 0:
        return np.zeros(0)
    sums, at = link_sums(keys, weight)
    return np.asarray(sums[at])
