"""A Hugging Face ``config.json`` (already parsed) → :class:`TransformerSpec`.

Reads GPT-2, BERT (and RoBERTa), Llama/Mistral/Qwen2 style decoders with grouped-query
attention, Mixtral-style mixtures of experts, T5 and ViT. Nothing is fetched: the
caller reads the file. Unknown ``model_type`` values are read as Llama-style decoders
when they carry the usual keys, and the note says so.
"""

from __future__ import annotations

import math
from typing import Any

from gpuwatch.budget.bounds import (
    MAX_CHANNELS,
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_IMAGE,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_VOCAB,
    bound_text,
)
from gpuwatch.budget.counts import format_count
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.core.units import shown

FIELD = "--config"

# the most each kind of config.json field may hold (see gpuwatch.budget.bounds)
_LIMITS: dict[str, int] = {
    **dict.fromkeys(("n_layer", "num_hidden_layers", "num_layers", "num_decoder_layers"),
                    MAX_LAYERS),
    **dict.fromkeys(("n_embd", "hidden_size", "d_model"), MAX_HIDDEN),
    **dict.fromkeys(("n_head", "num_attention_heads", "num_heads", "num_key_value_heads",
                     "head_dim", "d_kv", "relative_attention_num_buckets"), MAX_HEADS),
    **dict.fromkeys(("n_inner", "intermediate_size", "d_ff", "moe_intermediate_size"), MAX_FFN),
    **dict.fromkeys(("vocab_size", "n_positions", "n_ctx", "max_position_embeddings",
                     "type_vocab_size"), MAX_VOCAB),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts",
                     "num_experts_per_tok"), MAX_EXPERTS),
    "image_size": MAX_IMAGE,
    "patch_size": MAX_IMAGE,
    "num_channels": MAX_CHANNELS,
}
# fields that must be at least 1 when present (a zero would divide by zero or mean nothing)
_POSITIVE = {"n_layer", "num_hidden_layers", "num_layers", "n_embd", "hidden_size", "d_model",
             "n_head", "num_attention_heads", "num_heads", "num_key_value_heads",
             "intermediate_size", "d_ff", "image_size", "patch_size", "num_channels",
             "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
             "d_kv"}


def _get(cfg: dict[str, Any], *names: str, default: Any = None, required: bool = True) -> Any:
    for name in names:
        if name in cfg and cfg[name] is not None:
            value = cfg[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise BudgetError(
                    FIELD, f"config.json field {name!r} should be a number, not {shown(value)}."
                )
            return value
    if required and default is None:
        raise BudgetError(
            FIELD,
            f"config.json has no {names[0]!r} field"
            + (f" (nor {', '.join(repr(n) for n in names[1:])})" if names[1:] else "")
            + ".",
        )
    return default


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
    value = _get(cfg, *names, default=default)
    name = next((n for n in names if cfg.get(n) is not None), names[0])
    low = 1 if name in _POSITIVE else 0
    high = _LIMITS.get(name, MAX_VOCAB)
    if isinstance(value, float) and not (math.isfinite(value) and value == int(value)):
        raise BudgetError(
            FIELD, f"config.json field {name!r} should be a whole number, not {shown(value)}."
        )
    if not low <= value <= high:
        raise BudgetError(
            FIELD,
            f"config.json field {name!r} should be a whole number from {low} to "
            f"{bound_text(high)}, not {shown(value)}.",
        )
    return int(value)


def _fraction(cfg: dict[str, Any], *names: str) -> float:
    value = float(_get(cfg, *names, default=0.0, required=False))
    if not 0.0 <= value < 1.0:  # NaN included
        name = next((n for n in names if cfg.get(n) is not None), names[0])
        raise BudgetError(
            FIELD, f"config.json field {name!r} should be a fraction in [0, 1), not {value!r}."
        )
    return value


def _text(cfg: dict[str, Any], name: str, default: str) -> str:
    value = cfg.get(name, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BudgetError(FIELD, f"config.json field {name!r} should be a string, "
                                 f"not {shown(value)}.")
    return value.lower()


def _flag(cfg: dict[str, Any], name: str, default: bool) -> bool:
    value = cfg.get(name, default)
    if not isinstance(value, bool | None):
        raise BudgetError(FIELD, f"config.json field {name!r} should be true or false, "
                                 f"not {shown(value)}.")
    return default if value is None else value


def spec_from_hf_config(cfg: Any, name: str = "config") -> TransformerSpec:
    """The spec a ``config.json`` describes; :class:`BudgetError` names what is wrong.

    Every field is bounded (``gpuwatch.budget.bounds``); a shape the fields contradict
    (heads that do not divide the hidden size, a patch larger than the image) is
    refused with the sentence the spec gives, marked as coming from ``config.json``.
    """
    if not isinstance(cfg, dict):
        raise BudgetError(FIELD, "config.json should hold a JSON object of model settings.")
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    try:
        return _spec(cfg, name)
    except BudgetError as e:
        if e.field == FIELD:
            raise
        raise BudgetError(FIELD, f"config.json: {e}") from None


def _spec(cfg: dict[str, Any], name: str) -> TransformerSpec:
    kind = _text(cfg, "model_type", "")
    dropout = _fraction(cfg, "resid_pdrop", "hidden_dropout_prob", "dropout_rate",
                        "hidden_dropout")
    if kind == "gpt2" or "n_embd" in cfg:
        h = _int(cfg, "n_embd")
        return TransformerSpec(
            name,
            _int(cfg, "n_layer"),
            h,
            _int(cfg, "n_head"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "n_inner", default=4 * h) if cfg.get("n_inner") is not None else 4 * h,
            max_positions=_int(cfg, "n_positions", "n_ctx", default=1024),
            dropout=dropout,
            activation=_text(cfg, "activation_function", "gelu_new"),
            fused_qkv=True,
        )
    if kind in ("bert", "roberta", "distilbert", "electra"):
        return TransformerSpec(
            name,
            _int(cfg, "num_hidden_layers"),
            _int(cfg, "hidden_size"),
            _int(cfg, "num_attention_heads"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "intermediate_size"),
            arch="encoder",
            max_positions=_int(cfg, "max_position_embeddings", default=512),
            type_vocab=_int(cfg, "type_vocab_size", default=2),
            mlm_head=True,  # *ForMaskedLM, as the hub's configs name them: no pooler
            dropout=dropout,
        )
    if kind in ("t5", "mt5", "umt5") or ("d_model" in cfg and "num_decoder_layers" in cfg):
        layers = _int(cfg, "num_layers")
        gated = _text(cfg, "feed_forward_proj", "relu").startswith("gated")
        return TransformerSpec(
            name,
            layers,
            _int(cfg, "d_model"),
            _int(cfg, "num_heads"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "d_ff"),
            head_dim=_int(cfg, "d_kv", default=64),
            arch="encoder-decoder",
            decoder_layers=_int(cfg, "num_decoder_layers", default=layers),
            gated_mlp=gated,
            bias=False,
            relative_buckets=_int(cfg, "relative_attention_num_buckets", default=32),
            tied_embeddings=_flag(cfg, "tie_word_embeddings", True),
            norm="rmsnorm",
            dropout=dropout,
        )
    if kind in ("vit", "deit", "dinov2"):
        return TransformerSpec(
            name,
            _int(cfg, "num_hidden_layers"),
            _int(cfg, "hidden_size"),
            _int(cfg, "num_attention_heads"),
            0,
            ffn=_int(cfg, "intermediate_size"),
            arch="vit",
            image=_int(cfg, "image_size", default=224),
            patch=_int(cfg, "patch_size", default=16),
            channels=_int(cfg, "num_channels", default=3),
            classes=1000,
            dropout=dropout,
        )
    # Llama, Mistral, Qwen2, Mixtral, Gemma, Phi-3… : gated MLP, RMSNorm, GQA
    heads = _int(cfg, "num_attention_heads")
    hidden = _int(cfg, "hidden_size")
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=1) or 1
    moe_ffn = _int(cfg, "moe_intermediate_size", default=0) \
        if experts > 1 and cfg.get("moe_intermediate_size") is not None else 0
    head_dim = _int(cfg, "head_dim", default=0) if cfg.get("head_dim") is not None else 0
    if not head_dim and hidden % heads:
        raise BudgetError(
            FIELD, f"config.json: {heads} attention heads do not divide the hidden size {hidden}."
        )
    return TransformerSpec(
        name,
        _int(cfg, "num_hidden_layers"),
        hidden,
        heads,
        _int(cfg, "vocab_size"),
        ffn=moe_ffn or _int(cfg, "intermediate_size"),
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim,
        gated_mlp=True,
        norm="rmsnorm",
        bias=_flag(cfg, "mlp_bias", False),
        tied_embeddings=_flag(cfg, "tie_word_embeddings", False),
        experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=min(2, experts))
        if experts > 1
        else 1,
        dropout=_fraction(cfg, "attention_dropout") and 0.0,
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
