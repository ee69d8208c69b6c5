"""torchvision's image classifiers by their torchvision names (``resnet50``,
``efficientnet_b3``, ``convnext_tiny``…), each built from the hyperparameters its
torchvision constructor passes to the family builder; any other depth or width of a
family is one more line here, or a direct call of the builder."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from gpuwatch.budget.bounds import MAX_IMAGE, bound_text
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import CnnSpec
from gpuwatch.budget.vision_convnets import densenet, regnet, resnet, vgg
from gpuwatch.budget.vision_mobile import V2_L, V2_M, V2_S, efficientnet, mobilenet_v2, mobilenet_v3
from gpuwatch.budget.vision_modern import CONVNEXT, SWIN, VIT, convnext, swin, vit

Builder = Callable[[str, tuple[int, int]], CnnSpec]

_B = (3, 4, 6, 3)
_REGNET_Y = {  # depth, w_0, w_a, w_m, group width (torchvision's regnet_y_* constructors)
    "400mf": (16, 48, 27.89, 2.09, 8), "800mf": (14, 56, 38.84, 2.4, 16),
    "1_6gf": (27, 48, 20.71, 2.65, 24), "3_2gf": (21, 80, 42.63, 2.66, 24),
    "8gf": (17, 192, 76.82, 2.19, 56), "16gf": (18, 200, 106.23, 2.48, 112),
    "32gf": (20, 232, 115.89, 2.53, 232), "128gf": (27, 456, 160.83, 2.52, 264),
}
_REGNET_X = {
    "400mf": (22, 24, 24.48, 2.54, 16), "800mf": (16, 56, 35.73, 2.28, 16),
    "1_6gf": (18, 80, 34.01, 2.25, 24), "3_2gf": (25, 88, 26.31, 2.25, 48),
    "8gf": (23, 80, 49.56, 2.88, 120), "16gf": (22, 216, 55.59, 2.1, 128),
    "32gf": (23, 320, 69.86, 2.0, 168),
}
_EFFICIENTNET = ((1.0, 1.0, 0.2), (1.0, 1.1, 0.2), (1.1, 1.2, 0.3), (1.2, 1.4, 0.3),
                 (1.4, 1.8, 0.4), (1.6, 2.2, 0.4), (1.8, 2.6, 0.5), (2.0, 3.1, 0.5))

VISION_MODELS: dict[str, Builder] = {
    "resnet18": partial(resnet, layers=(2, 2, 2, 2), bottleneck=False),
    "resnet34": partial(resnet, layers=(3, 4, 6, 3), bottleneck=False),
    "resnet50": partial(resnet, layers=_B, bottleneck=True),
    "resnet101": partial(resnet, layers=(3, 4, 23, 3), bottleneck=True),
    "resnet152": partial(resnet, layers=(3, 8, 36, 3), bottleneck=True),
    "resnext50_32x4d": partial(resnet, layers=_B, bottleneck=True, groups=32,
                               width_per_group=4),
    "resnext101_32x8d": partial(resnet, layers=(3, 4, 23, 3), bottleneck=True, groups=32,
                                width_per_group=8),
    "resnext101_64x4d": partial(resnet, layers=(3, 4, 23, 3), bottleneck=True, groups=64,
                                width_per_group=4),
    "wide_resnet50_2": partial(resnet, layers=_B, bottleneck=True, width_per_group=128),
    "wide_resnet101_2": partial(resnet, layers=(3, 4, 23, 3), bottleneck=True,
                                width_per_group=128),
    **{f"vgg{d}": partial(vgg, depth=d, batch_norm=False) for d in (11, 13, 16, 19)},
    **{f"vgg{d}_bn": partial(vgg, depth=d, batch_norm=True) for d in (11, 13, 16, 19)},
    "densenet121": partial(densenet, growth=32, blocks=(6, 12, 24, 16), init_features=64),
    "densenet161": partial(densenet, growth=48, blocks=(6, 12, 36, 24), init_features=96),
    "densenet169": partial(densenet, growth=32, blocks=(6, 12, 32, 32), init_features=64),
    "densenet201": partial(densenet, growth=32, blocks=(6, 12, 48, 32), init_features=64),
    **{f"regnet_y_{k}": partial(regnet, depth=d, w_0=w0, w_a=wa, w_m=wm, group_width=g,
                                se_ratio=0.25)
       for k, (d, w0, wa, wm, g) in _REGNET_Y.items()},
    **{f"regnet_x_{k}": partial(regnet, depth=d, w_0=w0, w_a=wa, w_m=wm, group_width=g)
       for k, (d, w0, wa, wm, g) in _REGNET_X.items()},
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_large": partial(mobilenet_v3, large=True),
    "mobilenet_v3_small": partial(mobilenet_v3, large=False),
    **{f"efficientnet_b{i}": partial(efficientnet, width_mult=w, depth_mult=d, dropout=p)
       for i, (w, d, p) in enumerate(_EFFICIENTNET)},
    "efficientnet_v2_s": partial(efficientnet, v2=V2_S, dropout=0.2),
    "efficientnet_v2_m": partial(efficientnet, v2=V2_M, dropout=0.3),
    "efficientnet_v2_l": partial(efficientnet, v2=V2_L, dropout=0.4),
    **{f"convnext_{k}": partial(convnext, widths=w, depths=d) for k, (w, d) in CONVNEXT.items()},
    **{f"vit_{k}": partial(vit, patch=p, layers=n, heads=h, width=w, mlp=m)
       for k, (p, n, h, w, m) in VIT.items()},
    **{f"swin_{k}": partial(swin, width=w, depths=d, heads=h) for k, (w, d, h) in SWIN.items()},
}


def vision_key(name: str) -> str | None:
    """The torchvision name ``name`` means (``torchvision:``, case, ``-`` for ``_``)."""
    key = name.strip().lower().removeprefix("torchvision:").replace("-", "_")
    return key if key in VISION_MODELS else None


def build_vision(key: str, image: tuple[int, int] | None = None) -> CnnSpec:
    """The table of torchvision's ``key`` for ``image`` (height, width; 224×224 if None)."""
    image = image or (224, 224)
    if min(image) < 32:
        raise BudgetError("--image", f"image {image[0]}x{image[1]} is too small for {key}; "
                                     "use at least 32x32.")
    if max(image) > MAX_IMAGE:
        raise BudgetError("--image", f"image {image[0]}x{image[1]} is larger than "
                                     f"{bound_text(MAX_IMAGE)} pixels a side.")
    return VISION_MODELS[key](key, image)
