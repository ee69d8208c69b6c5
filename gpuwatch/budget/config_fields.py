"""Reading one ``config.json`` field: typed, bounded, and named in every error.

Every reader raises :class:`BudgetError` on ``--config`` with a sentence that names the
field and what is wrong with it; nothing here guesses a value that is present but bad.
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
    MAX_VOCAB,
    bound_text,
)
from gpuwatch.budget.errors import BudgetError
from gpuwatch.core.units import shown

FIELD = "--config"

# the most each kind of config.json field may hold (see gpuwatch.budget.bounds)
LIMITS: dict[str, int] = {
    **dict.fromkeys(("n_layer", "num_hidden_layers", "num_layers", "num_decoder_layers",
                     "n_layers", "first_k_dense_replace", "decoder_sparse_step"), MAX_LAYERS),
    **dict.fromkeys(("n_embd", "n_embed", "hidden_size", "d_model", "word_embed_proj_dim",
                     "q_lora_rank", "kv_lora_rank"), MAX_HIDDEN),
    **dict.fromkeys(("n_head", "n_heads", "num_attention_heads", "num_heads",
                     "num_key_value_heads", "num_kv_heads", "head_dim", "d_kv",
                     "relative_attention_num_buckets", "qk_nope_head_dim", "qk_rope_head_dim",
                     "v_head_dim"), MAX_HEADS),
    **dict.fromkeys(("n_inner", "intermediate_size", "d_ff", "moe_intermediate_size",
                     "ffn_dim", "ffn_hidden_size", "shared_expert_intermediate_size"), MAX_FFN),
    **dict.fromkeys(("vocab_size", "n_positions", "n_ctx", "max_position_embeddings",
                     "type_vocab_size", "max_seq_len"), MAX_VOCAB),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts",
                     "num_experts_per_tok", "n_shared_experts"), MAX_EXPERTS),
    "image_size": MAX_IMAGE,
    "patch_size": MAX_IMAGE,
    "num_channels": MAX_CHANNELS,
    "expansion_ratio": 1024,
}
# fields that must be at least 1 when present (a zero would divide by zero or mean nothing)
POSITIVE = {"n_layer", "n_layers", "num_hidden_layers", "num_layers", "n_embd", "n_embed",
            "hidden_size", "d_model", "n_head", "n_heads", "num_attention_heads", "num_heads",
            "num_key_value_heads", "num_kv_heads", "intermediate_size", "d_ff", "ffn_dim",
            "image_size", "patch_size", "num_channels", "num_local_experts", "num_experts",
            "n_routed_experts", "num_experts_per_tok", "d_kv", "word_embed_proj_dim",
            "expansion_ratio", "decoder_sparse_step", "kv_lora_rank", "v_head_dim"}


def number(cfg: dict[str, Any], *names: str, default: Any = None, required: bool = True) -> Any:
    """The first of ``names`` present (not null) in ``cfg``; refused if not a number."""
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


def whole(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
    """A whole number within the field's bounds (``LIMITS``, ``POSITIVE``)."""
    value = number(cfg, *names, default=default)
    name = next((n for n in names if cfg.get(n) is not None), names[0])
    low = 1 if name in POSITIVE else 0
    high = LIMITS.get(name, MAX_VOCAB)
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


def optional_whole(cfg: dict[str, Any], *names: str) -> int:
    """A whole number if one of ``names`` is present (and valid), else 0."""
    return whole(cfg, *names) if any(cfg.get(n) is not None for n in names) else 0


def fraction(cfg: dict[str, Any], *names: str) -> float:
    """A probability in [0, 1) (dropout rates); absent is 0."""
    value = float(number(cfg, *names, default=0.0, required=False))
    if not 0.0 <= value < 1.0:  # NaN included
        name = next((n for n in names if cfg.get(n) is not None), names[0])
        raise BudgetError(
            FIELD, f"config.json field {name!r} should be a fraction in [0, 1), not {value!r}."
        )
    return value


def positive_real(cfg: dict[str, Any], name: str) -> float:
    """A finite positive real (soft-capping limits); absent or null is 0 (none)."""
    if cfg.get(name) is None:
        return 0.0
    value = float(number(cfg, name))
    if not (math.isfinite(value) and 0.0 < value <= 1e6):
        raise BudgetError(FIELD, f"config.json field {name!r} should be a positive number "
                                 f"up to 1e6, not {shown(cfg[name])}.")
    return value


def text(cfg: dict[str, Any], name: str, default: str) -> str:
    value = cfg.get(name, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BudgetError(FIELD, f"config.json field {name!r} should be a string, "
                                 f"not {shown(value)}.")
    return value.lower()


def flag(cfg: dict[str, Any], name: str, default: bool) -> bool:
    value = cfg.get(name, default)
    if not isinstance(value, bool | None):
        raise BudgetError(FIELD, f"config.json field {name!r} should be true or false, "
                                 f"not {shown(value)}.")
    return default if value is None else value


def section(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """A nested object (MPT's ``attn_config``); absent or null is empty."""
    value = cfg.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BudgetError(FIELD, f"config.json field {name!r} should be an object, "
                                 f"not {shown(value)}.")
    return value


def whole_list(cfg: dict[str, Any], name: str, high: int) -> tuple[int, ...]:
    """A list of whole numbers from 0 to ``high`` (Qwen2-MoE's ``mlp_only_layers``)."""
    value = cfg.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_LAYERS or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= high for v in value):
        raise BudgetError(FIELD, f"config.json field {name!r} should be a list of layer "
                                 f"numbers from 0 to {high}, not {shown(value)}.")
    return tuple(value)
