"""Estimator vs a traced training step, per category, for models built in plain torch.

Each model is built inside ``FakeTensorMode`` (no real memory, CPU), trained for two
AdamW steps under PyTorch's ``MemTracker``, and compared with ``gpuwatch.budget``:

* parameters: Parameter + Buffer;  gradients and optimizer states: after ``step()``;
* activations: Activation + Temp at the backward peak of a wrapper module that also
  runs the loss (so the logits' cross-entropy temporaries are inside), or at the end
  of the forward pass where that is more (a large model at a small batch peaks late
  in backward, when gradients have replaced most activations);
* total: the step's peak.

MemTracker counts tensor storages only, so the estimator runs with no framework
overhead; CPU dropout keeps its mask in the activation dtype (4 B), which the
estimator is told. Usage: ``python benchmarks/accuracy.py`` (skips without torch).
"""

from __future__ import annotations

import math
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
except ImportError:  # pragma: no cover
    print("accuracy benchmark skipped: PyTorch is not installed (pip install torch)")
    sys.exit(0)

from gpuwatch.budget import Setup, TransformerSpec, Workload, estimate, lookup_model
from gpuwatch.core.units import format_bytes


# ---------------------------------------------------------------- plain torch models
class Attention(nn.Module):
    def __init__(self, s: TransformerSpec, fused: bool):
        super().__init__()
        self.s, d, self.fused = s, s.d, fused
        q, kv = s.heads * d, s.kv * d
        if fused:
            self.qkv = nn.Linear(s.hidden, q + 2 * kv, bias=s.bias)
        else:
            self.q = nn.Linear(s.hidden, q, bias=s.bias)
            self.k = nn.Linear(s.hidden, kv, bias=s.bias)
            self.v = nn.Linear(s.hidden, kv, bias=s.bias)
        self.o = nn.Linear(q, s.hidden, bias=s.bias)
        self.drop = nn.Dropout(s.dropout)

    def forward(self, x, causal: bool, rope=None):
        s, (b, t, _) = self.s, x.shape
        d, a, k = s.d, s.heads, s.kv
        if self.fused:
            q, kk, v = self.qkv(x).split([a * d, k * d, k * d], dim=-1)
        else:
            q, kk, v = self.q(x), self.k(x), self.v(x)
        q = q.view(b, t, a, d).transpose(1, 2)
        kk = kk.view(b, t, k, d).transpose(1, 2)
        v = v.view(b, t, k, d).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q = q * cos + rotate_half(q) * sin
            kk = kk * cos + rotate_half(kk) * sin
        if k != a:  # repeat_kv, as eager implementations do
            kk = kk[:, :, None].expand(b, k, a // k, t, d).reshape(b, a, t, d)
            v = v[:, :, None].expand(b, k, a // k, t, d).reshape(b, a, t, d)
        scores = torch.matmul(q, kk.transpose(-1, -2)) / math.sqrt(d)
        if causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = self.drop(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, a * d)
        return self.drop(self.o(ctx))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Mlp(nn.Module):
    def __init__(self, s: TransformerSpec, act: nn.Module):
        super().__init__()
        f, self.gated = s.ffn_size, s.gated_mlp
        self.up = nn.Linear(s.hidden, f, bias=s.bias)
        if self.gated:
            self.gate = nn.Linear(s.hidden, f, bias=s.bias)
        self.down = nn.Linear(f, s.hidden, bias=s.bias)
        self.act, self.drop = act, nn.Dropout(s.dropout)

    def forward(self, x):
        h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
        return self.drop(self.down(h))


def norm(s: TransformerSpec) -> nn.Module:
    return nn.RMSNorm(s.hidden) if s.norm == "rmsnorm" else nn.LayerNorm(s.hidden)


class Block(nn.Module):
    def __init__(self, s: TransformerSpec, act: nn.Module, post_ln: bool, fused: bool):
        super().__init__()
        self.n1, self.n2 = norm(s), norm(s)
        self.attn, self.mlp, self.post = Attention(s, fused), Mlp(s, act), post_ln

    def forward(self, x, causal, rope=None):
        if self.post:  # BERT
            x = self.n1(x + self.attn(x, causal))
            return self.n2(x + self.mlp(x))
        x = x + self.attn(self.n1(x), causal, rope)
        return x + self.mlp(self.n2(x))


class LM(nn.Module):
    """GPT-2 (learned positions, pre-LN), BERT (post-LN, MLM head) or Llama (RoPE, RMSNorm)."""

    def __init__(self, s: TransformerSpec):
        super().__init__()
        self.s = s
        bert = s.arch == "encoder"
        act = nn.SiLU() if s.gated_mlp else (nn.GELU() if bert else nn.GELU(approximate="tanh"))
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.pos = nn.Embedding(s.max_positions, s.hidden) if s.max_positions else None
        self.types = nn.Embedding(s.type_vocab, s.hidden) if s.type_vocab else None
        self.emb_norm = nn.LayerNorm(s.hidden) if bert else None
        self.drop = nn.Dropout(s.dropout)
        self.blocks = nn.ModuleList(
            Block(s, act, bert, fused=s.arch == "decoder" and s.bias) for _ in range(s.layers)
        )
        self.final = None if bert else norm(s)
        if s.mlm_head:
            self.transform = nn.Linear(s.hidden, s.hidden)
            self.t_act, self.t_norm = nn.GELU(), nn.LayerNorm(s.hidden)
            self.out_bias = nn.Parameter(torch.zeros(s.vocab))
        self.head = None if s.tied_embeddings else nn.Linear(s.hidden, s.vocab, bias=False)

    def forward(self, ids):
        s, t = self.s, ids.shape[1]
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(t, device=ids.device))
        if self.types is not None:
            x = x + self.types(torch.zeros_like(ids))
        if self.emb_norm is not None:
            x = self.emb_norm(x)
        x = self.drop(x)
        rope = None
        if s.norm == "rmsnorm":
            inv = 1.0 / (10000 ** (torch.arange(0, s.d, 2, device=ids.device).float() / s.d))
            freqs = torch.outer(torch.arange(t, device=ids.device).float(), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            rope = (emb.cos(), emb.sin())
        for blk in self.blocks:
            x = blk(x, s.arch == "decoder", rope)
        if self.final is not None:
            x = self.final(x)
        if s.mlm_head:
            x = self.t_norm(self.t_act(self.transform(x)))
            return F.linear(x, self.embed.weight, self.out_bias)
        return self.head(x) if self.head is not None else F.linear(x, self.embed.weight)


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(width)
        self.c3, self.b3 = nn.Conv2d(width, width * 4, 1, bias=False), nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != width * 4:
            self.down = nn.Sequential(
                nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4)
            )

    def forward(self, x):
        out = self.relu(self.b1(self.c1(x)))
        out = self.relu(self.b2(self.c2(out)))
        out = self.b3(self.c3(out))
        out += x if self.down is None else self.down(x)
        return self.relu(out)


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], 64
        for stage, (n, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
            for i in range(n):
                layers.append(Bottleneck(cin, width, 2 if stage and i == 0 else 1))
                cin = width * 4
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# SD 1.5's UNet as diffusers writes it (UNet2DConditionModel, AttnProcessor: eager)
class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(1280, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.short = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (x if self.short is None else self.short(x)) + h


class CrossAttention(nn.Module):
    def __init__(self, c, ctx):
        super().__init__()
        self.q = nn.Linear(c, c, bias=False)
        self.k, self.v = nn.Linear(ctx, c, bias=False), nn.Linear(ctx, c, bias=False)
        self.out, self.heads = nn.Linear(c, c), 8

    def split(self, t):  # head_to_batch_dim: a copy
        b, n, c = t.shape
        return (
            t.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3).reshape(-1, n, c // 8)
        )

    def forward(self, x, ctx=None):
        ctx = x if ctx is None else ctx
        q, k, v = self.split(self.q(x)), self.split(self.k(ctx)), self.split(self.v(ctx))
        probs = (torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5).softmax(-1)
        b, n, c = x.shape
        o = torch.bmm(probs, v).reshape(b, self.heads, n, c // 8).permute(0, 2, 1, 3)
        return self.out(o.reshape(b, n, c))


class SpatialTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.proj_in = nn.GroupNorm(32, c, eps=1e-6), nn.Conv2d(c, c, 1)
        self.n1, self.a1 = nn.LayerNorm(c), CrossAttention(c, c)
        self.n2, self.a2 = nn.LayerNorm(c), CrossAttention(c, 768)
        self.n3, self.ff_in, self.ff_out = nn.LayerNorm(c), nn.Linear(c, 8 * c), nn.Linear(4 * c, c)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x, ctx):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        t = self.a1(self.n1(t)) + t
        t = self.a2(self.n2(t), ctx) + t
        a, gate = self.ff_in(self.n3(t)).chunk(2, dim=-1)
        t = self.ff_out(a * F.gelu(gate)) + t
        return self.proj_out(t.reshape(b, h, w, c).permute(0, 3, 1, 2).contiguous()) + x


class UNet(nn.Module):
    def __init__(self, widths=(320, 640, 1280, 1280)):
        super().__init__()
        self.t1, self.t2 = nn.Linear(320, 1280), nn.Linear(1280, 1280)
        self.conv_in = nn.Conv2d(4, 320, 3, padding=1)
        self.down, skips, c = nn.ModuleList(), [320], 320
        for level, w in enumerate(widths):
            for _ in range(2):
                attn = SpatialTransformer(w) if level < 3 else None
                self.down.append(nn.ModuleList([ResBlock(c, w), attn]))
                c = w
                skips.append(c)
            if level < 3:
                self.down.append(nn.Conv2d(c, c, 3, 2, 1))
                skips.append(c)
        self.mid = nn.ModuleList([ResBlock(c, c), SpatialTransformer(c), ResBlock(c, c)])
        self.up = nn.ModuleList()
        for level, w in reversed(list(enumerate(widths))):
            for _ in range(3):
                attn = SpatialTransformer(w) if level < 3 else None
                self.up.append(nn.ModuleList([ResBlock(c + skips.pop(), w), attn]))
                c = w
            if level:
                self.up.append(nn.Conv2d(c, c, 3, padding=1))
        self.norm_out, self.conv_out = nn.GroupNorm(32, c), nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, inputs):
        x, t, ctx = inputs
        freqs = torch.exp(-math.log(10000) * torch.arange(160, device=x.device) / 160)
        temb = self.t2(
            F.silu(self.t1(torch.cat([(t[:, None] * freqs).cos(), (t[:, None] * freqs).sin()], -1)))
        )
        x = self.conv_in(x)
        skips = [x]
        for m in self.down:
            if isinstance(m, nn.Conv2d):
                x = m(x)
            else:
                x = m[0](x, temb)
                x = x if m[1] is None else m[1](x, ctx)
            skips.append(x)
        x = self.mid[2](self.mid[1](self.mid[0](x, temb), ctx), temb)
        for m in self.up:
            if isinstance(m, nn.Conv2d):
                x = m(F.interpolate(x, scale_factor=2.0, mode="nearest"))
            else:
                x = m[0](torch.cat([x, skips.pop()], dim=1), temb)
                x = x if m[1] is None else m[1](x, ctx)
        return self.conv_out(F.silu(self.norm_out(x)))


class WithLoss(nn.Module):
    """The model and its loss, so MemTracker's backward window covers the loss.

    Cross-entropy over ``classes``; ``classes == 0`` is a diffusion model's MSE to the noise.
    """

    def __init__(self, model: nn.Module, classes: int):
        super().__init__()
        self.model, self.classes = model, classes

    def forward(self, x, y):
        out = self.model(x)
        if not self.classes:
            return F.mse_loss(out, y), out
        return F.cross_entropy(out.reshape(-1, self.classes), y.reshape(-1)), out


# ---------------------------------------------------------------- tracing
def trace(build, make_batch, classes):
    with FakeTensorMode():
        model = WithLoss(build(), classes)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        x, y = make_batch()
        mt = MemTracker()
        mt.track_external(model, opt)
        with mt:
            for i in range(2):
                loss, out = model(x, y)
                after_forward = mt.get_tracker_snapshot("current")
                loss.backward()
                opt.step()
                after_step = mt.get_tracker_snapshot("current")
                opt.zero_grad()
                del loss, out
                if i == 0:
                    mt.reset_mod_stats()
        peak = mt.get_tracker_snapshot("peak")
        bw = mt.memory_tracking[model].snapshots
    dev = next(iter(peak))

    def get(snap, *names):
        return sum(v for k, v in snap[dev].items() if getattr(k, "value", k) in names)

    bw_peak = bw[next(k for k in bw if k.value == "Peak-Backward")][-1]
    return {
        "parameters": get(peak, "Parameter", "Buffer"),
        "gradients": get(after_step, "Gradient"),
        "optimizer_states": get(after_step, "Optstate"),
        # the backward pass's peak, or its start when gradients outweigh what is freed
        "activations": max(
            get(bw_peak, "Activation", "Temp"), get(after_forward, "Activation", "Temp")
        ),
        "total": get(peak, "Total"),
    }


def compare(name, spec, build, make_batch, classes, workload):
    est = estimate(
        spec,
        workload,
        Setup(
            precision="fp32",
            optimizer="adamw",
            overhead_bytes=0,
            dropout_mask_bytes=4.0,
            flash_attention=False,  # the models here compute attention eagerly
        ),
    )
    predicted = {
        "parameters": est.breakdown.parameters,
        "gradients": est.breakdown.gradients,
        "optimizer_states": est.detail.optimizer_persistent,
        "activations": est.breakdown.activations,
        "total": est.total_bytes,
    }
    t0 = time.perf_counter()
    traced = trace(build, make_batch, classes)
    rows = []
    for cat, p in predicted.items():
        t = traced[cat]
        err = 100 * (p - t) / t if t else 0.0
        rows.append((name, cat, p, t, err))
    return rows, time.perf_counter() - t0


TARGET = {"parameters": 1, "gradients": 1, "optimizer_states": 1, "activations": 15, "total": 10}


def main() -> int:
    gpt2 = lookup_model("gpt2")
    bert = TransformerSpec(
        "bert-base (MLM)",
        12,
        768,
        12,
        30522,
        arch="encoder",
        max_positions=512,
        type_vocab=2,
        mlm_head=True,
        dropout=0.1,
    )
    llama = TransformerSpec(
        "llama-style GQA 1.4B",
        8,
        2048,
        16,
        32000,
        ffn=5632,
        kv_heads=4,
        gated_mlp=True,
        norm="rmsnorm",
        bias=False,
        tied_embeddings=False,
    )
    resnet = lookup_model("resnet-50")
    unet = lookup_model("sd15-unet", (512, 512))

    def tokens(b, t, v):
        return lambda: (torch.randint(0, v, (b, t)), torch.randint(0, v, (b, t)))

    cases = [
        (
            "GPT-2 small b4 s512",
            gpt2,
            lambda: LM(gpt2),
            tokens(4, 512, gpt2.vocab),
            gpt2.vocab,
            Workload(batch=4, seq=512),
        ),
        (
            "BERT-base b8 s256",
            bert,
            lambda: LM(bert),
            tokens(8, 256, bert.vocab),
            bert.vocab,
            Workload(batch=8, seq=256),
        ),
        (
            "Llama GQA b2 s1024",
            llama,
            lambda: LM(llama),
            tokens(2, 1024, llama.vocab),
            llama.vocab,
            Workload(batch=2, seq=1024),
        ),
        (
            "ResNet-50 b32 224",
            resnet,
            ResNet50,
            lambda: (torch.randn(32, 3, 224, 224), torch.randint(0, 1000, (32,))),
            1000,
            Workload(batch=32, image=(224, 224)),
        ),
        (
            "SD1.5 UNet b1 512",
            unet,
            UNet,
            lambda: (
                (torch.randn(1, 4, 64, 64), torch.rand(1) * 1000, torch.randn(1, 77, 768)),
                torch.randn(1, 4, 64, 64),
            ),
            0,
            Workload(batch=1, image=(512, 512)),
        ),
    ]
    print(f"torch {torch.__version__}; fp32, AdamW (foreach), CPU FakeTensorMode + MemTracker")
    print(f"{'model':<22}{'category':<18}{'estimate':>13}{'traced':>13}{'error':>9}  target")
    worst = True
    for name, spec, build, batch, classes, wl in cases:
        rows, _ = compare(name, spec, build, batch, classes, wl)
        for n, cat, p, t, err in rows:
            ok = abs(err) <= TARGET[cat]
            worst &= ok
            print(
                f"{n:<22}{cat:<18}{format_bytes(p, digits=2):>13}{format_bytes(t, digits=2):>13}"
                f"{err:>+8.1f}%  ±{TARGET[cat]}%{'' if ok else '  OUTSIDE'}"
            )
    return 0 if worst else 1


if __name__ == "__main__":
    sys.exit(main())
