"""Decoder families whose structure differs from Llama's, as one spec with named quirks.

:class:`FamilySpec` is a :class:`TransformerSpec` (everything that reads a spec keeps
working) that carries a :class:`Quirks` record: the family's extra norms, soft-capping,
fused projections, parallel blocks, learned positions, shared experts, dense first
layers and latent attention. Its parameter groups are written from those quirks, so
each family's published parameter count comes out exactly; the activation closed
forms read the same record (``gpuwatch.budget.activations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwatch.budget.specs import ParamGroup, TransformerSpec


@dataclass(frozen=True)
class Quirks:
    """What a family does differently from a Llama-style decoder (the defaults)."""

    family: str = "llama"  # the model_type read
    # RMSNorm flavour: "llama" (fp32 upcast, cast back before the weight), "gemma"
    # (all in fp32, weight applied as 1 + w, then cast back) or "t5" (squares an fp32
    # copy, multiplies the input itself)
    norm_style: str = "llama"
    norm_bias: bool = True  # a LayerNorm's bias (MPT has none)
    layer_norms: int = 2  # norms on the residual path per layer (Falcon-7B, Phi-2: 1)
    post_norms: int = 0  # Gemma-2/3: norms on the attention and MLP outputs
    qk_norm: bool = False  # Gemma-3: a norm per head on q and k
    parallel: bool = False  # attention and MLP read the same input (NeoX, Falcon, Phi-2)
    rotary: bool = True  # rope: rotated q and k are new tensors
    fused_gate_up: bool = False  # Phi-3's gate_up_proj: one reader
    qkv_bias: bool = False  # biases on q, k and v only (Qwen2)
    head_bias: bool = False  # Phi-2's lm_head has a bias
    embed_norm: bool = False  # BLOOM: a LayerNorm after the embedding
    final_norm: bool = True  # OPT-350m (post-LN) has none
    attn_softcap: float = 0.0  # Gemma-2: tanh soft-capping of the attention scores
    logit_softcap: float = 0.0  # Gemma-2: tanh soft-capping of the final logits
    attention_dropout: float = 0.0  # on the probabilities (eager attention)
    embed_dropout: float = 0.0
    position_offset: int = 0  # OPT: two more learned position rows than positions
    embed_dim: int = 0  # OPT's word_embed_proj_dim when it differs from the hidden size
    shared_ffn: int = 0  # shared experts' total (gated) width beside the routed experts
    shared_gate: bool = False  # Qwen2-MoE: a sigmoid gate on the shared expert
    dense_layers: int = 0  # layers with a dense MLP in an MoE model (DeepSeek's first k)
    dense_ffn: int = 0
    # DeepSeek's multi-head latent attention (0: ordinary attention)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    eager_only: bool = False  # BLOOM, MPT, T5: position biases in eager code only
    fp32_softmax: bool = True  # eager softmax in fp32 (``dtype=torch.float32``)
    loss_upcast: bool = True  # the loss on fp32 logits (T5: on the logits' own dtype)
    ffn_dropout: bool = False  # T5: dropout between the MLP's activation and its output
    # T5: one relative position bias per stack (a·s² per sample-free tensor), made by the
    # first layer and handed to the others; the decoder's cross-attention gets zeros
    position_bias: bool = False
    # autocast caches a layer's 16-bit weight copies until the forward pass ends where its
    # matmuls read the weight itself; Falcon's ``input @ weight.T`` reads a view, so each
    # copy lives only as long as what keeps it
    cached_copies: bool = True

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0


def t5_quirks(dropout: float) -> Quirks:
    """T5 as transformers runs it: T5LayerNorm, eager attention with a relative position
    bias, dropout inside the MLP, the loss on the logits in their own dtype; since
    transformers 5 the softmax runs in the scores' dtype (4.x upcast it to fp32)."""
    return Quirks(family="t5", norm_style="t5", rotary=False, eager_only=True,
                  loss_upcast=False, ffn_dropout=True, attention_dropout=dropout,
                  embed_dropout=dropout, fp32_softmax=False, position_bias=True)


def quirks_of(spec: TransformerSpec) -> Quirks:
    """The spec's quirks; a plain :class:`TransformerSpec` has none beyond its fields."""
    return spec.quirks if isinstance(spec, FamilySpec) else _PLAIN


_PLAIN = Quirks(family="", rotary=False, fp32_softmax=False)


@dataclass(frozen=True)
class FamilySpec(TransformerSpec):
    """A decoder read from a family's ``config.json``, with its :class:`Quirks`."""

    quirks: Quirks = field(default_factory=Quirks)

    @property
    def moe_layers(self) -> int:
        return self.layers - self.quirks.dense_layers if self.experts > 1 else 0

    def _norm_group(self, name: str, width: int, n: int, per_layer: bool) -> ParamGroup:
        per = 2 if self.norm == "layernorm" and self.quirks.norm_bias else 1
        return ParamGroup(name, width * per, 1, n, "norm", per_layer)

    def _attention_groups(self, L: int) -> list[ParamGroup]:
        q, h = self.quirks, self.hidden
        if not q.mla:
            groups = self._attention("attn", L)
            if q.qkv_bias:
                width = self.heads * self.d + 2 * self.kv * self.d
                groups.append(ParamGroup("attn.qkv_bias", width, 1, L, "bias"))
            if q.qk_norm:
                groups.append(self._norm_group("attn.qk_norm", 2 * self.d, L, True))
            return groups
        qk = self.d  # nope + rope
        a, v = self.heads, q.v_head_dim
        groups = [
            ParamGroup("attn.kv_a", h, q.kv_lora_rank + q.rope_head_dim, L),
            ParamGroup("attn.kv_b", q.kv_lora_rank, a * (qk - q.rope_head_dim + v), L),
            ParamGroup("attn.o", a * v, h, L),
            self._norm_group("attn.kv_a_norm", q.kv_lora_rank, L, True),
        ]
        if q.q_lora_rank:
            groups += [ParamGroup("attn.q_a", h, q.q_lora_rank, L),
                       ParamGroup("attn.q_b", q.q_lora_rank, a * qk, L),
                       self._norm_group("attn.q_a_norm", q.q_lora_rank, L, True)]
        else:
            groups.append(ParamGroup("attn.q", h, a * qk, L))
        return groups

    def _mlp_groups(self) -> list[ParamGroup]:
        q, h, L = self.quirks, self.hidden, self.layers
        if self.experts == 1:
            return self._mlp("mlp", L)
        dense, moe = q.dense_layers, self.moe_layers
        ins = 2 if self.gated_mlp else 1
        groups = [ParamGroup("mlp.in", h, self.ffn_size, ins * self.experts * moe),
                  ParamGroup("mlp.out", self.ffn_size, h, self.experts * moe),
                  ParamGroup("mlp.router", h, self.experts, moe)]
        if q.shared_ffn:
            groups += [ParamGroup("mlp.shared.in", h, q.shared_ffn, 2 * moe),
                       ParamGroup("mlp.shared.out", q.shared_ffn, h, moe)]
        if q.shared_gate:
            groups.append(ParamGroup("mlp.shared.gate", h, 1, moe))
        if dense:
            groups += [ParamGroup("mlp.dense.in", h, q.dense_ffn, ins * dense),
                       ParamGroup("mlp.dense.out", q.dense_ffn, h, dense)]
        return groups

    def param_groups(self) -> tuple[ParamGroup, ...]:
        if self.count_only or self.arch != "decoder":  # T5 keeps the generic layout
            return super().param_groups()
        q, h, V, L = self.quirks, self.hidden, self.vocab, self.layers
        e = q.embed_dim or h
        g = [ParamGroup("embed", V, e, 1, "embedding", False)]
        if self.max_positions:
            g.append(ParamGroup("pos_embed", self.max_positions + q.position_offset, h, 1,
                                "embedding", False))
        if e != h:
            g += [ParamGroup("project_in", e, h, 1, "linear", False),
                  ParamGroup("project_out", h, e, 1, "linear", False)]
        if q.embed_norm:
            g.append(self._norm_group("embed_norm", h, 1, False))
        g += self._attention_groups(L) + self._mlp_groups()
        g.append(self._norm_group("norm", h, (q.layer_norms + q.post_norms) * L, True))
        if q.final_norm:
            g.append(self._norm_group("final_norm", h, 1, False))
        if not self.tied_embeddings:
            g.append(ParamGroup("lm_head", e, V, 1, "linear", False))
            if q.head_bias:
                g.append(ParamGroup("lm_head.bias", V, 1, 1, "bias", False))
        if self.extra_params:
            g.append(ParamGroup("unassigned", self.extra_params, 1, 1, "linear", True))
        return tuple(x for x in g if x.numel)

    @property
    def active_params(self) -> int:
        if self.experts == 1 or self.arch != "decoder":
            return self.params
        idle = self.experts - self.experts_per_token
        ins = 2 if self.gated_mlp else 1
        return self.params - idle * (ins + 1) * self.hidden * self.ffn_size * self.moe_layers

    def layer_params(self) -> int:
        if self.arch != "decoder":
            return super().layer_params()
        per_layer = sum(p.numel for p in self.param_groups() if p.per_layer)
        return per_layer // max(1, self.layers)
