"""Per-layer tables of saved activations for CNNs, built from each architecture.

CNN activations have no closed form: we walk the architecture once for the image
size asked and write down, per layer, what autograd keeps for the backward pass in
PyTorch (elements per sample):

* a convolution saves its input; batch norm saves its input (the conv output); an
  in-place ReLU saves its result, which is the batch-norm output it overwrote; so a
  conv + BN + ReLU(inplace) keeps two tensors of the output's size, a conv + ReLU
  (VGG, no BN) one, and conv + BN + SiLU (YOLOv5, not in place) three;
* a ResNet shortcut's conv + BN keeps one (its BN output is summed in place into
  the main branch and freed);
* max pooling keeps int64 indices of the output's size (and its input);
* a concatenation's output is new memory that the next convolution saves; a tensor that
  only feeds a concatenation, an add or an upsample (none of which saves its inputs) is
  freed once they have run, so YOLOv5 counts two maps for such a conv + BN + SiLU.

``benchmarks/accuracy.py`` traces YOLOv5s built in plain torch against this table.
ResNet and VGG (the catalog's ``resnet-18/50/101``, ``vgg-16``) are torchvision's, built
by :mod:`gpuwatch.budget.vision_catalog` with the other torchvision families.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwatch.budget.bounds import MAX_IMAGE, bound_text
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import CnnLayer, CnnSpec, ParamGroup
from gpuwatch.budget.unet import build_sd15_unet
from gpuwatch.budget.vision_catalog import VISION_MODELS
from gpuwatch.core.units import shown


@dataclass
class _Builder:
    """Walks a network, tracking the feature map shape and appending table rows."""

    c: int
    h: int
    w: int
    rows: list[CnnLayer] = field(default_factory=list)
    params: list[ParamGroup] = field(default_factory=list)

    def add(self, name: str, saved_maps: int, params: int = 0, index: int = 0) -> None:
        size = self.c * self.h * self.w
        self.rows.append(CnnLayer(name, saved_maps * size, params, index * size, size))

    def conv(
        self,
        name: str,
        cout: int,
        k: int,
        stride: int = 1,
        pad: int | None = None,
        saved_maps: int = 2,
        bn: bool = True,
        bias: bool = False,
        groups: int = 1,
    ) -> None:
        pad = k // 2 if pad is None else pad
        cin = self.c
        self.h = (self.h + 2 * pad - k) // stride + 1
        self.w = (self.w + 2 * pad - k) // stride + 1
        self.c = cout
        weights = cout * cin // groups * k * k
        self.params.append(ParamGroup(name, cout, cin // groups * k * k, 1, "conv", kernel=k))
        extra = (2 * cout if bn else 0) + (cout if bias else 0)
        if extra:
            self.params.append(ParamGroup(name + ".bn", extra, 1, 1, "norm"))
        self.add(name, saved_maps, weights + extra)

    def maxpool(self, name: str, k: int, stride: int, pad: int = 0, saved_maps: int = 1) -> None:
        self.h = (self.h + 2 * pad - k) // stride + 1
        self.w = (self.w + 2 * pad - k) // stride + 1
        self.add(name, saved_maps, index=1)

    def spec(self, name: str, image: tuple[int, int]) -> CnnSpec:
        return CnnSpec(name, tuple(self.rows), image, tuple(self.params))


def _input(b: _Builder) -> None:
    b.add("input", 1)  # the first convolution saves the image


def _yolov5(name: str, depth: float, width: float, image: tuple[int, int]) -> CnnSpec:
    """YOLOv5 v6 (CSP-Darknet53 backbone, SPPF, PANet neck, 3-scale Detect head)."""

    def ch(c: int) -> int:
        return max(8, -(-int(c * width) // 8) * 8)

    def reps(n: int) -> int:
        return max(round(n * depth), 1)

    b = _Builder(3, *image)
    _input(b)
    saved: dict[int, tuple[int, int, int]] = {}

    def conv(tag: str, c2: int, k: int, s: int = 1, kept: bool = True, pad: int | None = None
             ) -> None:
        # conv and BN outputs (saved by BN and SiLU), and the SiLU output where a later
        # convolution or pooling saves it; one that only feeds a concatenation, an add or
        # an upsample is freed once they have read it
        b.conv(tag, c2, k, s, pad, saved_maps=3 if kept else 2)

    def c3(tag: str, c2: int, n: int, shortcut: bool = True) -> None:
        cin, h, w = b.c, b.h, b.w
        c_ = c2 // 2
        conv(tag + ".cv1", c_, 1)
        for i in range(n):
            last = i == n - 1
            conv(f"{tag}.m{i}.cv1", c_, 1)
            conv(f"{tag}.m{i}.cv2", c_, 3, kept=not (shortcut or last))
            if shortcut and not last:  # the sum feeds the next bottleneck's convolution
                b.add(f"{tag}.m{i}.add", 1)
        b.c, b.h, b.w = cin, h, w
        conv(tag + ".cv2", c_, 1, kept=False)  # feeds the concatenation only
        b.c = 2 * c_
        b.add(tag + ".cat", 1)
        conv(tag + ".cv3", c2, 1)

    def concat(tag: str, other: int) -> None:
        b.c += saved[other][0]
        b.add(tag, 1)

    conv("0", ch(64), 6, 2, pad=2)  # the v6 stem: 6×6, stride 2, padding 2
    conv("1", ch(128), 3, 2)
    c3("2", ch(128), reps(3))
    conv("3", ch(256), 3, 2)
    c3("4", ch(256), reps(6))
    saved[4] = (b.c, b.h, b.w)
    conv("5", ch(512), 3, 2)
    c3("6", ch(512), reps(9))
    saved[6] = (b.c, b.h, b.w)
    conv("7", ch(1024), 3, 2)
    c3("8", ch(1024), reps(3))
    c_ = b.c // 2  # SPPF: three chained max pools, each saving its input
    conv("9.cv1", c_, 1)
    for i in range(3):
        b.maxpool(f"9.m{i}", 5, 1, 2, saved_maps=1 if i < 2 else 0)
    b.c = 4 * c_
    b.add("9.cat", 1)
    conv("9.cv2", ch(1024), 1)
    conv("10", ch(512), 1, kept=False)  # feeds an upsample and a concatenation
    saved[10] = (b.c, b.h, b.w)
    b.h, b.w = b.h * 2, b.w * 2
    concat("12", 6)
    c3("13", ch(512), reps(3), False)
    conv("14", ch(256), 1, kept=False)
    saved[14] = (b.c, b.h, b.w)
    b.h, b.w = b.h * 2, b.w * 2
    concat("16", 4)
    c3("17", ch(256), reps(3), False)
    saved[17] = (b.c, b.h, b.w)
    conv("18", ch(256), 3, 2, kept=False)
    concat("19", 14)
    c3("20", ch(512), reps(3), False)
    saved[20] = (b.c, b.h, b.w)
    conv("21", ch(512), 3, 2, kept=False)
    concat("22", 10)
    c3("23", ch(1024), reps(3), False)
    saved[23] = (b.c, b.h, b.w)
    for level in (17, 20, 23):  # Detect: 1×1 conv with bias to 3 anchors × 85 outputs
        b.c, b.h, b.w = saved[level]
        b.conv(f"detect.{level}", 255, 1, bn=False, bias=True, saved_maps=1)
    return b.spec(name, image)


_BUILDERS = {
    "resnet-18": lambda im: VISION_MODELS["resnet18"]("resnet-18", im),
    "resnet-50": lambda im: VISION_MODELS["resnet50"]("resnet-50", im),
    "resnet-101": lambda im: VISION_MODELS["resnet101"]("resnet-101", im),
    "vgg-16": lambda im: VISION_MODELS["vgg16"]("vgg-16", im),
    "yolov5s": lambda im: _yolov5("yolov5s", 0.33, 0.50, im),
    "yolov5m": lambda im: _yolov5("yolov5m", 0.67, 0.75, im),
    "yolov5l": lambda im: _yolov5("yolov5l", 1.0, 1.0, im),
    "sd15-unet": build_sd15_unet,
}

DEFAULT_IMAGE = {
    "yolov5s": (640, 640),
    "yolov5m": (640, 640),
    "yolov5l": (640, 640),
    "sd15-unet": (512, 512),
}


def build_cnn(name: str, image: tuple[int, int] | None = None) -> CnnSpec:
    """The per-layer table of a catalog CNN for ``image`` (height, width)."""
    image = image or DEFAULT_IMAGE.get(name, (224, 224))
    if min(image) < 32:
        raise BudgetError(
            "--image", f"image {image[0]}x{image[1]} is too small for {name}; use at least 32x32."
        )
    if max(image) > MAX_IMAGE:
        raise BudgetError("--image", f"image {image[0]}x{image[1]} is larger than "
                                     f"{bound_text(MAX_IMAGE)} pixels a side.")
    if name not in _BUILDERS:
        raise BudgetError("--model", f"unknown CNN {shown(name)}.")
    return _BUILDERS[name](image)
