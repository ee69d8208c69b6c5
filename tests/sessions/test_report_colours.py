"""The report's process colours stay clear of its danger colours: no process is drawn
red, orange or amber, which mark warnings and critical hints."""

from __future__ import annotations

import colorsys

from gpuwatch.sessions.charts_svg import MARK_COLORS, PALETTE


def _hue(colour: str) -> float:
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def test_no_process_colour_reads_as_a_warning_or_critical() -> None:
    for colour in PALETTE:
        hue = _hue(colour)
        assert not (hue < 55 or hue > 345), colour           # red, orange, amber
    assert not set(PALETTE) & set(MARK_COLORS.values())
