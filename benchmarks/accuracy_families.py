"""The estimator against traced steps of each decoder family, read from its config.json.

Each row's config dictionary is what the family's ``config.json`` holds (small: two
layers, short sequences; every term scales linearly in layers and batch); the estimator
reads it with ``spec_from_hf_config`` and ``benchmarks/family_style.py`` builds the model
from the same dictionary, op for op as Hugging Face transformers runs the family. Both
are compared per category as in ``benchmarks/accuracy.py`` (same tracing, same targets:
total ±8 %, each category over 5 % of the total ±10 %). A config the estimator refuses
counts as a miss. ``python benchmarks/accuracy_families.py [FILTER]``; skips without torch.
"""

from __future__ import annotations

import sys
import time

try:
    import torch
except ImportError:  # pragma: no cover
    print("family accuracy benchmark skipped: PyTorch is not installed (pip install torch)")
    sys.exit(0)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from accuracy import TARGET, Case, compare
from family_style import FamilyLM

from gpuwatch.budget import BudgetError, spec_from_hf_config
from gpuwatch.core.units import format_bytes

V = 32000
CONFIGS: dict[str, dict] = {
    "gemma": dict(model_type="gemma", hidden_size=1024, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=1, head_dim=128,
                  intermediate_size=4096, vocab_size=V),
    "gemma2": dict(model_type="gemma2", hidden_size=1024, num_hidden_layers=2,
                   num_attention_heads=8, num_key_value_heads=4, head_dim=128,
                   intermediate_size=4096, vocab_size=V, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0),
    "gemma3": dict(model_type="gemma3", text_config=dict(
        hidden_size=1024, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
        head_dim=256, intermediate_size=4096, vocab_size=V)),
    "opt": dict(model_type="opt", hidden_size=1024, num_hidden_layers=2,
                num_attention_heads=16, ffn_dim=4096, vocab_size=V,
                max_position_embeddings=2048, word_embed_proj_dim=1024, dropout=0.1),
    "phi": dict(model_type="phi", hidden_size=1024, num_hidden_layers=2,
                num_attention_heads=16, intermediate_size=4096, vocab_size=V,
                partial_rotary_factor=0.4, resid_pdrop=0.1),
    "phi3": dict(model_type="phi3", hidden_size=1024, num_hidden_layers=2,
                 num_attention_heads=16, num_key_value_heads=16, intermediate_size=2816,
                 vocab_size=V),
    "gpt_neox": dict(model_type="gpt_neox", hidden_size=1024, num_hidden_layers=2,
                     num_attention_heads=8, intermediate_size=4096, vocab_size=V,
                     rotary_pct=0.25),
    "falcon": dict(model_type="falcon", hidden_size=1024, num_hidden_layers=2,
                   num_attention_heads=16, multi_query=True, parallel_attn=True, bias=False,
                   vocab_size=V),
    "bloom": dict(model_type="bloom", n_embed=1024, n_layer=2, num_attention_heads=16,
                  vocab_size=V),
    "mpt": dict(model_type="mpt", d_model=1024, n_heads=16, n_layers=2, expansion_ratio=4,
                vocab_size=V, no_bias=True, attn_config={"alibi": True}),
    "starcoder2": dict(model_type="starcoder2", hidden_size=1024, num_hidden_layers=2,
                       num_attention_heads=16, num_key_value_heads=4,
                       intermediate_size=4096, vocab_size=V),
    "qwen2_moe": dict(model_type="qwen2_moe", hidden_size=512, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=8, intermediate_size=1408,
                      moe_intermediate_size=352, shared_expert_intermediate_size=1408,
                      num_experts=8, num_experts_per_tok=2, vocab_size=V),
}
EAGER_ONLY = {"bloom", "mpt"}  # ALiBi: Hugging Face's code has no fused attention for them


def rows() -> list[tuple[str, dict, dict]]:
    """(row name, config, Case options): bf16 and autocast for every family, fp32 for OPT."""
    out = []
    for fam, cfg in CONFIGS.items():
        flash = fam not in EAGER_ONLY
        for prec in ("bf16", "amp-bf16") + (("fp32",) if fam == "opt" else ()):
            out.append((f"{fam} {prec}", cfg, dict(batch=2, seq=512, precision=prec,
                                                   flash=flash)))
    out.append(("gemma2 bf16 eager", CONFIGS["gemma2"],
                dict(batch=2, seq=512, precision="bf16", flash=False)))
    out.append(("phi3 amp-bf16 checkpointing", CONFIGS["phi3"],
                dict(batch=2, seq=512, precision="amp-bf16", checkpointing="full", flash=True)))
    return out


def main(argv: list[str]) -> int:
    wanted = argv[1] if len(argv) > 1 else ""
    print(f"torch {torch.__version__}; families read from config dicts; targets: total "
          f"±{TARGET['total']:g} %, each category ±{TARGET['parameters']:g} %")
    print(f"{'row':<30}{'category':<18}{'estimate':>12}{'traced':>12}{'error':>9}")
    t0, good_rows, n = time.perf_counter(), 0, 0
    for name, cfg, opts in rows():
        if wanted not in name:
            continue
        n += 1
        try:
            spec = spec_from_hf_config(cfg, name.split()[0])
        except BudgetError as e:
            print(f"{name:<30}refused: {e}", flush=True)
            continue
        impl = "sdpa" if opts["flash"] else "eager"
        case = Case(name, spec, lambda cfg=cfg, impl=impl: FamilyLM(cfg, impl), **opts)
        results = compare(case)
        total = next(t for _, c, _, t, _ in results if c == "total")
        ok = True
        for _, cat, p, t, err in results:
            minor = cat != "total" and t < 0.05 * total  # under 5 % of the total
            good = abs(err) <= TARGET[cat] or minor or abs(p - t) < 1 << 20
            ok &= good
            print(f"{name:<30}{cat:<18}{format_bytes(p, digits=2):>12}"
                  f"{format_bytes(t, digits=2):>12}{err:>+8.1f}%{'' if good else '  OUTSIDE'}",
                  flush=True)
        good_rows += ok
    print(f"{good_rows} of {n} rows within target; {time.perf_counter() - t0:.0f} s")
    return 0 if good_rows == n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
