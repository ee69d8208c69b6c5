"""The shapes of the run's models, without torch: Llama-shaped specs, their Hugging Face
``config.json`` (what ``gpuwatch estimate --config`` reads), and the dry run's GPT-2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuwatch.budget import TransformerSpec


def llama(name: str, layers: int, hidden: int, heads: int, kv: int, ffn: int,
          vocab: int = 32000) -> TransformerSpec:
    return TransformerSpec(name, layers, hidden, heads, vocab, ffn=ffn, kv_heads=kv,
                           gated_mlp=True, norm="rmsnorm", bias=False, tied_embeddings=False)


SPECS = {
    # Llama-3.2-1B's body (16 × 2048, 32 heads, 8 kv heads) with a 32k vocabulary: 1.1 B
    "llama-1b": llama("llama-1b", 16, 2048, 32, 8, 8192),
    "llama-300m": llama("llama-300m", 16, 1024, 16, 4, 4096),
    # the dry run's stand-ins: the same code, a few MB
    "llama-tiny": llama("llama-tiny", 2, 128, 4, 2, 352, vocab=1024),
    "llama-mini": llama("llama-mini", 4, 256, 8, 2, 704, vocab=2048),
}


def hf_config(spec: TransformerSpec) -> dict[str, Any]:
    """The Hugging Face ``config.json`` of a Llama-shaped spec."""
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
            "hidden_size": spec.hidden, "intermediate_size": spec.ffn_size,
            "num_hidden_layers": spec.layers, "num_attention_heads": spec.heads,
            "num_key_value_heads": spec.kv, "vocab_size": spec.vocab,
            "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
            "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
            "hidden_act": "silu", "torch_dtype": "bfloat16"}


# the dry run's GPT-2: two narrow layers and a small vocabulary, the same code
GPT2_TINY = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2,
             "n_embd": 128, "n_head": 4, "n_positions": 1024, "vocab_size": 1024}


def write_config(name: str, folder: Path) -> Path:
    path = folder / f"{name}.config.json"
    doc = GPT2_TINY if name == "gpt2-tiny" else hf_config(SPECS[name])
    path.write_text(json.dumps(doc, indent=1))
    return path
