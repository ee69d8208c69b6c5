"""torchvision's classifiers by name against traced steps of the real torchvision classes.

``data/torchvision_traced.json`` holds one training step per row, traced by
``benchmarks/accuracy_torchvision.py --regenerate`` through ``gpuwatch estimate --trace``'s
own code (FakeTensorMode + MemTracker; the torch and torchvision versions are in the
file), and the parameter count of every classifier the estimator names, as torchvision
builds it. These tests need neither torch nor torchvision: every row must be within
target (total ±8 %, each category over 5 % of it ±10 %), every count exact, and every
member of a family, at any scaling, must build a table that behaves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.vision_catalog import VISION_MODELS, build_vision
from gpuwatch.budget.vision_convnets import regnet, resnet
from gpuwatch.budget.vision_mobile import efficientnet, mobilenet_v3
from gpuwatch.budget.vision_modern import convnext, swin, vit

DATA = json.loads((Path(__file__).parent / "data" / "torchvision_traced.json").read_text())
CATS = ("parameters", "gradients", "optimizer_states", "activations")


def _estimate(row: dict) -> dict[str, int]:
    image = tuple(row["image"])
    est = estimate(lookup_model(row["model"], image),
                   Workload(mode="train", batch=row["batch"], image=image),
                   Setup(precision=row["precision"], optimizer=row["optimizer"],
                         overhead_bytes=0, dropout_mask_bytes=4.0
                         if row["precision"] in ("fp32", "amp-bf16") else 2.0))
    return {"parameters": est.breakdown.parameters, "gradients": est.breakdown.gradients,
            "optimizer_states": est.detail.optimizer_persistent,
            "activations": est.breakdown.activations, "total": est.total_bytes}


def _label(row: dict) -> str:
    return f"{row['model']}-{row['precision']}-{row['optimizer']}-b{row['batch']}-" \
           f"{row['image'][0]}x{row['image'][1]}"


@pytest.mark.parametrize("row", DATA["rows"], ids=_label)
def test_every_traced_row_is_within_target(row):
    traced, est = row["traced_bytes"], _estimate(row)
    assert abs(est["total"] - traced["total"]) <= 0.08 * traced["total"], (est, traced)
    for cat in CATS:
        if traced[cat] > 0.05 * traced["total"]:
            assert abs(est[cat] - traced[cat]) <= 0.10 * traced[cat], (cat, est, traced)


def test_the_data_covers_each_family_in_each_regime():
    assert DATA["torch"] and DATA["torchvision"]
    traced = {(r["model"], r["precision"]) for r in DATA["rows"]}
    for family in ("resnet", "resnext", "wide_resnet", "vgg", "densenet", "mobilenet_v2",
                   "mobilenet_v3", "efficientnet_b", "efficientnet_v2", "convnext", "regnet",
                   "vit", "swin"):
        for precision in ("fp32", "amp-bf16"):
            assert any(m.startswith(family) and p == precision for m, p in traced), family


@pytest.mark.parametrize("name", sorted(VISION_MODELS))
def test_parameter_counts_are_torchvisions(name):
    assert build_vision(name).params == DATA["param_counts"][name]


def test_torchvision_spellings_and_the_catalog_names():
    assert lookup_model("efficientnet-b0").name == "efficientnet_b0"
    assert lookup_model("torchvision:ViT_B_16").name == "vit_b_16"
    assert lookup_model("vit_b_16").name == "vit_b_16"  # torchvision's ViT
    assert lookup_model("vit-b-16").name == "vit-b-16"  # the Hugging Face one
    assert lookup_model("resnet-50").params == lookup_model("resnet50").params
    with pytest.raises(BudgetError, match="did you mean efficientnet_b"):
        lookup_model("efficientnet_b9")
    with pytest.raises(BudgetError, match="too small"):
        build_vision("convnext_tiny", (16, 16))


def _acts(spec, batch: int, precision: str = "amp-bf16") -> int:
    est = estimate(spec, Workload(mode="train", batch=batch, image=spec.image),
                   Setup(precision=precision, overhead_bytes=0))
    return est.breakdown.activations


FAMILIES = st.one_of(
    st.builds(lambda n, g, w: ("resnet", dict(layers=n, bottleneck=True, groups=g,
                                               width_per_group=w)),
              st.tuples(*[st.integers(1, 4)] * 4), st.sampled_from([1, 2, 32]),
              st.sampled_from([4, 8, 64, 128])),
    st.builds(lambda w, d: ("efficientnet", dict(width_mult=w, depth_mult=d)),
              st.floats(0.25, 2.5), st.floats(0.25, 3.5)),
    st.builds(lambda w, large: ("mobilenet_v3", dict(width_mult=w, large=large)),
              st.floats(0.25, 2.0), st.booleans()),
    st.builds(lambda d, w0, wa, wm, g: ("regnet", dict(depth=d, w_0=w0, w_a=wa, w_m=wm,
                                                       group_width=g, se_ratio=0.25)),
              st.integers(4, 30), st.sampled_from([24, 48, 80]), st.floats(10, 120),
              st.floats(1.5, 3.0), st.sampled_from([8, 16, 24])),
    st.builds(lambda c, d: ("convnext", dict(widths=(c, 2 * c, 4 * c, 8 * c), depths=d)),
              st.sampled_from([32, 64, 96]), st.tuples(*[st.integers(1, 4)] * 4)),
    st.builds(lambda c: ("swin", dict(width=c, depths=(2, 2, 2, 2), heads=(1, 2, 4, 8))),
              st.sampled_from([32, 64])),
    st.builds(lambda p, n: ("vit", dict(patch=p, layers=n, heads=4, width=256, mlp=1024)),
              st.sampled_from([14, 16, 32]), st.integers(1, 6)),
)
BUILD = {"resnet": resnet, "efficientnet": efficientnet, "mobilenet_v3": mobilenet_v3,
         "regnet": regnet, "convnext": convnext, "swin": swin, "vit": vit}


@settings(max_examples=25, deadline=None)
@given(FAMILIES, st.integers(32, 320), st.integers(32, 320))
def test_any_scaling_of_a_family_builds_a_table_that_behaves(family, h, w):
    kind, kwargs = family
    spec = BUILD[kind]("m", (h, w), **kwargs)
    assert spec.params > 0 and spec.layers
    assert all(x.saved_elements >= 0 and x.wide >= 0 and x.cast >= 0 for x in spec.layers)
    one, four = _acts(spec, 1), _acts(spec, 4)
    assert 0 < one < four <= 4 * one + 1  # weight copies do not scale with the batch
    bigger = BUILD[kind]("m", (h + 32, w + 32), **kwargs)
    assert bigger.saved_elements_per_sample >= spec.saved_elements_per_sample
