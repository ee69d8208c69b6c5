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


# ------------------------------------------------------------------ Vision Transformer
VIT = {  # patch, layers, heads, width, MLP width (torchvision's vit_* constructors)
    "b_16": (16, 12, 12, 768, 3072), "b_32": (32, 12, 12, 768, 3072),
    "l_16": (16, 24, 16, 1024, 4096), "l_32": (32, 24, 16, 1024, 4096),
    "h_14": (14, 32, 16, 1280, 5120),
}


def vit(name: str, image: tuple[int, int], patch: int, layers: int, heads: int, width: int,
        mlp: int, classes: int = 1000) -> CnnSpec:
    """torchvision's ViT: ``nn.MultiheadAttention`` (one packed in-projection, its output
    made contiguous for SDPA) in pre-norm blocks; the class token and the position table
    (fp32 parameters) make the residual stream fp32 under autocast."""
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = net.conv("conv_proj", x, width, patch, patch, bias=True, pad=0)
    n = x.h * x.w + 1
    net.param("class_token", width)
    net.param("pos_embedding", n * width)
    x = net.tensor(width, n, 1, kind="wide")  # cat with the class token, + positions
    for i in range(layers):
        tag = f"encoder_layer_{i}"
        y = net.norm(tag + ".ln_1", x, layer=True)
        y = net.linear(tag + ".in_proj", y, 3 * width)
        y = net.attention(tag + ".attention", net.like(y), heads)  # the contiguous copy
        y = net.linear(tag + ".out_proj", y, width)
        x = net.add(tag + ".add_1", x, y)
        y = net.norm(tag + ".ln_2", x, layer=True)
        y = net.act(tag + ".gelu", net.linear(tag + ".mlp.0", y, mlp), "gelu")
        x = net.add(tag + ".add_2", x, net.linear(tag + ".mlp.3", y, width))
    x = net.norm("encoder.ln", x, layer=True)
    net.linear("heads", net.reshape(x, width, 1), classes, per_layer=False)  # class token
    return net.spec(name, image)


# ------------------------------------------------------------------ Swin Transformer
SWIN = {  # width, depths, heads, window (torchvision's swin_t/s/b)
    "t": (96, (2, 2, 6, 2), (3, 6, 12, 24)), "s": (96, (2, 2, 18, 2), (3, 6, 12, 24)),
    "b": (128, (2, 2, 18, 2), (4, 8, 16, 32)),
}


def _window_attention(net: Net, tag: str, x: T, heads: int, window: int) -> T:
    """``shifted_window_attention``: eager attention inside window × window tiles."""
    tiles = -(-x.h // window) * -(-x.w // window)
    n = window * window
    t = net.tensor(x.c, tiles * n, 1, x.kind)  # rolled and split into windows (a copy)
    qkv = net.linear(tag + ".qkv", t, 3 * x.c)
    # the batched matmuls keep contiguous copies of q × scale, kᵀ and v (not the buffer)
    q, k, v = (net.like(qkv, c=x.c) for _ in range(3))
    scores = net.matmul(tag + ".q@k", q, k, heads * n, "wide")  # + the fp32 position bias
    probs = net.act(tag + ".softmax", scores, "sigmoid")  # keeps its (fp32) result
    out = net.matmul(tag + ".attn@v", probs, v, x.c)  # autocast: a 16-bit copy of probs
    out = net.linear(tag + ".proj", net.like(out), x.c)  # laid out again (a copy)
    return net.reshape(out, x.c, x.h, x.w)


def swin(name: str, image: tuple[int, int], width: int, depths: tuple[int, ...],
         heads: tuple[int, ...], window: int = 7, classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = net.conv("features.0", x, width, 4, 4, bias=True, pad=0)
    x = net.norm("features.0.norm", x, layer=True)
    for s, (depth, h) in enumerate(zip(depths, heads, strict=True)):
        for i in range(depth):
            tag = f"stage{s}.{i}"
            net.param(tag + ".relative_position_bias", (2 * window - 1) ** 2 * h)
            y = net.norm(tag + ".norm1", x, layer=True)
            x = net.add(tag + ".add_1", x, _window_attention(net, tag + ".attn", y, h, window))
            y = net.norm(tag + ".norm2", x, layer=True)
            y = net.act(tag + ".gelu", net.linear(tag + ".mlp.0", y, 4 * x.c), "gelu")
            x = net.add(tag + ".add_2", x, net.linear(tag + ".mlp.3", y, x.c))
        if s + 1 < len(depths):  # patch merging: 2×2 neighbours concatenated, norm, linear
            x = net.tensor(4 * x.c, -(-x.h // 2), -(-x.w // 2), x.kind)
            x = net.norm(f"stage{s}.merge.norm", x, layer=True)
            x = net.linear(f"stage{s}.merge.reduction", x, x.c // 2, bias=False)
    x = net.norm("norm", x, layer=True)
    x = net.avgpool("avgpool", x)
    net.linear("head", x, classes, per_layer=False)
    return net.spec(name, image)
