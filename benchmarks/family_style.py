"""Decoder families as Hugging Face transformers runs them, in plain torch, from a config dict.

For ``benchmarks/accuracy_families.py``: each model is built from the same
``config.json`` dictionary the estimator reads, and follows the family's modelling code
op for op where that decides what autograd saves (transformers 5.x): Gemma's fp32
RMSNorm with ``1 + w``, the embedding scaled by √h, Gemma-2's post-norms and tanh
soft-capping, Gemma-3's per-head q/k norms; OPT's learned positions (+2 rows), ReLU and
biased LayerNorms; Phi-2's parallel block on one LayerNorm with ``gelu_new`` and partial
rotary; Phi-3's fused ``qkv_proj`` and ``gate_up_proj``; GPT-NeoX's fused q/k/v and
parallel residual; Falcon's multi-query fused q/k/v on one LayerNorm; BLOOM's embedding
LayerNorm and ALiBi; MPT without biases; StarCoder2's LayerNorm and GELU-tanh MLP;
Qwen2-MoE's routed experts (a balanced routing stands in for the router's choice, which
a fake tensor cannot make) and sigmoid-gated shared expert. The config is read here
independently of gpuwatch's reader.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from hf_style import RMSNorm, as_cuda_autocast, checkpointed, gelu_new, rotate_half
from torch import nn


def plan(cfg: dict) -> SimpleNamespace:
    """The structural facts of a family's config, as its modelling code uses them."""
    if "text_config" in cfg:  # Gemma-3's multimodal wrapper
        cfg = {**cfg["text_config"], "model_type": "gemma3_text"}
    t = cfg["model_type"]
    g = cfg.get
    p = SimpleNamespace(family=t, post_norms=False, qk_norm=False, parallel=False, norms=2,
                        fused_qkv=False, rotary=1.0, qkv_bias=False, o_bias=False,
                        mlp_bias=False, gated=False, fused_gate_up=False, tied=True,
                        head_bias=False, positions=0, offset=0, embed_norm=False,
                        embed_scale=False, attn_cap=None, logit_cap=None, resid_drop=0.0,
                        attn_drop=0.0, embed_drop=0.0, fp32_softmax=True, alibi=False,
                        experts=0, final_norm=True, norm="ln", act="gelu")
    p.V = g("vocab_size")
    if t.startswith("gemma"):
        p.h, p.L, p.heads = g("hidden_size"), g("num_hidden_layers"), g("num_attention_heads")
        p.kv, p.d, p.ffn = g("num_key_value_heads"), g("head_dim", 256), g("intermediate_size")
        p.norm, p.act, p.gated, p.embed_scale = "gemma", "gelu_tanh", True, True
        p.post_norms, p.qk_norm = t != "gemma", t.startswith("gemma3")
        p.attn_cap, p.logit_cap = g("attn_logit_softcapping"), g("final_logit_softcapping")
    elif t == "opt":
        p.h, p.L, p.heads, p.ffn = g("hidden_size"), g("num_hidden_layers"), \
            g("num_attention_heads"), g("ffn_dim")
        p.kv, p.act, p.rotary, p.positions, p.offset = p.heads, "relu", 0.0, \
            g("max_position_embeddings"), 2
        p.qkv_bias = p.o_bias = p.mlp_bias = True
        p.resid_drop, p.fp32_softmax = g("dropout", 0.1), False
    elif t == "phi":
        p.h, p.L, p.heads, p.ffn = g("hidden_size"), g("num_hidden_layers"), \
            g("num_attention_heads"), g("intermediate_size")
        p.kv, p.act, p.parallel, p.norms = p.heads, "gelu_new", True, 1
        p.qkv_bias = p.o_bias = p.mlp_bias = p.head_bias = True
        p.tied, p.rotary, p.resid_drop = False, g("partial_rotary_factor", 0.5), g("resid_pdrop")
    elif t == "phi3":
        p.h, p.L, p.heads, p.ffn = g("hidden_size"), g("num_hidden_layers"), \
            g("num_attention_heads"), g("intermediate_size")
        p.kv, p.norm, p.act, p.gated = g("num_key_value_heads"), "rms", "silu", True
        p.fused_qkv = p.fused_gate_up = True
        p.tied = g("tie_word_embeddings", False)
    elif t == "gpt_neox":
        p.h, p.L, p.heads, p.ffn = g("hidden_size"), g("num_hidden_layers"), \
            g("num_attention_heads"), g("intermediate_size")
        p.kv, p.fused_qkv, p.parallel, p.rotary, p.tied = p.heads, True, True, \
            g("rotary_pct", 0.25), False
        p.qkv_bias = p.o_bias = p.mlp_bias = True
    elif t == "falcon":
        p.h, p.L, p.heads = g("hidden_size"), g("num_hidden_layers"), g("num_attention_heads")
        p.kv, p.ffn, p.fused_qkv, p.parallel, p.norms = 1, 4 * p.h, True, True, 1
    elif t == "bloom":
        p.h, p.L, p.heads = g("n_embed"), g("n_layer"), g("num_attention_heads")
        p.kv, p.ffn, p.fused_qkv, p.rotary, p.alibi, p.embed_norm = p.heads, 4 * p.h, True, \
            0.0, True, True
        p.qkv_bias = p.o_bias = p.mlp_bias = True
    elif t == "mpt":
        p.h, p.L, p.heads = g("d_model"), g("n_layers"), g("n_heads")
        p.kv, p.ffn, p.fused_qkv, p.rotary, p.alibi = p.heads, g("expansion_ratio") * p.h, \
            True, 0.0, True
        p.norm = "ln_nobias"
    elif t == "starcoder2":
        p.h, p.L, p.heads, p.ffn = g("hidden_size"), g("num_hidden_layers"), \
            g("num_attention_heads"), g("intermediate_size")
        p.kv, p.act = g("num_key_value_heads"), "gelu_tanh"
        p.qkv_bias = p.o_bias = p.mlp_bias = True
    elif t == "qwen2_moe":
        p.h, p.L, p.heads = g("hidden_size"), g("num_hidden_layers"), g("num_attention_heads")
        p.kv, p.norm, p.act, p.gated, p.qkv_bias, p.tied = g("num_key_value_heads"), "rms", \
            "silu", True, True, False
        p.experts, p.top_k, p.ffn = g("num_experts"), g("num_experts_per_tok"), \
            g("moe_intermediate_size")
        p.shared_ffn = g("shared_expert_intermediate_size")
    else:
        raise ValueError(t)
    p.d = getattr(p, "d", None) or p.h // p.heads
    return p


class GemmaRMSNorm(nn.Module):
    def __init__(self, h: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.zeros(h)), eps

    def forward(self, x):
        out = x.float()
        out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + self.eps)
        out = out * (1.0 + self.weight.float())
        return out.type_as(x)


class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(as_cuda_autocast(x))


def make_norm(p, width: int) -> nn.Module:
    if p.norm == "gemma":
        return GemmaRMSNorm(width)
    if p.norm == "rms":
        return RMSNorm(width)
    return LayerNorm(width, bias=p.norm != "ln_nobias")


ACTS = {"gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_new": gelu_new, "relu": F.relu, "silu": F.silu}


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def eager(p, q, k, v, training):
    """eager_attention_forward with a family's soft-capping, ALiBi and softmax dtype."""
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        b, kv, s, d = k.shape
        k = k[:, :, None].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)
        v = v[:, :, None].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)
    w = torch.matmul(q, k.transpose(2, 3)) * (q.shape[-1] ** -0.5)
    if p.attn_cap:
        w = torch.tanh(w / p.attn_cap) * p.attn_cap
    t = q.shape[2]
    bias = torch.full((t, t), torch.finfo(w.dtype).min, dtype=w.dtype).triu(1)
    if p.alibi:
        bias = bias + torch.arange(t, dtype=w.dtype)[None, :] * -0.01
    w = w + bias[None, None]
    if p.fp32_softmax:
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    else:
        w = F.softmax(as_cuda_autocast(w), dim=-1).type(v.dtype)
    w = F.dropout(w, p=p.attn_drop, training=training)
    return torch.matmul(w, v)


class Attention(nn.Module):
    def __init__(self, p, impl: str):
        super().__init__()
        self.p, self.impl = p, impl
        hq, hkv = p.heads * p.d, p.kv * p.d
        if p.fused_qkv:
            self.qkv_proj = nn.Linear(p.h, hq + 2 * hkv, bias=p.qkv_bias)
        else:
            self.q_proj = nn.Linear(p.h, hq, bias=p.qkv_bias)
            self.k_proj = nn.Linear(p.h, hkv, bias=p.qkv_bias)
            self.v_proj = nn.Linear(p.h, hkv, bias=p.qkv_bias)
        self.o_proj = nn.Linear(hq, p.h, bias=p.o_bias)
        if p.qk_norm:
            self.q_norm, self.k_norm = make_norm(p, p.d), make_norm(p, p.d)

    def forward(self, x, rot):
        p, (b, t, _) = self.p, x.shape
        hq, hkv = p.heads * p.d, p.kv * p.d
        if p.fused_qkv:
            q, k, v = self.qkv_proj(x).split((hq, hkv, hkv), dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q, k, v = q.view(b, t, -1, p.d), k.view(b, t, -1, p.d), v.view(b, t, -1, p.d)
        if p.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if p.rotary:
            n = int(p.d * p.rotary)
            cos, sin = rot[0][..., :n], rot[1][..., :n]
            if n < p.d:  # partial rotary: rotate the first n dimensions, pass the rest
                q = torch.cat((rope(q[..., :n], cos, sin), q[..., n:]), dim=-1)
                k = torch.cat((rope(k[..., :n], cos, sin), k[..., n:]), dim=-1)
            else:
                q, k = rope(q, cos, sin), rope(k, cos, sin)
        if self.impl == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                 enable_gqa=p.kv < p.heads)
        else:
            out = eager(p, q, k, v, self.training)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1).contiguous())


class MLP(nn.Module):
    def __init__(self, p, ffn: int):
        super().__init__()
        self.p, self.act = p, ACTS[p.act]
        if p.gated and p.fused_gate_up:
            self.gate_up_proj = nn.Linear(p.h, 2 * ffn, bias=False)
        elif p.gated:
            self.gate_proj = nn.Linear(p.h, ffn, bias=p.mlp_bias)
            self.up_proj = nn.Linear(p.h, ffn, bias=p.mlp_bias)
        else:
            self.up_proj = nn.Linear(p.h, ffn, bias=p.mlp_bias)
        self.down_proj = nn.Linear(ffn, p.h, bias=p.mlp_bias)

    def forward(self, x):
        if self.p.gated and self.p.fused_gate_up:  # Phi3MLP
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
            return self.down_proj(up * self.act(gate))
        if self.p.gated:
            return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))
        return self.down_proj(self.act(self.up_proj(x)))


class MoE(nn.Module):
    """Qwen2MoeSparseMoeBlock with a balanced routing (each expert gets t·k/E tokens)."""

    def __init__(self, p):
        super().__init__()
        self.p = p
        self.gate = nn.Linear(p.h, p.experts, bias=False)
        self.experts = nn.ModuleList(MLP(p, p.ffn) for _ in range(p.experts))
        self.shared_expert = MLP(p, p.shared_ffn)
        self.shared_expert_gate = nn.Linear(p.h, 1, bias=False)

    def forward(self, x):
        p, (b, t, h) = self.p, x.shape
        flat = x.view(-1, h)
        n = flat.shape[0]
        routing = F.softmax(self.gate(flat), dim=1, dtype=torch.float)
        weights, _ = torch.topk(routing, p.top_k, dim=-1)
        weights = weights.to(flat.dtype)
        out = torch.zeros((n, h), dtype=flat.dtype)
        per = n * p.top_k // p.experts
        for e, expert in enumerate(self.experts):
            idx = (torch.arange(per) * p.experts // p.top_k + e) % n
            slot = torch.full((per,), e % p.top_k, dtype=torch.long)
            y = expert(flat[idx]) * weights[idx, slot, None]
            out = out.index_add(0, idx, y.to(flat.dtype))
        shared = self.shared_expert(flat)
        shared = torch.sigmoid(self.shared_expert_gate(flat)) * shared
        return (out + shared).view(b, t, h)


class Block(nn.Module):
    def __init__(self, p, impl: str):
        super().__init__()
        self.p = p
        self.input_layernorm = make_norm(p, p.h)
        if p.norms == 2:
            self.post_attention_layernorm = make_norm(p, p.h)
        self.self_attn = Attention(p, impl)
        self.mlp = MoE(p) if p.experts else MLP(p, p.ffn)
        if p.post_norms:
            self.post_attn_norm, self.post_ff_norm = make_norm(p, p.h), make_norm(p, p.h)

    def forward(self, x, rot):
        p, drop = self.p, lambda y: F.dropout(y, p.resid_drop, self.training)
        if p.parallel:
            hn = self.input_layernorm(x)
            a = self.self_attn(hn, rot)
            m = self.mlp(self.post_attention_layernorm(x) if p.norms == 2 else hn)
            return drop(a) + drop(m) + x
        a = self.self_attn(self.input_layernorm(x), rot)
        if p.post_norms:
            a = self.post_attn_norm(a)
        x = x + drop(a)
        m = self.mlp(self.post_attention_layernorm(x))
        if p.post_norms:
            m = self.post_ff_norm(m)
        return x + drop(m)


class FamilyLM(nn.Module):
    """``body(ids)`` / ``head(hidden)`` for ``hf_style.CausalLM``."""

    gc = False

    def __init__(self, cfg: dict, impl: str = "sdpa"):
        super().__init__()
        p = self.p = plan(cfg)
        self.embed_tokens = nn.Embedding(p.V, p.h)
        if p.positions:
            self.embed_positions = nn.Embedding(p.positions + p.offset, p.h)
        if p.embed_norm:
            self.embed_norm = make_norm(p, p.h)
        self.layers = nn.ModuleList(Block(p, impl) for _ in range(p.L))
        self.norm = make_norm(p, p.h)
        self.lm_head = None if p.tied else nn.Linear(p.h, p.V, bias=p.head_bias)

    def body(self, ids, cache=None):
        p, t = self.p, ids.shape[1]
        x = self.embed_tokens(ids)
        if p.embed_scale:
            x = x * torch.tensor(p.h**0.5, dtype=x.dtype)
        if p.positions:
            x = x + self.embed_positions(torch.arange(t) + p.offset)
        if p.embed_norm:
            x = self.embed_norm(x)
        inv = 1.0 / (10000 ** (torch.arange(0, p.d, 2).float() / p.d))
        emb = torch.outer(torch.arange(t).float(), inv)
        emb = torch.cat((emb, emb), dim=-1)
        rot = (emb.cos().to(x.dtype)[None, None], emb.sin().to(x.dtype)[None, None])
        for blk in self.layers:
            x = checkpointed(blk, x, rot) if self.training and self.gc else blk(x, rot)
        return self.norm(x)

    def head(self, x):
        p = self.p
        logits = self.lm_head(x) if self.lm_head is not None else F.linear(
            x, self.embed_tokens.weight)
        if p.logit_cap:
            logits = torch.tanh(logits / p.logit_cap) * p.logit_cap
        return logits

