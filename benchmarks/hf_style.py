"""Hugging Face transformers' models, op for op, in plain torch (for benchmarks/accuracy.py).

Each class follows what transformers 5.x runs, since that decides what autograd saves:
GPT-2 (Conv1D projections via ``addmm``, ``gelu_new`` written out, eager attention that
divides, masks, softmaxes and casts back to the value dtype), Llama / Qwen2 (RMSNorm
that upcasts to fp32 and casts back before the weight, rotary embeddings, SiLU-gated
MLP, ``repeat_kv`` for eager attention, SDPA with ``enable_gqa``), and BERT for masked
LM (post-LN, no pooler). Attention is ``eager`` (fp32 softmax, dropout on the
probabilities) or ``sdpa`` (``is_causal`` without a mask, q/k/v passed as transposed
views so the kernel's output is already laid out for the output projection, as on CUDA).
The loss is HF's: causal LMs upcast the logits to fp32 and shift the labels.
LoRA adapters follow PEFT (``lora_B(lora_A(x)) * scaling`` beside a frozen base).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from gpuwatch.budget import TransformerSpec


class Conv1D(nn.Module):
    """GPT-2's projection: ``addmm(bias, x, weight)`` with the weight stored in × out."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        shape = (*x.shape[:-1], self.weight.shape[1])
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(shape)


def gelu_new(x):
    """transformers' NewGELUActivation, op for op."""
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3.0))))


class RMSNorm(nn.Module):
    def __init__(self, h: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def as_cuda_autocast(x):
    """CUDA's autocast runs softmax and layer_norm in fp32; the CPU's leaves them in bf16.
    The traces follow CUDA: the input is upcast where CUDA's autocast would."""
    return x.float() if torch.is_autocast_enabled("cpu") else x


class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(as_cuda_autocast(x))


def cache_update(cache, k, v):
    """DynamicCache.update on the first call: ``cat`` onto an empty tensor, a copy."""
    k, v = torch.cat((k[:, :, :0], k), dim=-2), torch.cat((v[:, :, :0], v), dim=-2)
    cache.append((k, v))
    return k, v


def attend(q, k, v, impl: str, causal: bool, dropout: float, training: bool, groups: int = 1,
           fp32_softmax: bool = False):
    """HF's eager_attention_forward / sdpa_attention_forward on (b, heads, s, d) tensors.

    Llama-family eager attention softmaxes in fp32 (``dtype=torch.float32``) and casts
    back; GPT-2 and BERT softmax in the scores' dtype (fp32 under autocast) and cast back.
    """
    scale = q.shape[-1] ** -0.5
    if impl == "sdpa":
        # CUDA's flash kernel regenerates its dropout mask in backward (no memory);
        # the CPU kernel has no dropout and would fall back to the math path
        out = F.scaled_dot_product_attention(
            q, k, v, dropout_p=0.0, is_causal=causal and q.shape[2] > 1,
            scale=scale, enable_gqa=groups > 1,
        )
        return out.transpose(1, 2).contiguous()
    if groups > 1:  # repeat_kv
        b, kv, s, d = k.shape
        k = k[:, :, None].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)
        v = v[:, :, None].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)
    w = torch.matmul(q, k.transpose(2, 3)) * scale
    if causal and q.shape[2] > 1:
        t, m = q.shape[2], k.shape[2]
        mask = torch.full((t, m), torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        w = w + mask.triu(m - t + 1)[None, None]
    if fp32_softmax:
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    else:
        w = F.softmax(as_cuda_autocast(w), dim=-1).type(v.dtype)
    w = F.dropout(w, p=dropout, training=training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


class LoRAPart(nn.Linear):
    """An adapter matrix (trained)."""


class LoRALinear(nn.Module):
    """PEFT's Linear: the frozen base plus ``B(A(x)) · alpha/r`` (lora_dropout 0: identity).

    PEFT keeps adapters of a 16-bit base in fp32 (``autocast_adapter_dtype=True``), casts
    the input to their dtype and the sum back to the base's.
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: int = 16):
        super().__init__()
        self.base = base
        self.lora_A = LoRAPart(base.in_features, rank, bias=False, dtype=torch.float32)
        self.lora_B = LoRAPart(rank, base.out_features, bias=False, dtype=torch.float32)
        self.scaling = alpha / rank

    def forward(self, x):
        result = self.base(x)
        dtype = result.dtype
        result = result + self.lora_B(self.lora_A(x.to(self.lora_A.weight.dtype))) * self.scaling
        return result.to(dtype)


def add_lora(model: nn.Module, targets: set[str], rank: int) -> nn.Module:
    """Freeze everything, then put adapters on the projections named in ``targets``.

    Frozen weights become buffers (same memory): MemTracker hooks every parameter's
    gradient, which a frozen one cannot have.
    """
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and name.removesuffix("_proj") in targets:
                setattr(module, name, LoRALinear(child, rank))
    for module in list(model.modules()):
        for name, p in list(module.named_parameters(recurse=False)):
            if not name.startswith("lora_") and not isinstance(module, LoRAPart):
                delattr(module, name)
                module.register_buffer(name, p.detach())
    return model


# ---------------------------------------------------------------- GPT-2
class GPT2Block(nn.Module):
    def __init__(self, s: TransformerSpec, impl: str):
        super().__init__()
        h, self.s, self.impl = s.hidden, s, impl
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = Conv1D(h, 3 * h), Conv1D(h, h)
        self.c_fc, self.mlp_proj = Conv1D(h, s.ffn_size), Conv1D(s.ffn_size, h)

    def attn(self, hidden, cache):
        s, (b, t, h) = self.s, hidden.shape
        query, key, value = self.c_attn(hidden).split(h, dim=2)
        query, key, value = (z.view(b, t, s.heads, s.d).transpose(1, 2)
                             for z in (query, key, value))
        if cache is not None:
            key, value = cache_update(cache, key, value)
        out = attend(query, key, value, self.impl, True, s.dropout, self.training)
        out = self.c_proj(out.reshape(b, t, h).contiguous())
        return F.dropout(out, s.dropout, self.training)

    def mlp(self, hidden):
        hidden = self.c_fc(hidden)
        hidden = gelu_new(hidden)
        hidden = self.mlp_proj(hidden)
        return F.dropout(hidden, self.s.dropout, self.training)

    def forward(self, hidden_states, cache=None):
        # GPT2Block.forward's names: attn_output stays referenced through the MLP
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output = self.attn(hidden_states, cache)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        return residual + feed_forward_hidden_states


class GPT2LM(nn.Module):
    def __init__(self, s: TransformerSpec, impl: str = "eager"):
        super().__init__()
        self.s = s
        self.wte = nn.Embedding(s.vocab, s.hidden)
        self.wpe = nn.Embedding(s.max_positions, s.hidden)
        self.h = nn.ModuleList(GPT2Block(s, impl) for _ in range(s.layers))
        self.ln_f = nn.LayerNorm(s.hidden)

    def body(self, ids, cache=None):
        inputs_embeds = self.wte(ids)  # GPT2Model.forward keeps it referenced throughout
        x = inputs_embeds + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        x = F.dropout(x, self.s.dropout, self.training)
        for blk in self.h:
            x = checkpointed(blk, x, cache) if self.training and self.gc else blk(x, cache)
        return self.ln_f(x)

    def head(self, x):
        return F.linear(x, self.wte.weight)

    gc = False


# ---------------------------------------------------------------- Llama / Qwen2
class LlamaBlock(nn.Module):
    def __init__(self, s: TransformerSpec, impl: str, qkv_bias: bool):
        super().__init__()
        h, q, kv, f = s.hidden, s.heads * s.d, s.kv * s.d, s.ffn_size
        self.s, self.impl = s, impl
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(h), RMSNorm(h)
        self.q_proj = nn.Linear(h, q, bias=qkv_bias)
        self.k_proj = nn.Linear(h, kv, bias=qkv_bias)
        self.v_proj = nn.Linear(h, kv, bias=qkv_bias)
        self.o_proj = nn.Linear(q, h, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def attn(self, hidden, rope, cache):
        s, (b, t, _) = self.s, hidden.shape
        query = self.q_proj(hidden).view(b, t, s.heads, s.d).transpose(1, 2)
        key = self.k_proj(hidden).view(b, t, s.kv, s.d).transpose(1, 2)
        value = self.v_proj(hidden).view(b, t, s.kv, s.d).transpose(1, 2)
        cos, sin = rope
        query, key = query * cos + rotate_half(query) * sin, key * cos + rotate_half(key) * sin
        if cache is not None:
            key, value = cache_update(cache, key, value)
        out = attend(query, key, value, self.impl, True, 0.0, self.training, s.heads // s.kv,
                     fp32_softmax=True)
        return self.o_proj(out.reshape(b, t, -1).contiguous())

    def mlp(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, hidden_states, rope, cache=None):
        # LlamaDecoderLayer.forward's names
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.attn(hidden_states, rope, cache)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaLM(nn.Module):
    """Llama (untied head) or, with ``qkv_bias``, Qwen2 (biases on q, k, v)."""

    gc = False

    def __init__(self, s: TransformerSpec, impl: str = "sdpa", qkv_bias: bool = False):
        super().__init__()
        self.s = s
        self.embed_tokens = nn.Embedding(s.vocab, s.hidden)
        self.layers = nn.ModuleList(LlamaBlock(s, impl, qkv_bias) for _ in range(s.layers))
        self.norm = RMSNorm(s.hidden)
        self.lm_head = None if s.tied_embeddings else nn.Linear(s.hidden, s.vocab, bias=False)

    def body(self, ids, cache=None):
        inputs_embeds = self.embed_tokens(ids)  # LlamaModel.forward keeps it referenced
        x = inputs_embeds
        t, d = ids.shape[1], self.s.d
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=ids.device).float() / d))
        freqs = torch.outer(torch.arange(t, device=ids.device).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        rope = (emb.cos().to(x.dtype)[None, None], emb.sin().to(x.dtype)[None, None])
        for blk in self.layers:
            if self.training and self.gc:
                x = checkpointed(blk, x, rope, cache)
            else:
                x = blk(x, rope, cache)
        return self.norm(x)

    def head(self, x):
        if self.lm_head is not None:
            return self.lm_head(x)
        return F.linear(x, self.embed_tokens.weight)


# ---------------------------------------------------------------- BERT (masked LM)
class BertLayer(nn.Module):
    def __init__(self, s: TransformerSpec, impl: str):
        super().__init__()
        h, self.s, self.impl = s.hidden, s, impl
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(h, s.ffn_size), nn.Linear(s.ffn_size, h), \
            nn.LayerNorm(h, eps=1e-12)

    def forward(self, x, cache=None):
        s, (b, t, h) = self.s, x.shape
        q, k, v = (p(x).view(b, t, s.heads, s.d).transpose(1, 2)
                   for p in (self.query, self.key, self.value))
        a = attend(q, k, v, self.impl, False, s.dropout, self.training).reshape(b, t, h)
        x = self.ln1(F.dropout(self.attn_out(a), s.dropout, self.training) + x)
        m = self.out(F.gelu(self.inter(x)))
        return self.ln2(F.dropout(m, s.dropout, self.training) + x)


class BertMLM(nn.Module):
    """BertForMaskedLM: embeddings + LayerNorm, post-LN layers, the MLM transform, no pooler."""

    gc = False

    def __init__(self, s: TransformerSpec, impl: str = "sdpa"):
        super().__init__()
        h, self.s = s.hidden, s
        self.word, self.pos = nn.Embedding(s.vocab, h), nn.Embedding(s.max_positions, h)
        self.types, self.emb_ln = nn.Embedding(s.type_vocab, h), nn.LayerNorm(h, eps=1e-12)
        self.layer = nn.ModuleList(BertLayer(s, impl) for _ in range(s.layers))
        self.transform, self.t_ln = nn.Linear(h, h), LayerNorm(h, eps=1e-12)
        self.out_bias = nn.Parameter(torch.zeros(s.vocab))

    def body(self, ids, cache=None):
        t = ids.shape[1]
        x = self.word(ids) + self.types(torch.zeros_like(ids)) + self.pos(
            torch.arange(t, device=ids.device))
        x = F.dropout(self.emb_ln(x), self.s.dropout, self.training)
        for blk in self.layer:
            x = checkpointed(blk, x) if self.training and self.gc else blk(x)
        return self.t_ln(F.gelu(self.transform(x)))

    def head(self, x):
        return F.linear(x, self.word.weight, self.out_bias)


def checkpointed(block, *args):
    from torch.utils.checkpoint import checkpoint

    return checkpoint(block, *args, use_reentrant=False)


class CausalLM(nn.Module):
    """``model(ids, labels)`` as HF returns it: (loss, logits); the loss in fp32."""

    def __init__(self, model: nn.Module, shift: bool = True):
        super().__init__()
        self.model, self.shift = model, shift

    def forward(self, ids, labels):
        logits = self.model.head(self.model.body(ids))
        upcast = getattr(self.model, "loss_upcast", True)  # T5: the logits' own dtype
        flat = (logits.float() if upcast else logits).view(-1, logits.shape[-1])
        if self.shift:  # ForCausalLMLoss: pad the labels by one and shift them left
            labels = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        return F.cross_entropy(flat, labels.view(-1), ignore_index=-100), logits


# ---------------------------------------------------------------- ViT (image classification)
class ViTLayer(nn.Module):
    def __init__(self, s: TransformerSpec, impl: str):
        super().__init__()
        h, self.s, self.impl = s.hidden, s, impl
        self.layernorm_before, self.layernorm_after = nn.LayerNorm(h), nn.LayerNorm(h)
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out = nn.Linear(h, h)
        self.intermediate, self.output = nn.Linear(h, s.ffn_size), nn.Linear(s.ffn_size, h)

    def attn(self, x):
        s, (b, t, h) = self.s, x.shape
        q, k, v = (p(x).view(b, t, s.heads, s.d).transpose(1, 2)
                   for p in (self.query, self.key, self.value))
        out = attend(q, k, v, self.impl, False, s.dropout, self.training)
        return self.attn_out(out.reshape(b, t, h).contiguous())

    def forward(self, hidden_states):
        # ViTLayer.forward: pre-LN, residuals around attention and MLP
        attention_output = self.attn(self.layernorm_before(hidden_states))
        hidden_states = attention_output + hidden_states
        layer_output = self.layernorm_after(hidden_states)
        layer_output = self.output(F.gelu(self.intermediate(layer_output)))
        return layer_output + hidden_states


class ViTClassifier(nn.Module):
    """ViTForImageClassification: patch embedding, CLS token, pre-LN layers, the CLS head."""

    gc = False

    def __init__(self, s: TransformerSpec, impl: str = "sdpa"):
        super().__init__()
        h, self.s = s.hidden, s
        self.patch = nn.Conv2d(s.channels, h, s.patch, s.patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, h))
        self.position = nn.Parameter(torch.zeros(1, s.seq_for_image(s.image, s.image), h))
        self.layer = nn.ModuleList(ViTLayer(s, impl) for _ in range(s.layers))
        self.layernorm = nn.LayerNorm(h)
        self.classifier = nn.Linear(h, s.classes)

    def forward(self, pixels):
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.position
        for blk in self.layer:
            x = checkpointed(blk, x) if self.training and self.gc else blk(x)
        return self.classifier(self.layernorm(x)[:, 0, :])
