"""YOLOv5 (v6.0 and later) in plain torch, as ultralytics/yolov5's models/common.py and
yolov5s.yaml build it (for benchmarks/accuracy.py).

Conv = Conv2d (no bias) + BatchNorm + SiLU (not in place); the stem is a 6×6 stride-2
convolution with padding 2; C3 blocks (two 1×1 branches, a bottleneck chain on one,
concatenated, a 1×1 merge), SPPF (three chained 5×5 max pools, concatenated), the PANet
neck (nearest upsampling and concatenations) and the three-level Detect head in training
form (1×1 convolutions with bias, reshaped to anchors × outputs). The loss stand-in takes
the sigmoid of every Detect output, as YOLOv5's loss does of its objectness and boxes, so
the outputs are kept for backward as they are in training.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Conv(nn.Module):
    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool):
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 1), Conv(c, c, 3), shortcut

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C3(nn.Module):
    def __init__(self, c1: int, c2: int, n: int, shortcut: bool = True):
        super().__init__()
        c_ = c2 // 2
        self.cv1, self.cv2, self.cv3 = Conv(c1, c_, 1), Conv(c1, c_, 1), Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, shortcut) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, c1: int, c2: int):
        super().__init__()
        c_ = c1 // 2
        self.cv1, self.cv2 = Conv(c1, c_, 1), Conv(4 * c_, c2, 1)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YOLOv5(nn.Module):
    def __init__(self, depth: float = 0.33, width: float = 0.50, classes: int = 80):
        super().__init__()

        def ch(c: int) -> int:
            return max(8, -(-int(c * width) // 8) * 8)

        def n(k: int) -> int:
            return max(round(k * depth), 1)

        self.b0 = Conv(3, ch(64), 6, 2, 2)
        self.b1, self.b2 = Conv(ch(64), ch(128), 3, 2), C3(ch(128), ch(128), n(3))
        self.b3, self.b4 = Conv(ch(128), ch(256), 3, 2), C3(ch(256), ch(256), n(6))
        self.b5, self.b6 = Conv(ch(256), ch(512), 3, 2), C3(ch(512), ch(512), n(9))
        self.b7, self.b8 = Conv(ch(512), ch(1024), 3, 2), C3(ch(1024), ch(1024), n(3))
        self.b9 = SPPF(ch(1024), ch(1024))
        self.h10, self.h13 = Conv(ch(1024), ch(512), 1), C3(ch(1024), ch(512), n(3), False)
        self.h14, self.h17 = Conv(ch(512), ch(256), 1), C3(ch(512), ch(256), n(3), False)
        self.h18, self.h20 = Conv(ch(256), ch(256), 3, 2), C3(ch(512), ch(512), n(3), False)
        self.h21, self.h23 = Conv(ch(512), ch(512), 3, 2), C3(ch(1024), ch(1024), n(3), False)
        self.no = classes + 5
        self.detect = nn.ModuleList(nn.Conv2d(c, 3 * self.no, 1)
                                    for c in (ch(256), ch(512), ch(1024)))

    def forward(self, x):
        up = lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest")  # noqa: E731
        p4 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p6 = self.b6(self.b5(p4))
        x10 = self.h10(self.b9(self.b8(self.b7(p6))))
        x14 = self.h14(self.h13(torch.cat((up(x10), p6), 1)))
        p17 = self.h17(torch.cat((up(x14), p4), 1))
        p20 = self.h20(torch.cat((self.h18(p17), x14), 1))
        p23 = self.h23(torch.cat((self.h21(p20), x10), 1))
        scores = []
        for conv, level in zip(self.detect, (p17, p20, p23), strict=True):
            out = conv(level)
            b, _, ny, nx = out.shape
            out = out.view(b, 3, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            scores.append(out.sigmoid().mean(dim=(1, 2, 3, 4)))
        # a (b, 1000) stand-in for the classifier loss the benchmark applies
        return F.pad(torch.stack(scores, 1), (0, 997))


class YOLOv5s(YOLOv5):
    def __init__(self):
        super().__init__(0.33, 0.50)
