"""Classic convolutional families as torchvision builds them: ResNet (ResNeXt, Wide
ResNet), VGG (with or without batch norm), DenseNet and RegNet, from the same
hyperparameters torchvision's constructors take, so every depth and width of a family
reads (see :mod:`gpuwatch.budget.vision_graph` for what each op keeps)."""

from __future__ import annotations

import math

from gpuwatch.budget.specs import CnnSpec
from gpuwatch.budget.vision_graph import Net, T


def conv_bn_act(net: Net, name: str, x: T, cout: int, k: int, stride: int = 1,
                groups: int = 1, act: str | None = "relu") -> T:
    """torchvision's ``Conv2dNormActivation``: convolution, batch norm, activation."""
    y = net.norm(name + ".bn", net.conv(name, x, cout, k, stride, groups))
    return net.act(name + ".act", y, act) if act else y


def squeeze_excitation(net: Net, name: str, x: T, squeeze: int, act: str = "relu",
                       scale: str = "sigmoid") -> T:
    """``SqueezeExcitation``: pool, two 1×1 convolutions, a gate multiplied in."""
    s = net.avgpool(name + ".pool", x)
    s = net.conv(name + ".fc1", s, squeeze, 1, bias=True)
    s = net.act(name + ".act", s, "relu-new" if act == "relu" else act)
    s = net.conv(name + ".fc2", s, x.c, 1, bias=True)
    s = net.act(name + ".scale", s, scale)
    return net.mul(name + ".mul", x, s)


def classifier(net: Net, x: T, classes: int, dropout: float = 0.0) -> T:
    x = net.avgpool("avgpool", x)
    x = net.reshape(x, x.c * x.h * x.w, 1, 1)
    x = net.dropout("dropout", x, dropout)
    return net.linear("fc", x, classes, per_layer=False)


# ------------------------------------------------------------------ ResNet
def resnet(name: str, image: tuple[int, int], layers: tuple[int, ...], bottleneck: bool,
           groups: int = 1, width_per_group: int = 64, classes: int = 1000) -> CnnSpec:
    """ResNet v1.5 (stride on the 3×3), ResNeXt (``groups``) and Wide ResNet (width)."""
    net = Net()
    x = net.tensor(3, *image, kind="wide")  # the fp32 image
    x = conv_bn_act(net, "conv1", x, 64, 7, 2)
    x = net.maxpool("maxpool", x, 3, 2, 1)
    expansion = 4 if bottleneck else 1
    for stage, (n, planes) in enumerate(zip(layers, (64, 128, 256, 512), strict=False)):
        for i in range(n):
            tag = f"layer{stage + 1}.{i}"
            stride = 2 if stage and i == 0 else 1
            if bottleneck:
                width = int(planes * (width_per_group / 64.0)) * groups
                y = conv_bn_act(net, tag + ".conv1", x, width, 1)
                y = conv_bn_act(net, tag + ".conv2", y, width, 3, stride, groups)
                y = conv_bn_act(net, tag + ".conv3", y, planes * 4, 1, act=None)
            else:
                y = conv_bn_act(net, tag + ".conv1", x, planes, 3, stride)
                y = conv_bn_act(net, tag + ".conv2", y, planes, 3, act=None)
            if stride != 1 or x.c != planes * expansion:
                x = conv_bn_act(net, tag + ".downsample", x, planes * expansion, 1, stride,
                                act=None)
            x = net.act(tag + ".relu", net.add(tag + ".add", y, x), "relu")
    classifier(net, x, classes)
    return net.spec(name, image)


# ------------------------------------------------------------------ VGG
VGG_CONFIGS = {
    11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    13: (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
         512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
         512, 512, 512, 512, "M"),
}


def vgg(name: str, image: tuple[int, int], depth: int, batch_norm: bool,
        classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    for i, v in enumerate(VGG_CONFIGS[depth]):
        if v == "M":
            x = net.maxpool(f"features.{i}", x, 2, 2)
            continue
        x = net.conv(f"features.{i}", x, int(v), 3, bias=True)
        if batch_norm:
            x = net.norm(f"features.{i}.bn", x)
        x = net.act(f"features.{i}.relu", x, "relu")
    x = net.avgpool("avgpool", x, 7, 7)  # adaptive, to 7×7
    x = net.reshape(x, x.size, 1, 1)
    for i, cout in enumerate((4096, 4096)):
        x = net.act(f"classifier.{i}.relu", net.linear(f"classifier.{i}", x, cout,
                                                       per_layer=False), "relu")
        x = net.dropout(f"classifier.{i}.dropout", x, 0.5)
    net.linear("classifier.out", x, classes, per_layer=False)
    return net.spec(name, image)


# ------------------------------------------------------------------ DenseNet
def densenet(name: str, image: tuple[int, int], growth: int, blocks: tuple[int, ...],
             init_features: int, bn_size: int = 4, classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = conv_bn_act(net, "features.conv0", x, init_features, 7, 2)
    x = net.maxpool("features.pool0", x, 3, 2, 1)
    for b, n in enumerate(blocks):
        features = [x]
        for i in range(n):
            tag = f"denseblock{b + 1}.layer{i + 1}"
            y = net.cat(tag + ".cat", features)  # a copy, even of one tensor
            y = net.act(tag + ".relu1", net.norm(tag + ".norm1", y), "relu")
            y = conv_bn_act(net, tag + ".conv1", y, bn_size * growth, 1)
            features.append(net.conv(tag + ".conv2", y, growth, 3))
        x = net.cat(f"denseblock{b + 1}.cat", features)
        if b != len(blocks) - 1:
            tag = f"transition{b + 1}"
            x = net.act(tag + ".relu", net.norm(tag + ".norm", x), "relu")
            x = net.conv(tag + ".conv", x, x.c // 2, 1)
            x = net.avgpool(tag + ".pool", x, x.h // 2, x.w // 2)
    x = net.act("features.relu5", net.norm("features.norm5", x), "relu")
    classifier(net, x, classes)
    return net.spec(name, image)


# ------------------------------------------------------------------ RegNet
def regnet_stages(depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                  bottleneck: float = 1.0) -> list[tuple[int, int, int]]:
    """(width, depth, group width) per stage: torchvision's quantized linear widths."""
    widths = []
    for i in range(depth):
        cont = i * w_a + w_0
        capacity = round(math.log(cont / w_0) / math.log(w_m))
        widths.append(int(round(w_0 * w_m**capacity / 8) * 8))
    stages: list[list[int]] = []
    for w in widths:
        if stages and stages[-1][0] == w:
            stages[-1][1] += 1
        else:
            stages.append([w, 1])
    out = []
    for w, d in stages:
        w_bot = int(w * bottleneck)
        g = min(group_width, w_bot)
        w_bot = max(g, int(w_bot + g / 2) // g * g)
        if w_bot < 0.9 * int(w * bottleneck):
            w_bot += g
        out.append((int(w_bot / bottleneck), d, g))
    return out


def regnet(name: str, image: tuple[int, int], depth: int, w_0: int, w_a: float, w_m: float,
           group_width: int, se_ratio: float = 0.0, classes: int = 1000) -> CnnSpec:
    net = Net()
    x = net.tensor(3, *image, kind="wide")
    x = conv_bn_act(net, "stem", x, 32, 3, 2)
    for s, (width, n, g) in enumerate(regnet_stages(depth, w_0, w_a, w_m, group_width)):
        for i in range(n):
            tag = f"block{s + 1}-{i}"
            stride = 2 if i == 0 else 1
            y = conv_bn_act(net, tag + ".a", x, width, 1)
            y = conv_bn_act(net, tag + ".b", y, width, 3, stride, width // g)
            if se_ratio:
                y = squeeze_excitation(net, tag + ".se", y, round(se_ratio * x.c))
            y = conv_bn_act(net, tag + ".c", y, width, 1, act=None)
            if x.c != width or stride != 1:
                x = conv_bn_act(net, tag + ".proj", x, width, 1, stride, act=None)
            x = net.act(tag + ".relu", net.add(tag + ".add", x, y), "relu")
    classifier(net, x, classes)
    return net.spec(name, image)
