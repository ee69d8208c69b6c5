"""T5 (``T5ForConditionalGeneration``) in plain torch, op for op as transformers runs it
(for benchmarks/accuracy.py).

T5LayerNorm squares an fp32 copy of its input but multiplies the input itself (so a
16-bit model keeps both); attention is eager only, with the relative position bias
(computed once per stack by the first layer, plus the attention mask: b × heads × s × s,
alive through the forward pass) added to the scores and a softmax in their dtype;
dropout on the embeddings, the probabilities, the ReLU output, every residual branch and
the final norm; the tied head scales its input by d_model^-0.5; the loss is taken on the
logits in their own dtype (no fp32 upcast). The decoder reads the target ids directly (a
shift right changes no size).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gpuwatch.budget import TransformerSpec


class T5LayerNorm(nn.Module):
    def __init__(self, h: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x


class T5Attention(nn.Module):
    def __init__(self, s: TransformerSpec, relative: bool):
        super().__init__()
        inner = s.heads * s.d
        self.s = s
        self.q, self.k = nn.Linear(s.hidden, inner, bias=False), nn.Linear(s.hidden, inner,
                                                                           bias=False)
        self.v, self.o = nn.Linear(s.hidden, inner, bias=False), nn.Linear(inner, s.hidden,
                                                                           bias=False)
        if relative:
            self.relative_attention_bias = nn.Embedding(s.relative_buckets, s.heads)

    def bias(self, t: int, m: int, mask):
        """compute_bias (a bucket per offset; the bucketing's arithmetic keeps nothing)
        plus the mask: the b × heads × t × m position bias every layer of the stack reads."""
        rel = torch.arange(m)[None, :] - torch.arange(t)[:, None]
        buckets = rel.abs().clamp(max=self.s.relative_buckets - 1)
        if hasattr(self, "relative_attention_bias"):
            values = self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
        else:
            values = torch.zeros((1, self.s.heads, t, m), dtype=self.q.weight.dtype)
        return values + mask

    def forward(self, x, kv, position_bias):
        s, (b, t, _) = self.s, x.shape
        m = kv.shape[1]
        q = self.q(x).view(b, t, s.heads, s.d).transpose(1, 2)
        k = self.k(kv).view(b, m, s.heads, s.d).transpose(1, 2)
        v = self.v(kv).view(b, m, s.heads, s.d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2))
        scores += position_bias
        w = F.softmax(scores, dim=-1)  # in the scores' dtype, as transformers 5 runs it
        w = F.dropout(w, p=s.dropout, training=self.training)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, t, -1)
        return self.o(out)


class T5Block(nn.Module):
    def __init__(self, s: TransformerSpec, relative: bool, cross: bool):
        super().__init__()
        self.s = s
        self.ln_self, self.self_attn = T5LayerNorm(s.hidden), T5Attention(s, relative)
        if cross:
            self.ln_cross, self.cross_attn = T5LayerNorm(s.hidden), T5Attention(s, False)
        self.ln_ff = T5LayerNorm(s.hidden)
        self.wi, self.wo = nn.Linear(s.hidden, s.ffn_size, bias=False), nn.Linear(
            s.ffn_size, s.hidden, bias=False)

    def forward(self, h, bias, enc=None, cross_bias=None):
        drop = lambda y: F.dropout(y, self.s.dropout, self.training)  # noqa: E731
        n = self.ln_self(h)
        h = h + drop(self.self_attn(n, n, bias))
        if enc is not None:
            h = h + drop(self.cross_attn(self.ln_cross(h), enc, cross_bias))
        ff = drop(F.relu(self.wi(self.ln_ff(h))))
        return h + drop(self.wo(ff))


class T5(nn.Module):
    """``body(ids)`` runs the encoder on ``ids`` and the decoder on the same ids;
    ``head`` the tied, rescaled LM head. ``loss_upcast = False``: the loss is taken on
    the logits as they are."""

    gc = False
    loss_upcast = False

    def __init__(self, s: TransformerSpec):
        super().__init__()
        self.s = s
        self.shared = nn.Embedding(s.vocab, s.hidden)
        self.encoder = nn.ModuleList(T5Block(s, i == 0, False) for i in range(s.layers))
        self.decoder = nn.ModuleList(T5Block(s, i == 0, True)
                                     for i in range(s.decoder_layers))
        self.enc_ln, self.dec_ln = T5LayerNorm(s.hidden), T5LayerNorm(s.hidden)

    def _mask(self, b: int, t: int, causal: bool):
        dtype = self.shared.weight.dtype
        if causal:
            m = torch.full((t, t), torch.finfo(dtype).min, dtype=dtype).triu(1)
            return m[None, None].expand(b, 1, t, t)
        return torch.zeros((b, 1, 1, t), dtype=dtype)  # an all-ones attention mask

    def body(self, ids, cache=None):
        drop = lambda y: F.dropout(y, self.s.dropout, self.training)  # noqa: E731
        b, t = ids.shape
        h = drop(self.shared(ids))
        bias = self.encoder[0].self_attn.bias(t, t, self._mask(b, t, False))
        for blk in self.encoder:
            h = blk(h, bias)
        enc = drop(self.enc_ln(h))
        d = drop(self.shared(ids))
        bias = self.decoder[0].self_attn.bias(t, t, self._mask(b, t, True))
        cross = self.decoder[0].cross_attn.bias(t, t, self._mask(b, t, False))
        for blk in self.decoder:
            d = blk(d, bias, enc, cross)
        return drop(self.dec_ln(d))

    def head(self, x):
        return F.linear(x * (self.s.hidden ** -0.5), self.shared.weight)
