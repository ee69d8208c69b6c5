"""Stable Diffusion 1.5's UNet in the CNN catalog: parameters, scaling, attention, CLI."""

from __future__ import annotations

import argparse
import json

import pytest

from gpuwatch.budget import BudgetError, CnnSpec, Setup, Workload, estimate, lookup_model
from gpuwatch.budget.cnn_activations import cnn_attention_bytes
from gpuwatch.budget.precision import get_precision
from gpuwatch.commands.estimate import add_estimate_parser

PUBLISHED_PARAMS = 859_520_964  # diffusers UNet2DConditionModel, runwayml SD 1.5
GIB = 1024**3


def _run(capsys, *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="gpuwatch")
    add_estimate_parser(parser.add_subparsers())
    args = parser.parse_args(["estimate", *argv])
    code = args.func(args)
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    ["sd15-unet", "SD15-UNet", "stable-diffusion-1.5-unet", "sd-1.5-unet", "stable-diffusion-1.5"],
)
def test_catalog_names_and_aliases(name):
    spec = lookup_model(name)
    assert isinstance(spec, CnnSpec) and spec.name == "sd15-unet"
    assert spec.image == (512, 512) and spec.has_attention


@pytest.mark.parametrize("image", [(512, 512), (768, 768), (512, 768), (256, 256)])
def test_parameter_count_within_1_percent(image):
    spec = lookup_model("sd15-unet", image)
    assert spec.params == pytest.approx(PUBLISHED_PARAMS, rel=0.01)
    assert spec.params == PUBLISHED_PARAMS  # built from the architecture: exact


def test_table_shape_follows_the_architecture():
    spec = lookup_model("sd15-unet")
    names = [x.name for x in spec.layers]
    # 16 spatial transformers (2+2+2 down, 1 middle, 3+3+3 up), 22 ResNet blocks
    assert sum(n.endswith(".attn1") for n in names) == 16
    assert sum(n.endswith("resnet") or ".resnet" in n for n in names) == 22
    first = next(x for x in spec.layers if x.name == "down0.0.attn.attn1")
    assert first.scores == 8 * 4096**2  # heads × (h·w)² at 64×64
    cross = next(x for x in spec.layers if x.name == "down0.0.attn.attn2")
    assert cross.scores == 8 * 4096 * 77


@pytest.mark.parametrize("mode", ["train", "infer"])
@pytest.mark.parametrize("flash", [False, True])
@pytest.mark.parametrize("precision", ["amp-bf16", "fp32", "bf16"])
def test_activations_scale_linearly_with_batch(mode, flash, precision):
    spec = lookup_model("sd15-unet")
    setup = Setup(precision=precision, flash_attention=flash)
    acts = [
        estimate(spec, Workload(mode=mode, batch=b, image=(512, 512)), setup).breakdown.activations
        for b in (1, 2, 4, 8)
    ]
    fixed = 2 * acts[0] - acts[1]  # autocast's weight copies do not scale
    for b, a in zip((1, 2, 4, 8), acts, strict=True):
        assert a - fixed == pytest.approx(b * (acts[0] - fixed), rel=1e-9)


@pytest.mark.parametrize(
    ("precision", "bytes_per_score"), [("fp32", 4), ("bf16", 2), ("amp-bf16", 6)]
)
def test_attention_scores_vanish_with_flash(precision, bytes_per_score):
    spec = lookup_model("sd15-unet")
    p = get_precision(precision)
    wl = Workload(batch=2, image=(512, 512))
    eager = estimate(spec, wl, Setup(precision=precision, flash_attention=False))
    flash = estimate(spec, wl, Setup(precision=precision, flash_attention=True))
    scores = 2 * spec.total("scores") * bytes_per_score
    fused = 2 * cnn_attention_bytes(spec, p, Setup(flash_attention=True))
    assert eager.breakdown.activations - flash.breakdown.activations == pytest.approx(
        scores - fused, abs=1
    )
    # at 64×64 latents the (h·w)² self-attention scores dominate eager training
    assert scores > 0.5 * eager.breakdown.activations
    assert (
        cnn_attention_bytes(spec, p, Setup(flash_attention=False, checkpointing="selective")) == 0
    )


def test_inference_keeps_only_what_is_live():
    spec = lookup_model("sd15-unet")
    wl = Workload(mode="infer", batch=1, image=(512, 512))
    train = estimate(spec, Workload(batch=1, image=(512, 512)), Setup(precision="bf16"))
    infer = estimate(spec, wl, Setup(precision="bf16", flash_attention=True))
    eager = estimate(spec, wl, Setup(precision="bf16", flash_attention=False))
    assert infer.breakdown.activations < train.breakdown.activations / 10
    # eager inference holds one self-attention's scores and probabilities at a time
    one_attention = 2 * 2 * 8 * 4096**2
    assert eager.breakdown.activations >= one_attention
    assert eager.breakdown.activations - infer.breakdown.activations > 0.8 * one_attention


@pytest.mark.parametrize("image", [(500, 512), (32, 32)])
def test_bad_image_sizes(image):
    with pytest.raises(BudgetError, match="sd15-unet"):
        lookup_model("sd15-unet", image)


def test_cli_train_breakdown(capsys):
    code, out = _run(
        capsys, "--model", "sd15-unet", "--image", "512x512", "--batch", "4", "--mode", "train"
    )
    assert code == 0
    assert out.startswith("sd15-unet: 860 M params, train, batch 4, image 512x512")
    for label in ("parameters", "gradients", "optimizer states", "activations", "total"):
        assert label in out
    assert "860 M params" in out and "latent 4×64×64" in out


def test_cli_json_and_default_image(capsys):
    code, out = _run(capsys, "--model", "sd15-unet", "--mode", "infer", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["inputs"]["image"] == "512x512"
    assert doc["inputs"]["params"] == PUBLISHED_PARAMS
    assert doc["breakdown_bytes"]["activations"] < 2 * GIB
