"""One rule for memory bandwidth wherever the window shows it: GB/s (10⁹ bytes a
second, as data sheets quote it and as the bandwidth plot's axis is labelled), whole
numbers with thousands separators from 100 GB/s on ("1,008 GB/s", never "1.0 TB/s"
beside a plot that says 1,008), one decimal below ("12.5 GB/s", "0.4 GB/s"), and an
idle GPU's "0 GB/s".

The card's estimate, its peak and the plot's peak line all come through here, so a
measured bandwidth joins them by calling the same function.
"""

from __future__ import annotations

import math

GB = 1e9
UNIT = "GB/s"


def bandwidth_number(bytes_per_s: float) -> str:
    """The figure alone, in GB/s: "1,008", "936", "12.5"."""
    value = bytes_per_s / GB
    return f"{value:,.0f}" if abs(value) >= 100 or value == 0 else f"{value:,.1f}"


def format_bandwidth(bytes_per_s: float | None, unknown: str = "n/a") -> str:
    """"1,008 GB/s" (``unknown`` for a missing or non-finite figure)."""
    if bytes_per_s is None or not math.isfinite(bytes_per_s):
        return unknown
    return f"{bandwidth_number(bytes_per_s)} {UNIT}"
