"""Cross-check: real Hugging Face transformers models, traced, against the estimator.

``benchmarks/accuracy.py`` builds HF-style models in plain torch so that it runs with
torch alone; this script traces the real ``transformers`` classes (GPT-2, Llama, Qwen2,
BERT) the same way (``FakeTensorMode`` + ``MemTracker``, two steps of Trainer's loop,
or a prefill with ``logits_to_keep=1``), from the same ``config.json`` the estimator
reads (``spec_from_hf_config``), to show that the plain-torch models are faithful. It
compares totals (inference: also activations and the KV cache). LoRA rows use PEFT
(``pip install peft``; skipped without it). Attention dropout is 0
in SDPA rows: CUDA's flash kernel keeps no mask, the CPU kernel would fall back to the
math path. Usage: ``python benchmarks/accuracy_transformers.py [FILTER]``; skips
without transformers (``pip install transformers``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

try:
    import torch
    import transformers as T
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
except ImportError:  # pragma: no cover
    print("skipped: needs torch and transformers (pip install torch transformers)")
    sys.exit(0)

from gpuwatch.budget import Setup, Workload, estimate, spec_from_hf_config

warnings.filterwarnings("ignore")
T.logging.set_verbosity_error()
MIB = 2**20


def _get(snapshot: dict, *names: str) -> int:
    dev = next(iter(snapshot))
    return sum(v for k, v in snapshot[dev].items() if getattr(k, "value", k) in names)


def _infer(model, ids) -> dict[str, int]:
    model.eval()
    mt = MemTracker()
    mt.track_external(model)
    with mt, torch.no_grad():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        last = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        kv = sum(t.untyped_storage().nbytes() for layer in out.past_key_values.layers
                 for t in (layer.keys, layer.values))
        del out, last
    peak = mt.get_tracker_snapshot("peak")
    weights, total = _get(peak, "Parameter", "Buffer"), _get(peak, "Total")
    return {"kv": kv, "activations": total - weights - kv, "total": total}


def _with_lora(model, targets: str | list[str]):
    """PEFT's LoRA (rank 16, fp32 adapters as ``autocast_adapter_dtype`` makes them).

    Fake parameters cannot be swapped by ``Module.to``, so PEFT's moves are skipped (the
    adapters are created in fp32 already); frozen weights become buffers, since
    MemTracker hooks every parameter's gradient.
    """
    import peft

    to = torch.nn.Module.to
    torch.nn.Module.to = lambda self, *args, **kwargs: self
    try:
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=16, lora_alpha=16, target_modules=targets, lora_dropout=0.0))
    finally:
        torch.nn.Module.to = to
    for module in list(model.modules()):
        for name, param in list(module.named_parameters(recurse=False)):
            if not param.requires_grad:
                delattr(module, name)
                module.register_buffer(name, param.detach())
    return model


def _train(model, ids, precision: str) -> dict[str, int]:
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    mt = MemTracker()
    mt.track_external(model, opt)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "amp-bf16")
    with mt:
        for i in range(2):
            with autocast:
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            del loss
            if i == 0:
                mt.reset_mod_stats()
    return {"total": _get(mt.get_tracker_snapshot("peak"), "Total")}


def trace(row: dict[str, Any]) -> dict[str, int]:
    cfg = row["config"](**row["kw"])
    cfg._attn_implementation = row["impl"]
    with FakeTensorMode():
        torch.set_default_dtype(torch.bfloat16 if row["precision"] == "bf16" else torch.float32)
        try:
            model = row["model"](cfg)
        finally:
            torch.set_default_dtype(torch.float32)
        if row.get("lora"):
            model = _with_lora(model, row["lora"])
        if row.get("checkpointing"):
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        ids = torch.randint(0, cfg.vocab_size, (row["batch"], row["seq"]))
        if row.get("infer"):
            return _infer(model, ids)
        return _train(model, ids, row["precision"])


def check(name: str, row: dict[str, Any]) -> float:
    traced = trace(row)
    spec = spec_from_hf_config(row["config"](**row["kw"]).to_dict(), name)
    est = estimate(spec, Workload(mode="infer" if row.get("infer") else "train",
                                  batch=row["batch"], seq=row["seq"]),
                   Setup(precision=row["precision"], flash_attention=row["impl"] == "sdpa",
                         overhead_bytes=0,
                         dropout_mask_bytes=4.0 if row["precision"] == "fp32" else 2.0,
                         checkpointing="full" if row.get("checkpointing") else "none",
                         lora_rank=16 if row.get("lora") else 0,
                         lora_targets=row.get("lora_targets", "q,v")))
    err = 100 * (est.total_bytes - traced["total"]) / traced["total"]
    line = (f"{name:<26}{est.total_bytes / MIB:>11.1f} MiB{traced['total'] / MIB:>11.1f} MiB"
            f"{err:>+8.1f}%")
    if row.get("infer"):
        line += (f"   activations {est.breakdown.activations / MIB:.1f} / "
                 f"{traced['activations'] / MIB:.1f} MiB, KV cache "
                 f"{est.breakdown.kv_cache / MIB:.1f} / {traced['kv'] / MIB:.1f} MiB")
    print(line, flush=True)
    return err


def rows() -> dict[str, dict[str, Any]]:
    gpt2 = {"n_layer": 2, "n_embd": 768, "n_head": 12, "vocab_size": 50257,
            "n_positions": 1024}
    llama = {"num_hidden_layers": 2, "hidden_size": 1024, "num_attention_heads": 16,
             "num_key_value_heads": 4, "intermediate_size": 2816, "vocab_size": 32000,
             "tie_word_embeddings": False}
    qwen = {"num_hidden_layers": 2, "hidden_size": 896, "num_attention_heads": 14,
            "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
            "tie_word_embeddings": True}
    bert = {"num_hidden_layers": 2, "hidden_size": 768, "num_attention_heads": 12,
            "intermediate_size": 3072, "vocab_size": 30522}
    G = {"config": T.GPT2Config, "model": T.GPT2LMHeadModel, "batch": 4, "seq": 512}
    L = {"config": T.LlamaConfig, "model": T.LlamaForCausalLM, "kw": llama, "batch": 2,
         "seq": 1024}
    Q = {"config": T.Qwen2Config, "model": T.Qwen2ForCausalLM, "kw": qwen, "batch": 2,
         "seq": 1024}
    B = {"config": T.BertConfig, "model": T.BertForMaskedLM, "batch": 8, "seq": 256}
    no_attn_dropout = {**gpt2, "attn_pdrop": 0.0}
    return {
        "gpt2 fp32 eager": {**G, "kw": gpt2, "precision": "fp32", "impl": "eager"},
        "gpt2 bf16 eager": {**G, "kw": gpt2, "precision": "bf16", "impl": "eager"},
        "gpt2 fp32 sdpa": {**G, "kw": no_attn_dropout, "precision": "fp32", "impl": "sdpa"},
        "llama fp32 sdpa": {**L, "precision": "fp32", "impl": "sdpa"},
        "llama bf16 sdpa": {**L, "precision": "bf16", "impl": "sdpa"},
        "llama amp-bf16 sdpa": {**L, "precision": "amp-bf16", "impl": "sdpa"},
        "llama bf16 eager": {**L, "precision": "bf16", "impl": "eager"},
        "qwen2 bf16 sdpa": {**Q, "precision": "bf16", "impl": "sdpa"},
        "qwen2 bf16 checkpointing": {**Q, "precision": "bf16", "impl": "sdpa",
                                     "checkpointing": True},
        "llama LoRA q,v bf16": {**L, "precision": "bf16", "impl": "sdpa",
                                "lora": ["q_proj", "v_proj"], "lora_targets": "q,v"},
        "llama LoRA all-linear bf16": {**L, "precision": "bf16", "impl": "sdpa",
                                       "lora": "all-linear", "lora_targets": "all-linear"},
        "bert fp32 eager": {**B, "kw": bert, "precision": "fp32", "impl": "eager"},
        "bert fp32 sdpa": {**B, "kw": {**bert, "attention_probs_dropout_prob": 0.0},
                           "precision": "fp32", "impl": "sdpa"},
        "llama infer sdpa bf16": {**L, "batch": 4, "precision": "bf16", "impl": "sdpa",
                                  "infer": True},
        "llama infer eager bf16": {**L, "batch": 4, "precision": "bf16", "impl": "eager",
                                   "infer": True},
        "gpt2 infer sdpa bf16": {**G, "kw": gpt2, "seq": 1024, "precision": "bf16",
                                 "impl": "sdpa", "infer": True},
    }


def main(argv: list[str]) -> int:
    wanted = argv[1] if len(argv) > 1 else ""
    try:
        import peft  # noqa: F401
    except ImportError:
        print("LoRA rows skipped: pip install peft")
        wanted_rows = {k: v for k, v in rows().items() if "lora" not in v}
    else:
        wanted_rows = rows()
    print(f"torch {torch.__version__}, transformers {T.__version__}; total peak")
    print(f"{'row':<26}{'estimate':>15}{'traced':>15}{'error':>9}")
    worst = max((abs(check(name, row)) for name, row in wanted_rows.items() if wanted in name),
                default=0.0)
    return 0 if worst <= 8 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
