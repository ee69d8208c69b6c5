"""Mobile families as torchvision builds them: MobileNetV2 and V3 (inverted residuals,
squeeze-excitation with a hard sigmoid, Hardswish) and EfficientNet B0–B7 and V2
(MBConv with SiLU and squeeze-excitation, fused MBConv, stochastic depth), from the
hyperparameters torchvision's constructors take (width and depth multipliers, the
block tables), so every scaling of a family reads."""

from __future__ import annotations

import math

from gpuwatch.budget.specs import CnnSpec
from gpuwatch.budget.vision_convnets import conv_bn_act, squeeze_excitation
from gpuwatch.budget.vision_graph import Net, T


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: round to a multiple, never 10 % below."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _head(net: Net, x: T, hidden: int, classes: int, act: str, dropout: float) -> None:
    x = net.avgpool("avgpool", x)
    if hidden:  # MobileNetV3: Linear, Hardswish, Dropout, Linear
        x = net.act("classifier.act", net.linear("classifier.0", x, hidden, per_layer=False),
                    act)
    x = net.dropout("classifier.dropout", x, dropout)
    net.linear("classifier.out", x, classes, per_layer=False)


# ------------------------------------------------------------------ MobileNetV2
V2_SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
              (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(name: str, image: tuple[int, int], width_mult: float = 1.0,
                 classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = conv_bn_act(net, "features.0", x, make_divisible(32 * width_mult), 3, 2, act="relu6")
    for s, (t, c, n, stride) in enumerate(V2_SETTING):
        cout = make_divisible(c * width_mult)
        for i in range(n):
            tag = f"stage{s}.{i}"
            hidden = round(x.c * t)
            y = x if t == 1 else conv_bn_act(net, tag + ".expand", x, hidden, 1, act="relu6")
            step = stride if i == 0 else 1
            y = conv_bn_act(net, tag + ".dw", y, hidden, 3, step, hidden, act="relu6")
            y = conv_bn_act(net, tag + ".project", y, cout, 1, act=None)
            x = net.add(tag + ".add", x, y) if step == 1 and x.c == cout else y
    last = make_divisible(1280 * max(1.0, width_mult))
    x = conv_bn_act(net, "features.last", x, last, 1, act="relu6")
    _head(net, x, 0, classes, "", 0.2)
    return net.spec(name, image)


# ------------------------------------------------------------------ MobileNetV3
# input, kernel, expanded, output, squeeze-excitation, Hardswish, stride (dilation 1)
V3_LARGE = ((16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2),
            (24, 3, 72, 24, False, False, 1), (24, 5, 72, 40, True, False, 2),
            (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
            (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1),
            (80, 3, 184, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
            (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
            (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1),
            (160, 5, 960, 160, True, True, 1))
V3_SMALL = ((16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2),
            (24, 3, 88, 24, False, False, 1), (24, 5, 96, 40, True, True, 2),
            (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
            (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1),
            (48, 5, 288, 96, True, True, 2), (96, 5, 576, 96, True, True, 1),
            (96, 5, 576, 96, True, True, 1))


def mobilenet_v3(name: str, image: tuple[int, int], large: bool = True,
                 width_mult: float = 1.0, classes: int = 1000) -> CnnSpec:
    setting = V3_LARGE if large else V3_SMALL
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = conv_bn_act(net, "features.0", x, make_divisible(16 * width_mult), 3, 2,
                    act="hardswish")
    for i, (_, k, exp, out, se, hs, stride) in enumerate(setting):
        tag = f"features.{i + 1}"
        act = "hardswish" if hs else "relu"
        exp, out = make_divisible(exp * width_mult), make_divisible(out * width_mult)
        y = x if exp == x.c else conv_bn_act(net, tag + ".expand", x, exp, 1, act=act)
        y = conv_bn_act(net, tag + ".dw", y, exp, k, stride, exp, act=act)
        if se:
            y = squeeze_excitation(net, tag + ".se", y, make_divisible(exp // 4), "relu",
                                   "hardsigmoid")
        y = conv_bn_act(net, tag + ".project", y, out, 1, act=None)
        x = net.add(tag + ".add", x, y) if stride == 1 and x.c == out else y
    x = conv_bn_act(net, "features.last", x, 6 * x.c, 1, act="hardswish")
    last = make_divisible((1280 if large else 1024) * width_mult)
    _head(net, x, last, classes, "hardswish", 0.2)
    return net.spec(name, image)


# ------------------------------------------------------------------ EfficientNet
# expand ratio, kernel, stride, input, output, layers; fused MBConv where marked
B_SETTING = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
             (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
             (6, 3, 1, 192, 320, 1))
V2_S = ((1, 3, 1, 24, 24, 2, True), (4, 3, 2, 24, 48, 4, True), (4, 3, 2, 48, 64, 4, True),
        (4, 3, 2, 64, 128, 6, False), (6, 3, 1, 128, 160, 9, False),
        (6, 3, 2, 160, 256, 15, False))
V2_M = ((1, 3, 1, 24, 24, 3, True), (4, 3, 2, 24, 48, 5, True), (4, 3, 2, 48, 80, 5, True),
        (4, 3, 2, 80, 160, 7, False), (6, 3, 1, 160, 176, 14, False),
        (6, 3, 2, 176, 304, 18, False), (6, 3, 1, 304, 512, 5, False))
V2_L = ((1, 3, 1, 32, 32, 4, True), (4, 3, 2, 32, 64, 7, True), (4, 3, 2, 64, 96, 7, True),
        (4, 3, 2, 96, 192, 10, False), (6, 3, 1, 192, 224, 19, False),
        (6, 3, 2, 224, 384, 25, False), (6, 3, 1, 384, 640, 7, False))


def _mbconv(net: Net, tag: str, x: T, ratio: float, k: int, stride: int, cout: int,
            fused: bool) -> T:
    exp = make_divisible(x.c * ratio)
    if fused:
        if exp != x.c:
            y = conv_bn_act(net, tag + ".expand", x, exp, k, stride, act="silu")
            y = conv_bn_act(net, tag + ".project", y, cout, 1, act=None)
        else:
            y = conv_bn_act(net, tag + ".conv", x, cout, k, stride, act="silu")
    else:
        y = x if exp == x.c else conv_bn_act(net, tag + ".expand", x, exp, 1, act="silu")
        y = conv_bn_act(net, tag + ".dw", y, exp, k, stride, exp, act="silu")
        y = squeeze_excitation(net, tag + ".se", y, max(1, x.c // 4), "silu")
        y = conv_bn_act(net, tag + ".project", y, cout, 1, act=None)
    if stride == 1 and x.c == cout:  # stochastic depth, then the residual add
        return net.add(tag + ".add", x, y)
    return y


def efficientnet(name: str, image: tuple[int, int], width_mult: float = 1.0,
                 depth_mult: float = 1.0, dropout: float = 0.2, v2: tuple = (),
                 classes: int = 1000) -> CnnSpec:
    """EfficientNet B0–B7 (``width_mult``, ``depth_mult``) or V2 (``v2``: its table)."""
    if v2:
        setting = v2
        last = 1280
    else:
        setting = tuple((r, k, s, make_divisible(i * width_mult), make_divisible(o * width_mult),
                         math.ceil(n * depth_mult), False)
                        for r, k, s, i, o, n in B_SETTING)
        last = 4 * setting[-1][4]
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = conv_bn_act(net, "features.0", x, setting[0][3], 3, 2, act="silu")
    for s, (ratio, k, stride, _, cout, n, fused) in enumerate(setting):
        for i in range(n):
            x = _mbconv(net, f"features.{s + 1}.{i}", x, ratio, k, stride if i == 0 else 1,
                        cout, fused)
    x = conv_bn_act(net, "features.last", x, last, 1, act="silu")
    _head(net, x, 0, classes, "", dropout)
    return net.spec(name, image)
