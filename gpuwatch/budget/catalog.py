"""Named models: transformer dimensions from their published configs, CNNs by builder.

Transformer rows copy the numbers in each model's public ``config.json``; the test
suite pins their parameter counts to the published totals. CNN rows are built by
:mod:`gpuwatch.budget.cnn` for the image size asked.
"""

from __future__ import annotations

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.family_spec import FamilySpec, t5_quirks
from gpuwatch.budget.specs import CnnSpec, TransformerSpec
from gpuwatch.core.units import shown


def _gpt2(name: str, layers: int, hidden: int, heads: int) -> TransformerSpec:
    return TransformerSpec(name, layers, hidden, heads, 50257, max_positions=1024, dropout=0.1,
                           activation="gelu_new", fused_qkv=True)


def _bert(name: str, layers: int, hidden: int, heads: int) -> TransformerSpec:
    return TransformerSpec(
        name,
        layers,
        hidden,
        heads,
        30522,
        arch="encoder",
        max_positions=512,
        type_vocab=2,
        mlm_head=True,  # BertForMaskedLM: the MLM transform, no pooler
        dropout=0.1,
    )


def _llama(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    tied: bool = False,
    bias: bool = False,
    experts: int = 1,
    experts_per_token: int = 1,
) -> TransformerSpec:
    return TransformerSpec(
        name,
        layers,
        hidden,
        heads,
        vocab,
        ffn=ffn,
        kv_heads=kv,
        gated_mlp=True,
        norm="rmsnorm",
        bias=bias,
        tied_embeddings=tied,
        experts=experts,
        experts_per_token=experts_per_token,
    )


TRANSFORMERS: dict[str, TransformerSpec] = {
    s.name: s
    for s in (
        _gpt2("gpt2", 12, 768, 12),
        _gpt2("gpt2-medium", 24, 1024, 16),
        _gpt2("gpt2-large", 36, 1280, 20),
        _gpt2("gpt2-xl", 48, 1600, 25),
        _bert("bert-base", 12, 768, 12),
        _bert("bert-large", 24, 1024, 16),
        _llama("llama-2-7b", 32, 4096, 32, 32, 11008, 32000),
        _llama("llama-3.1-8b", 32, 4096, 32, 8, 14336, 128256),
        _llama("llama-3.1-70b", 80, 8192, 64, 8, 28672, 128256),
        _llama("mistral-7b", 32, 4096, 32, 8, 14336, 32000),
        # Qwen2's q/k/v biases (0.2 M parameters) are left out: 0.003 % of the total.
        TransformerSpec(
            "qwen2-7b",
            28,
            3584,
            28,
            152064,
            ffn=18944,
            kv_heads=4,
            gated_mlp=True,
            norm="rmsnorm",
            bias=False,
            tied_embeddings=False,
        ),
        _llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, experts=8, experts_per_token=2),
        FamilySpec(
            "t5-base",
            12,
            768,
            12,
            32128,
            ffn=3072,
            arch="encoder-decoder",
            decoder_layers=12,
            bias=False,
            relative_buckets=32,
            dropout=0.1,
            norm="rmsnorm",
            activation="relu",
            quirks=t5_quirks(0.1),
        ),
        TransformerSpec("vit-b-16", 12, 768, 12, 0, arch="vit", classes=1000, dropout=0.0),
    )
}

CNN_NAMES = (
    "resnet-18",
    "resnet-50",
    "resnet-101",
    "vgg-16",
    "yolov5s",
    "yolov5m",
    "yolov5l",
    "sd15-unet",
)

# Exact other names of the same checkpoint only: a different release (Llama 3 for 3.1)
# is never mapped silently; a near miss gets a "did you mean" instead.
ALIASES = {
    "gpt2-small": "gpt2",
    "bert-base-uncased": "bert-base",
    "bert-large-uncased": "bert-large",
    "vit-b/16": "vit-b-16",
    "vit-base": "vit-b-16",
    "resnet18": "resnet-18",
    "resnet50": "resnet-50",
    "resnet101": "resnet-101",
    "vgg16": "vgg-16",
    "sd15": "sd15-unet",
    "sd-1.5": "sd15-unet",
    "sd1.5-unet": "sd15-unet",
    "sd-1.5-unet": "sd15-unet",
    "stable-diffusion-1.5": "sd15-unet",
    "stable-diffusion-1.5-unet": "sd15-unet",
    "stable-diffusion-v1-5": "sd15-unet",
    "stable-diffusion-v1-5-unet": "sd15-unet",
    "yolov5-s": "yolov5s",
    "yolov5-m": "yolov5m",
    "yolov5-l": "yolov5l",
    "mistral-7b-v0.1": "mistral-7b",
    "qwen2-7b-instruct": "qwen2-7b",
}


def model_names() -> tuple[str, ...]:
    return (*TRANSFORMERS, *CNN_NAMES)


def lookup_model(name: str, image: tuple[int, int] | None = None) -> TransformerSpec | CnnSpec:
    """A catalog model by name (case-insensitive, a few aliases); CNNs for ``image``."""
    from gpuwatch.budget.vision_catalog import build_vision, vision_key

    vision = vision_key(name)
    exact = name.strip().lower()
    if vision is not None and (exact == vision or exact.startswith("torchvision:")):
        return build_vision(vision, image)  # torchvision's spelling: vit_b_16 is its ViT
    key = exact.replace("_", "-")
    key = ALIASES.get(key, key)
    if key in TRANSFORMERS:
        return TRANSFORMERS[key]
    if key in CNN_NAMES:
        from gpuwatch.budget.cnn import build_cnn

        return build_cnn(key, image)
    if vision is not None:
        return build_vision(vision, image)
    close = suggest_models(name)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise BudgetError(
        "--model",
        f"unknown model {shown(name)}; {hint}known models: {', '.join(model_names())}, "
        "and torchvision's classifiers by their names (efficientnet_b0, convnext_tiny…).",
    )


def _squeezed(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def suggest_models(name: str, limit: int = 2) -> tuple[str, ...]:
    """Catalog names close to ``name``: ``llama3-8b`` → ``llama-3.1-8b``, ``bert`` →
    ``bert-base`` and ``bert-large``; only the best few, never the whole catalog."""
    from difflib import SequenceMatcher

    from gpuwatch.budget.vision_catalog import VISION_MODELS

    names = {_squeezed(n): n for n in (*model_names(), *VISION_MODELS)}
    names.update({_squeezed(a): t for a, t in ALIASES.items()})
    key = _squeezed(name[:200])
    if not key:
        return ()
    starts = sorted({t for k, t in names.items() if k.startswith(key)})
    if 1 <= len(starts) <= limit:
        return tuple(starts)
    scored = sorted(
        ((SequenceMatcher(None, key, k).ratio(), t) for k, t in names.items()), reverse=True
    )
    best = scored[0][0]
    out: list[str] = []
    for ratio, target in scored:
        if ratio < max(0.75, best - 0.04) or len(out) == limit:
            break
        if target not in out:
            out.append(target)
    return tuple(out)
