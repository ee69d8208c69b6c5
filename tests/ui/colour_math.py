"""Colour distances for the palette tests: sRGB -> CIE Lab (D65), the CIEDE2000
difference, and deuteranopia simulated with Machado, Oliveira & Fernandes (2009),
severity 1, on linear RGB. Plain Python: a handful of colours, no dependency."""

from __future__ import annotations

import math

Lab = tuple[float, float, float]
RGB = tuple[float, float, float]

# Machado et al. 2009, deuteranopia, severity 1.0 (linear RGB -> linear RGB)
DEUTERANOPIA = ((0.367322, 0.860646, -0.227968),
                (0.280085, 0.672501, 0.047413),
                (-0.011820, 0.042940, 0.968881))


def _linear(c: float) -> float:
    c /= 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _encoded(c: float) -> float:
    c = min(1.0, max(0.0, c))
    return 255.0 * (12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055)


def rgb(hex_color: str) -> RGB:
    h = hex_color.lstrip("#")
    return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))


def lab(color: RGB) -> Lab:
    r, g, b = (_linear(float(c)) for c in color)
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def deuteranopia(color: RGB) -> RGB:
    lin = [_linear(float(c)) for c in color]
    r, g, b = (_encoded(sum(m * v for m, v in zip(row, lin, strict=True)))
               for row in DEUTERANOPIA)
    return r, g, b


def ciede2000(lab1: Lab, lab2: Lab) -> float:
    """CIEDE2000 (Sharma, Wu & Dalal's formulation), kL = kC = kH = 1."""
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360
    h2p = math.degrees(math.atan2(b2, a2p)) % 360
    dl, dc = l2 - l1, c2p - c1p
    if c1p * c2p == 0:
        dh = 0.0
    elif abs(h2p - h1p) <= 180:
        dh = h2p - h1p
    else:
        dh = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    dh_big = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_mean, c_mean_p = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_mean - 30)) + 0.24 * math.cos(math.radians(2 * h_mean))
         + 0.32 * math.cos(math.radians(3 * h_mean + 6))
         - 0.20 * math.cos(math.radians(4 * h_mean - 63)))
    d_theta = 30 * math.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(c_mean_p ** 7 / (c_mean_p ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * c_mean_p
    s_h = 1 + 0.015 * c_mean_p * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c
    return math.sqrt((dl / s_l) ** 2 + (dc / s_c) ** 2 + (dh_big / s_h) ** 2
                     + r_t * (dc / s_c) * (dh_big / s_h))


def delta_e(color1: str, color2: str, deuteranope: bool = False) -> float:
    """CIEDE2000 between two ``#rrggbb`` colours, as seen normally or by a deuteranope."""
    c1, c2 = rgb(color1), rgb(color2)
    if deuteranope:
        c1, c2 = deuteranopia(c1), deuteranopia(c2)
    return ciede2000(lab(c1), lab(c2))
