"""ResNet-50 and Stable Diffusion 1.5's UNet in plain torch (for benchmarks/accuracy.py).

ResNet-50 as torchvision builds it (in-place ReLU, BN after every conv); the UNet as
diffusers writes UNet2DConditionModel with its eager attention processor.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(width)
        self.c3, self.b3 = nn.Conv2d(width, width * 4, 1, bias=False), nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != width * 4:
            self.down = nn.Sequential(
                nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4)
            )

    def forward(self, x):
        out = self.relu(self.b1(self.c1(x)))
        out = self.relu(self.b2(self.c2(out)))
        out = self.b3(self.c3(out))
        out += x if self.down is None else self.down(x)
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ResNet: a 7×7 stem and max pool, four stages of ``block`` (the
    first of each stage from the second on halving the size), average pool, classifier."""

    def __init__(self, block: type[nn.Module], depths: tuple[int, ...], expansion: int):
        super().__init__()
        layers, cin = [], 64
        for stage, (n, width) in enumerate(zip(depths, (64, 128, 256, 512), strict=True)):
            for i in range(n):
                layers.append(block(cin, width, 2 if stage and i == 0 else 1))
                cin = width * expansion
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512 * expansion, 1000)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ResNet50(ResNet):
    def __init__(self):
        super().__init__(Bottleneck, (3, 4, 6, 3), 4)


# SD 1.5's UNet as diffusers writes it (UNet2DConditionModel, AttnProcessor: eager)
class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(1280, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.short = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (x if self.short is None else self.short(x)) + h


class CrossAttention(nn.Module):
    def __init__(self, c, ctx):
        super().__init__()
        self.q = nn.Linear(c, c, bias=False)
        self.k, self.v = nn.Linear(ctx, c, bias=False), nn.Linear(ctx, c, bias=False)
        self.out, self.heads = nn.Linear(c, c), 8

    def split(self, t):  # head_to_batch_dim: a copy
        b, n, c = t.shape
        return (
            t.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3).reshape(-1, n, c // 8)
        )

    def forward(self, x, ctx=None):
        ctx = x if ctx is None else ctx
        q, k, v = self.split(self.q(x)), self.split(self.k(ctx)), self.split(self.v(ctx))
        probs = (torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5).softmax(-1)
        b, n, c = x.shape
        o = torch.bmm(probs, v).reshape(b, self.heads, n, c // 8).permute(0, 2, 1, 3)
        return self.out(o.reshape(b, n, c))


class SpatialTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.proj_in = nn.GroupNorm(32, c, eps=1e-6), nn.Conv2d(c, c, 1)
        self.n1, self.a1 = nn.LayerNorm(c), CrossAttention(c, c)
        self.n2, self.a2 = nn.LayerNorm(c), CrossAttention(c, 768)
        self.n3, self.ff_in, self.ff_out = nn.LayerNorm(c), nn.Linear(c, 8 * c), nn.Linear(4 * c, c)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x, ctx):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        t = self.a1(self.n1(t)) + t
        t = self.a2(self.n2(t), ctx) + t
        a, gate = self.ff_in(self.n3(t)).chunk(2, dim=-1)
        t = self.ff_out(a * F.gelu(gate)) + t
        return self.proj_out(t.reshape(b, h, w, c).permute(0, 3, 1, 2).contiguous()) + x


class UNet(nn.Module):
    def __init__(self, widths=(320, 640, 1280, 1280)):
        super().__init__()
        self.t1, self.t2 = nn.Linear(320, 1280), nn.Linear(1280, 1280)
        self.conv_in = nn.Conv2d(4, 320, 3, padding=1)
        self.down, skips, c = nn.ModuleList(), [320], 320
        for level, w in enumerate(widths):
            for _ in range(2):
                attn = SpatialTransformer(w) if level < 3 else None
                self.down.append(nn.ModuleList([ResBlock(c, w), attn]))
                c = w
                skips.append(c)
            if level < 3:
                self.down.append(nn.Conv2d(c, c, 3, 2, 1))
                skips.append(c)
        self.mid = nn.ModuleList([ResBlock(c, c), SpatialTransformer(c), ResBlock(c, c)])
        self.up = nn.ModuleList()
        for level, w in reversed(list(enumerate(widths))):
            for _ in range(3):
                attn = SpatialTransformer(w) if level < 3 else None
                self.up.append(nn.ModuleList([ResBlock(c + skips.pop(), w), attn]))
                c = w
            if level:
                self.up.append(nn.Conv2d(c, c, 3, padding=1))
        self.norm_out, self.conv_out = nn.GroupNorm(32, c), nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, inputs):
        x, t, ctx = inputs
        freqs = torch.exp(-math.log(10000) * torch.arange(160, device=x.device) / 160)
        temb = self.t2(
            F.silu(self.t1(torch.cat([(t[:, None] * freqs).cos(), (t[:, None] * freqs).sin()], -1)))
        )
        x = self.conv_in(x)
        skips = [x]
        for m in self.down:
            if isinstance(m, nn.Conv2d):
                x = m(x)
            else:
                x = m[0](x, temb)
                x = x if m[1] is None else m[1](x, ctx)
            skips.append(x)
        x = self.mid[2](self.mid[1](self.mid[0](x, temb), ctx), temb)
        for m in self.up:
            if isinstance(m, nn.Conv2d):
                x = m(F.interpolate(x, scale_factor=2.0, mode="nearest"))
            else:
                x = m[0](torch.cat([x, skips.pop()], dim=1), temb)
                x = x if m[1] is None else m[1](x, ctx)
        return self.conv_out(F.silu(self.norm_out(x)))


class BasicBlock(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(width)
        self.c2, self.b2 = nn.Conv2d(width, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != width:
            self.down = nn.Sequential(
                nn.Conv2d(cin, width, 1, stride, bias=False), nn.BatchNorm2d(width)
            )

    def forward(self, x):
        out = self.relu(self.b1(self.c1(x)))
        out = self.b2(self.c2(out))
        out += x if self.down is None else self.down(x)
        return self.relu(out)


class ResNet18(ResNet):
    """torchvision's resnet18."""

    def __init__(self):
        super().__init__(BasicBlock, (2, 2, 2, 2), 1)


class VGG16(nn.Module):
    """torchvision's vgg16: 3×3 convolutions with in-place ReLU, no batch norm."""

    def __init__(self):
        super().__init__()
        layers, cin = [], 3
        for n, width in ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512)):
            for _ in range(n):
                layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU(inplace=True)]
                cin = width
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 1000),
        )

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (7, 7))
        return self.classifier(torch.flatten(x, 1))
