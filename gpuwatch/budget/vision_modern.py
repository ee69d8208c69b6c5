"""Families built on layer norm, as torchvision builds them: ConvNeXt (depthwise 7×7,
LayerNorm over channels, an inverted MLP with GELU, a layer scale and stochastic depth)
and the Vision Transformer (patches, a class token, pre-norm blocks with packed q/k/v
projections and fused attention). Under CUDA's autocast a layer norm runs in fp32, and
a layer scale or a position table (fp32 parameters) makes what they touch fp32 too."""

from __future__ import annotations

from gpuwatch.budget.specs import CnnSpec
from gpuwatch.budget.vision_graph import Net, T

CONVNEXT = {  # stage widths, stage depths (torchvision's CNBlockConfig lists)
    "tiny": ((96, 192, 384, 768), (3, 3, 9, 3)),
    "small": ((96, 192, 384, 768), (3, 3, 27, 3)),
    "base": ((128, 256, 512, 1024), (3, 3, 27, 3)),
    "large": ((192, 384, 768, 1536), (3, 3, 27, 3)),
}


def _cn_block(net: Net, tag: str, x: T) -> T:
    y = net.conv(tag + ".dwconv", x, x.c, 7, groups=x.c, bias=True)
    y = net.norm(tag + ".norm", y, layer=True)
    y = net.linear(tag + ".pwconv1", y, 4 * x.c)
    y = net.act(tag + ".gelu", y, "gelu")
    y = net.linear(tag + ".pwconv2", y, x.c)
    y = net.scale(tag + ".layer_scale", y, x.c)
    return net.add(tag + ".add", x, y)  # after stochastic depth (a per-sample mask)


def convnext(name: str, image: tuple[int, int], widths: tuple[int, ...],
             depths: tuple[int, ...], classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = net.conv("stem", x, widths[0], 4, 4, bias=True, pad=0)
    x = net.norm("stem.norm", x, layer=True)
    for s, depth in enumerate(depths):
        for i in range(depth):
            x = _cn_block(net, f"stages.{s}.{i}", x)
        if s + 1 < len(widths):
            x = net.norm(f"downsample.{s}.norm", x, layer=True)
            x = net.conv(f"downsample.{s}", x, widths[s + 1], 2, 2, bias=True, pad=0)
    x = net.avgpool("avgpool", x)
    x = net.norm("classifier.norm", x, layer=True)
    net.linear("classifier", x, classes, per_layer=False)
    return net.spec(name, image)
