"""Trace the real Hugging Face transformers classes and record the rows as data.

Each row builds one family's model from a config (``AutoConfig.for_model``: real widths,
head counts, vocabularies and ff ratios, two to four layers: every term scales linearly
in layers) inside ``FakeTensorMode`` — no weights, no hub, no real memory — and runs two
steps of Trainer's loop through ``gpuwatch.probe.memtrace_step`` (the code behind
``gpuwatch estimate --trace``): bf16, autocast bf16 or fp32; eager or SDPA attention (as
the config selects it); with or without gradient checkpointing; LoRA through PEFT where
it is installed. The traced bytes per category, the config as ``save_pretrained`` would
write it, the setup and the library versions go to ``tests/budget/data/hf_traced.json``;
``tests/budget/test_hf_traced.py`` compares the estimator with every row (no torch or
transformers needed there) and ``benchmarks/hf_accuracy.py`` prints the table.

SDPA rows run with attention dropout 0: CUDA's fused kernels keep no dropout mask, the
CPU kernel would fall back to the math path and keep one. Rows marked ``held_out`` use
sizes and sequence lengths that were not looked at while fixing the closed forms.

``python benchmarks/hf_traced.py [FILTER]`` (needs torch and transformers; FILTER
retraces only the rows whose name contains it and keeps the others).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

try:
    import torch
    import transformers as T
except ImportError:  # pragma: no cover
    print("skipped: needs torch and transformers (pip install torch transformers)")
    sys.exit(0)

from gpuwatch.probe import memtrace_step
from gpuwatch.probe.memtrace import TraceRequest

warnings.filterwarnings("ignore")
T.logging.set_verbosity_error()
OUT = Path(__file__).resolve().parents[1] / "tests" / "budget" / "data" / "hf_traced.json"
ATTN_DROPOUT = ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob")

# real proportions (the model each is named after), few layers
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama-3.2-1b": ("llama", dict(hidden_size=2048, intermediate_size=8192,
                                   num_attention_heads=32, num_key_value_heads=8,
                                   vocab_size=128256, tie_word_embeddings=True)),
    "mistral-7b": ("mistral", dict(hidden_size=4096, intermediate_size=14336,
                                   num_attention_heads=32, num_key_value_heads=8,
                                   vocab_size=32000)),
    "gpt2": ("gpt2", dict(n_embd=768, n_head=12, vocab_size=50257)),
    "t5-base": ("t5", dict(d_model=768, d_ff=3072, num_heads=12, d_kv=64,
                           vocab_size=32128, decoder_start_token_id=0, pad_token_id=0)),
    "gemma-2b": ("gemma", dict(hidden_size=2048, intermediate_size=16384,
                               num_attention_heads=8, num_key_value_heads=1, head_dim=256,
                               vocab_size=256000)),
    "gemma-2-2b": ("gemma2", dict(hidden_size=2304, intermediate_size=9216,
                                  num_attention_heads=8, num_key_value_heads=4,
                                  head_dim=256, vocab_size=256000)),
    "gemma-3-1b": ("gemma3_text", dict(hidden_size=1152, intermediate_size=6912,
                                       num_attention_heads=4, num_key_value_heads=1,
                                       head_dim=256, vocab_size=262144,
                                       sliding_window=512)),
    "opt-350m": ("opt", dict(hidden_size=1024, ffn_dim=4096, num_attention_heads=16,
                             word_embed_proj_dim=512, do_layer_norm_before=False,
                             vocab_size=50272)),
    "opt-1.3b": ("opt", dict(hidden_size=2048, ffn_dim=8192, num_attention_heads=32,
                             vocab_size=50272)),
    "phi-2": ("phi", dict(hidden_size=2560, intermediate_size=10240,
                          num_attention_heads=32, partial_rotary_factor=0.4,
                          vocab_size=51200)),
    "phi-3-mini": ("phi3", dict(hidden_size=3072, intermediate_size=8192,
                                num_attention_heads=32, num_key_value_heads=32,
                                vocab_size=32064)),
    "pythia-1b": ("gpt_neox", dict(hidden_size=2048, intermediate_size=8192,
                                   num_attention_heads=8, rotary_pct=0.25,
                                   vocab_size=50304)),
    "falcon-7b": ("falcon", dict(hidden_size=4544, num_attention_heads=71,
                                 multi_query=True, parallel_attn=True, bias=False,
                                 vocab_size=65024)),
    "falcon-40b": ("falcon", dict(hidden_size=8192, num_attention_heads=128,
                                  num_kv_heads=8, new_decoder_architecture=True,
                                  parallel_attn=True, bias=False, vocab_size=65024)),
    "bloom-560m": ("bloom", dict(hidden_size=1024, n_head=16, vocab_size=250880)),
    "mpt-7b": ("mpt", dict(d_model=4096, n_heads=32, expansion_ratio=4,
                           vocab_size=50432, no_bias=True)),
    "starcoder2-3b": ("starcoder2", dict(hidden_size=3072, intermediate_size=12288,
                                         num_attention_heads=24, num_key_value_heads=2,
                                         vocab_size=49152)),
    "qwen1.5-moe-a2.7b": ("qwen2_moe", dict(hidden_size=2048, intermediate_size=5632,
                                            moe_intermediate_size=1408,
                                            shared_expert_intermediate_size=5632,
                                            num_experts=60, num_experts_per_tok=4,
                                            num_attention_heads=16, num_key_value_heads=16,
                                            vocab_size=151936)),
    "qwen3-0.6b": ("qwen3", dict(hidden_size=1024, intermediate_size=3072,
                                 num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                                 vocab_size=151936, tie_word_embeddings=True)),
    "deepseek-v2-lite": ("deepseek_v2", dict(hidden_size=2048, intermediate_size=10944,
                                             moe_intermediate_size=1408,
                                             n_routed_experts=64, n_shared_experts=2,
                                             num_experts_per_tok=6, first_k_dense_replace=1,
                                             num_attention_heads=16, num_key_value_heads=16,
                                             kv_lora_rank=512, q_lora_rank=None,
                                             qk_rope_head_dim=64, qk_nope_head_dim=128,
                                             v_head_dim=128, vocab_size=102400)),
    "deepseek-v3": ("deepseek_v3", dict(hidden_size=7168, intermediate_size=18432,
                                        moe_intermediate_size=2048, n_routed_experts=256,
                                        n_shared_experts=1, num_experts_per_tok=8,
                                        n_group=8, topk_group=4, first_k_dense_replace=1,
                                        num_attention_heads=128, num_key_value_heads=128,
                                        q_lora_rank=1536, kv_lora_rank=512,
                                        qk_rope_head_dim=64, qk_nope_head_dim=128,
                                        v_head_dim=128, vocab_size=129280)),
    "qwen3-30b-a3b": ("qwen3_moe", dict(hidden_size=2048, intermediate_size=6144,
                                        moe_intermediate_size=768, num_experts=128,
                                        num_experts_per_tok=8, num_attention_heads=32,
                                        num_key_value_heads=4, head_dim=128,
                                        vocab_size=151936)),
}
# transformers runs routed experts with ``grouped_mm``, whose CPU kernel takes bf16 only:
# MoE rows are bf16 (as MoE models are trained)
MOE = ("qwen2_moe", "deepseek_v2", "deepseek_v3", "qwen3_moe")
# T5's relative position bias reaches SDPA as a float mask beside its attention dropout:
# the CPU runs the math path there (the scores kept, as eager attention keeps them)
EAGER = ("t5",)
LAYERS = {"t5": "num_layers", "gpt2": "n_layer", "bloom": "n_layer", "mpt": "n_layers"}

# (label, precision, attention, checkpointing, lora rank, batch, seq, held out)
SETUPS = [
    ("bf16", "bf16", "sdpa", False, 0, 2, 512, False),
    ("amp-bf16", "amp-bf16", "sdpa", False, 0, 1, 1024, False),
    ("fp32 eager", "fp32", "eager", False, 0, 2, 256, False),
    ("amp-bf16 ckpt", "amp-bf16", "sdpa", True, 0, 1, 1024, False),
    ("bf16 ckpt", "bf16", "sdpa", True, 0, 1, 2048, False),
    ("bf16 lora8", "bf16", "sdpa", False, 8, 1, 2048, False),
    ("bf16 held-out", "bf16", "sdpa", False, 0, 4, 384, True),
    ("amp-bf16 ckpt held-out", "amp-bf16", "sdpa", True, 0, 2, 1536, True),
]


# held out from the fixes of T5's and DeepSeek's checkpointed forms: other sizes, a gated
# T5 v1.1, other batches, sequence lengths and depths
# (name, model, model_type, fields, precision, checkpointing, batch, seq, layers)
_T5 = dict(d_kv=64, vocab_size=32128, decoder_start_token_id=0, pad_token_id=0)
EXTRA = [
    ("t5-small bf16 ckpt held-out", "t5-small", "t5",
     dict(d_model=512, d_ff=2048, num_heads=8, **_T5), "bf16", True, 2, 1024, 3),
    ("t5-large amp-bf16 ckpt held-out", "t5-large", "t5",
     dict(d_model=1024, d_ff=4096, num_heads=16, **_T5), "amp-bf16", True, 1, 768, 2),
    ("flan-t5-base amp-bf16 ckpt held-out", "flan-t5-base", "t5",
     dict(d_model=768, d_ff=2048, num_heads=12, feed_forward_proj="gated-gelu",
          tie_word_embeddings=False, **_T5), "amp-bf16", True, 2, 512, 3),
    ("t5-base bf16 ckpt held-out 2x1024", "t5-base", "t5", MODELS["t5-base"][1], "bf16",
     True, 2, 1024, 2),
    ("t5-base bf16 ckpt held-out 3 layers", "t5-base", "t5", MODELS["t5-base"][1], "bf16",
     True, 1, 1024, 3),
    ("deepseek-v2-lite bf16 ckpt held-out", "deepseek-v2-lite", "deepseek_v2",
     MODELS["deepseek-v2-lite"][1], "bf16", True, 2, 1024, 3),
    ("deepseek-v3 bf16 held-out 768", "deepseek-v3", "deepseek_v3",
     MODELS["deepseek-v3"][1], "bf16", False, 1, 768, 3),
]


def _config(model_type: str, fields: dict[str, Any], layers: int, sdpa: bool):
    kw = dict(fields)
    kw[LAYERS.get(model_type, "num_hidden_layers")] = layers
    if model_type == "t5":
        kw["num_decoder_layers"] = layers
    if sdpa:
        for key in ATTN_DROPOUT:
            kw[key] = 0.0
        if model_type == "mpt":
            kw["attn_config"] = {"attn_pdrop": 0}
    return T.AutoConfig.for_model(model_type, **kw)


def _with_lora(model, rank: int):
    """PEFT's LoRA on q and v (its default targets; adapters in fp32, as PEFT makes them
    beside 16-bit weights); frozen weights become buffers, since MemTracker hooks every
    parameter's gradient. A fake parameter cannot be swapped by ``Module.to``, so PEFT's
    moves are skipped and its fp32 cast of the adapters is made here."""
    import peft

    to = torch.nn.Module.to
    torch.nn.Module.to = lambda self, *args, **kwargs: self
    try:
        wrapped = peft.get_peft_model(model, peft.LoraConfig(r=rank, lora_alpha=16,
                                                             lora_dropout=0.0))
    finally:
        torch.nn.Module.to = to
    for module in list(wrapped.modules()):
        for name, param in list(module.named_parameters(recurse=False)):
            if param.requires_grad and param.dtype != torch.float32:
                setattr(module, name, torch.nn.Parameter(param.detach().float()))
    inner = wrapped.base_model.model  # the transformers class, LoRA layers injected
    for module in list(inner.modules()):
        for name, param in list(module.named_parameters(recurse=False)):
            if not param.requires_grad:
                delattr(module, name)
                module.register_buffer(name, param.detach())
    return inner


def _builder(model_type: str, cfg, impl: str, ckpt: bool, lora: int, used: dict):
    def build():
        auto = T.AutoModelForSeq2SeqLM if model_type == "t5" else T.AutoModelForCausalLM
        try:
            model = auto.from_config(cfg, attn_implementation=impl)
        except ValueError:  # the family has no SDPA path (ALiBi): eager it is
            model = auto.from_config(cfg, attn_implementation="eager")
        used["attn_implementation"] = model.config._attn_implementation
        used["experts_implementation"] = getattr(model.config, "_experts_implementation",
                                                 None)
        if ckpt:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        return _with_lora(model, lora) if lora else model
    return build


def rows() -> list[dict[str, Any]]:
    out = []
    for model, (model_type, fields) in MODELS.items():
        for label, precision, impl, ckpt, lora, batch, seq, held in SETUPS:
            if lora and model_type not in ("llama", "mistral", "qwen3", "gemma"):
                continue
            if model_type in MOE and precision != "bf16":  # see MOE
                continue
            layers = 3 if held else 2
            if model_type in EAGER:
                impl = "eager"
            out.append(dict(name=f"{model} {label}", model=model, model_type=model_type,
                            fields=fields, layers=layers, precision=precision, impl=impl,
                            checkpointing=ckpt, lora_rank=lora, batch=batch, seq=seq,
                            held_out=held))
    for name, model, model_type, fields, precision, ckpt, batch, seq, layers in EXTRA:
        out.append(dict(name=name, model=model, model_type=model_type, fields=fields,
                        layers=layers, precision=precision,
                        impl="eager" if model_type in EAGER else "sdpa", checkpointing=ckpt,
                        lora_rank=0, batch=batch, seq=seq, held_out=True))
    return out


def trace_row(row: dict[str, Any]) -> dict[str, Any]:
    cfg = _config(row["model_type"], row["fields"], row["layers"], row["impl"] == "sdpa")
    used: dict[str, Any] = {}
    build = _builder(row["model_type"], cfg, row["impl"], row["checkpointing"],
                     row["lora_rank"], used)
    t0 = time.perf_counter()
    traced = memtrace_step.run(build, TraceRequest(
        "transformers", "train", row["batch"], row["seq"], precision=row["precision"]))
    return {
        "name": row["name"], "held_out": row["held_out"],
        "config": cfg.to_diff_dict(),
        "setup": {"precision": row["precision"], "batch": row["batch"], "seq": row["seq"],
                  "attn_implementation": used["attn_implementation"],
                  "experts_implementation": used["experts_implementation"],
                  "checkpointing": "full" if row["checkpointing"] else "none",
                  "lora_rank": row["lora_rank"], "lora_targets": "q,v",
                  "optimizer": "adamw"},
        "traced_bytes": traced, "trace_s": round(time.perf_counter() - t0, 2),
    }


def main(argv: list[str]) -> int:
    wanted = argv[1] if len(argv) > 1 else ""
    try:
        import peft
        peft_version = peft.__version__
    except ImportError:
        peft_version = None
    old = {r["name"]: r for r in json.loads(OUT.read_text())["rows"]} \
        if wanted and OUT.exists() else {}
    t0, done = time.perf_counter(), []
    for row in rows():
        if wanted not in row["name"] or (row["lora_rank"] and peft_version is None):
            if row["name"] in old:
                done.append(old[row["name"]])
            continue
        try:
            rec = trace_row(row)
        except Exception as e:  # a family this transformers cannot build: say so, go on
            print(f"{row['name']:<40} failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        done.append(rec)
        t = rec["traced_bytes"]
        print(f"{row['name']:<40}{t['total'] / 2**20:>10.1f} MiB  "
              f"{rec['setup']['attn_implementation']:<6}{rec['trace_s']:>6.1f} s", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema": "gpuwatch.hf_traced/1", "torch_version": str(torch.__version__),
           "transformers_version": T.__version__, "peft_version": peft_version,
           "regenerate": "python benchmarks/hf_traced.py", "rows": done}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"{len(done)} rows -> {OUT}; {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
