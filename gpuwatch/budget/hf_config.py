"""A Hugging Face ``config.json`` (already parsed) → :class:`TransformerSpec`.

The family is read from what the config says it is (``model_type``, else the class
named in ``architectures``): GPT-2, BERT (and RoBERTa), T5, ViT, Llama/Mistral/Qwen2
style decoders with grouped-query attention and Mixtral-style experts here, and the
families whose structure differs (Gemma 1-3, OPT, Phi, Phi-3, GPT-NeoX, Falcon, BLOOM,
MPT, StarCoder2, Qwen2-MoE, Qwen3, DeepSeek) in :mod:`gpuwatch.budget.families`. A
family it does not know is refused with the nearest one it does; a config that names
no family is read by its keys (GPT-2's ``n_embd``, T5's ``d_model``, else Llama's).
Nothing is fetched: the caller reads the file.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from gpuwatch.budget.bounds import MAX_PARAMS, bound_text
from gpuwatch.budget.config_fields import FIELD, LIMITS, flag, fraction, text, whole
from gpuwatch.budget.counts import format_count
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.families import READERS
from gpuwatch.budget.family_spec import FamilySpec, t5_quirks
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.core.units import shown

_CORE = ("gpt2", "bert", "roberta", "distilbert", "electra", "t5", "mt5", "umt5", "vit",
         "deit", "dinov2", "llama", "mistral", "mixtral", "qwen2")
KNOWN_FAMILIES = tuple(sorted({*_CORE, *READERS}))
_SQUASHED = {re.sub(r"[^a-z0-9]", "", k): k for k in KNOWN_FAMILIES}
_CLASS_SUFFIX = re.compile(r"(For[A-Za-z]+|LMHeadModel|Model)$")


def _architecture(cfg: dict[str, Any]) -> str:
    """The family of the first class in ``architectures`` that names one ("" if none)."""
    names = cfg.get("architectures")
    if names is None:
        return ""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BudgetError(FIELD, f"config.json field 'architectures' should be a list of "
                                 f"class names, not {shown(names)}.")
    for cls in names[:64]:
        squashed = re.sub(r"[^a-z0-9]", "", _CLASS_SUFFIX.sub("", cls[:200]).lower())
        if squashed in _SQUASHED:
            return _SQUASHED[squashed]
    return ""


def family_of(cfg: dict[str, Any]) -> str:
    """The family a config names ("" when it names none); an unknown one is refused,
    naming the nearest family that is read."""
    kind = text(cfg, "model_type", "")
    if kind in KNOWN_FAMILIES:
        return kind
    from_class = _architecture(cfg)
    if from_class or not (kind or cfg.get("architectures")):
        return from_class
    said = kind or str(cfg["architectures"][0])
    squashed = re.sub(r"[^a-z0-9]", "", _CLASS_SUFFIX.sub("", said[:200]).lower())
    nearest = difflib.get_close_matches(squashed, list(_SQUASHED), n=1, cutoff=0.0)
    hint = f"the nearest it reads is {_SQUASHED[nearest[0]]!r}; " if nearest else ""
    field = "model_type" if kind else "architectures"
    raise BudgetError(
        FIELD,
        f"config.json field {field!r} names {shown(said)}, a model family gpuwatch does "
        f"not read; {hint}describe the model with --params or --layers/--hidden/--heads/"
        f"--ffn/--vocab instead.",
    )


def spec_from_hf_config(cfg: Any, name: str = "config") -> TransformerSpec:
    """The spec a ``config.json`` describes; :class:`BudgetError` names what is wrong.

    Every field is bounded (``gpuwatch.budget.bounds``); a shape the fields contradict
    (heads that do not divide the hidden size, a patch larger than the image) is
    refused with the sentence the spec gives, marked as coming from ``config.json``.
    """
    if not isinstance(cfg, dict):
        raise BudgetError(FIELD, "config.json should hold a JSON object of model settings.")
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        outer = cfg.get("model_type")
        cfg = cfg["text_config"]
        if "model_type" not in cfg and isinstance(outer, str):
            cfg = {**cfg, "model_type": {"gemma3": "gemma3_text"}.get(outer.lower(), outer)}
    for key in LIMITS:  # every size field present is checked, read or not
        if cfg.get(key) is not None:
            whole(cfg, key)
    try:
        return _spec(cfg, name)
    except BudgetError as e:
        if e.field == FIELD:
            raise
        raise BudgetError(FIELD, f"config.json: {e}") from None


def _spec(cfg: dict[str, Any], name: str) -> TransformerSpec:
    kind = family_of(cfg)
    if kind in READERS:  # each reader sees the family it was chosen for
        return READERS[kind]({**cfg, "model_type": kind}, name)
    dropout = fraction(cfg, "resid_pdrop", "hidden_dropout_prob", "dropout_rate",
                        "hidden_dropout")
    if kind == "gpt2" or (not kind and "n_embd" in cfg):
        h = whole(cfg, "n_embd")
        return TransformerSpec(
            name,
            whole(cfg, "n_layer"),
            h,
            whole(cfg, "n_head"),
            whole(cfg, "vocab_size"),
            ffn=whole(cfg, "n_inner", default=4 * h) if cfg.get("n_inner") is not None else 4 * h,
            max_positions=whole(cfg, "n_positions", "n_ctx", default=1024),
            dropout=dropout,
            activation=text(cfg, "activation_function", "gelu_new"),
            fused_qkv=True,
        )
    if kind in ("bert", "roberta", "distilbert", "electra"):
        return TransformerSpec(
            name,
            whole(cfg, "num_hidden_layers"),
            whole(cfg, "hidden_size"),
            whole(cfg, "num_attention_heads"),
            whole(cfg, "vocab_size"),
            ffn=whole(cfg, "intermediate_size"),
            arch="encoder",
            max_positions=whole(cfg, "max_position_embeddings", default=512),
            type_vocab=whole(cfg, "type_vocab_size", default=2),
            mlm_head=True,  # *ForMaskedLM, as the hub's configs name them: no pooler
            dropout=dropout,
        )
    if kind in ("t5", "mt5", "umt5") or (
            not kind and "d_model" in cfg and "num_decoder_layers" in cfg):
        layers = whole(cfg, "num_layers")
        proj = text(cfg, "feed_forward_proj", "relu")
        gated = proj.startswith("gated")
        act = proj.removeprefix("gated-")
        return FamilySpec(
            name,
            layers,
            whole(cfg, "d_model"),
            whole(cfg, "num_heads"),
            whole(cfg, "vocab_size"),
            ffn=whole(cfg, "d_ff"),
            head_dim=whole(cfg, "d_kv", default=64),
            arch="encoder-decoder",
            decoder_layers=whole(cfg, "num_decoder_layers", default=layers),
            gated_mlp=gated,
            bias=False,
            relative_buckets=whole(cfg, "relative_attention_num_buckets", default=32),
            tied_embeddings=flag(cfg, "tie_word_embeddings", True),
            norm="rmsnorm",
            dropout=dropout,
            activation="gelu_new" if act == "gelu" else act,  # HF maps gated-gelu so
            quirks=t5_quirks(dropout),
        )
    if kind in ("vit", "deit", "dinov2"):
        return TransformerSpec(
            name,
            whole(cfg, "num_hidden_layers"),
            whole(cfg, "hidden_size"),
            whole(cfg, "num_attention_heads"),
            0,
            ffn=whole(cfg, "intermediate_size"),
            arch="vit",
            image=whole(cfg, "image_size", default=224),
            patch=whole(cfg, "patch_size", default=16),
            channels=whole(cfg, "num_channels", default=3),
            classes=1000,
            dropout=dropout,
        )
    # Llama, Mistral, Qwen2, Mixtral (and a config naming no family): gated MLP, RMSNorm, GQA
    heads = whole(cfg, "num_attention_heads")
    hidden = whole(cfg, "hidden_size")
    experts = whole(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=1) or 1
    moe_ffn = whole(cfg, "moe_intermediate_size", default=0) \
        if experts > 1 and cfg.get("moe_intermediate_size") is not None else 0
    head_dim = whole(cfg, "head_dim", default=0) if cfg.get("head_dim") is not None else 0
    if not head_dim and hidden % heads:
        raise BudgetError(
            FIELD, f"config.json: {heads} attention heads do not divide the hidden size {hidden}."
        )
    return TransformerSpec(
        name,
        whole(cfg, "num_hidden_layers"),
        hidden,
        heads,
        whole(cfg, "vocab_size"),
        ffn=moe_ffn or whole(cfg, "intermediate_size"),
        kv_heads=whole(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim,
        gated_mlp=True,
        norm="rmsnorm",
        bias=flag(cfg, "mlp_bias", False),
        tied_embeddings=flag(cfg, "tie_word_embeddings", False),
        experts=experts,
        experts_per_token=whole(cfg, "num_experts_per_tok", default=min(2, experts))
        if experts > 1
        else 1,
        dropout=fraction(cfg, "attention_dropout") and 0.0,
    )


def spec_from_params(params: float, vocab: int = 32000) -> TransformerSpec:
    """A GPT-style decoder of exactly ``params`` parameters, for activations from a bare count.

    Uses the aspect ratio of the GPT-3 and Llama families (hidden = 128 × layers,
    head dimension 128), the largest such shape with untied embeddings that fits in
    ``params``; the parameters left over are carried as an unassigned block group.
    """
    if not 1 <= params <= MAX_PARAMS:  # NaN and infinity included
        raise BudgetError("--params", f"parameter count must be between 1 and "
                                      f"{bound_text(MAX_PARAMS)}, not {params:g}.")
    total = round(params)

    def shape_params(layers: int) -> int:
        h = 128 * layers
        return 12 * layers * h * h + 2 * vocab * h

    # the largest layer count that fits: the cube root, then a few steps to the exact one
    layers = max(1, int((total / (12 * 128 * 128)) ** (1 / 3)))
    for _ in range(64):
        if layers > 1 and shape_params(layers) > total:
            layers -= 1
        elif shape_params(layers + 1) <= total:
            layers += 1
        else:
            break
    name = f"{format_count(total)} params"
    if shape_params(1) > total:  # tiny models: a single narrow layer
        spec = TransformerSpec(name, 1, 64, 1, 0, bias=False, approx_params=True)
        if spec.params > total:  # smaller than any shape: the count alone
            return TransformerSpec(name, 1, 64, 1, 0, bias=False, approx_params=True,
                                   extra_params=total, count_only=True)
    else:
        spec = TransformerSpec(
            name,
            layers,
            128 * layers,
            layers,
            vocab,
            bias=False,
            tied_embeddings=False,
            approx_params=True,
        )
    return TransformerSpec(**{**spec.__dict__, "extra_params": max(0, total - spec.params)})
