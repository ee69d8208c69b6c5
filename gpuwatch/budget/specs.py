"""Frozen descriptions of a model's shape: transformers and CNNs, and their parameters.

A spec is all the estimator needs about a model: the parameter tensors (grouped by
shape and kind, so quantization, LoRA, Adafactor and ZeRO-3 can treat them apart)
and, for activations, the layer dimensions (transformers) or a per-layer table of
saved tensors (CNNs, see :mod:`gpuwatch.budget.cnn`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuwatch.budget.bounds import (
    MAX_CHANNELS,
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_IMAGE,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_VOCAB,
    check_int,
)
from gpuwatch.budget.errors import BudgetError

ParamKind = Literal["embedding", "linear", "norm", "bias", "conv", "other"]
Arch = Literal["decoder", "encoder", "encoder-decoder", "vit"]


@dataclass(frozen=True)
class ParamGroup:
    """``count`` tensors of shape ``rows × cols`` (vectors have ``cols == 1``).

    ``per_layer`` marks tensors that live in the repeated blocks (what ZeRO-3 gathers
    one layer at a time and pipeline stages split); the rest are embeddings and heads.
    """

    name: str
    rows: int
    cols: int
    count: int = 1
    kind: ParamKind = "linear"
    per_layer: bool = True
    kernel: int = 1  # a convolution's k (its weight is rows × cols/k² × k × k)

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.count


@dataclass(frozen=True)
class TransformerSpec:
    """A transformer by its dimensions, as in an HF ``config.json``.

    ``kv_heads < heads`` is grouped-query attention; ``experts > 1`` a mixture of
    experts with ``experts_per_token`` active; ``decoder_layers`` > 0 an
    encoder-decoder (T5) whose encoder has ``layers``; ``arch == "vit"`` reads its
    sequence from the image and ``patch``.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    ffn: int = 0
    kv_heads: int = 0
    arch: Arch = "decoder"
    head_dim: int = 0
    gated_mlp: bool = False
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    bias: bool = True
    tied_embeddings: bool = True
    max_positions: int = 0
    type_vocab: int = 0
    experts: int = 1
    experts_per_token: int = 1
    decoder_layers: int = 0
    dropout: float = 0.0
    image: int = 224
    patch: int = 16
    channels: int = 3
    classes: int = 0
    mlm_head: bool = False
    pooler: bool = False
    relative_buckets: int = 0
    approx_params: bool = field(default=False, compare=False)
    extra_params: int = 0  # parameters not placed in the shape (a bare count's remainder)
    # a count too small for any shape: the parameters are ``extra_params`` alone, and
    # the dimensions only size the (tiny) activations
    count_only: bool = False
    # the MLP's activation as HF names it (``hidden_act`` / ``activation_function``):
    # "gelu_new" (GPT-2) is written out in elementwise ops that save five ffn-wide
    # tensors; "" is the family's fused default (GELU, or SiLU when gated)
    activation: str = ""
    fused_qkv: bool = False  # one q/k/v projection (GPT-2's c_attn), read once

    def __post_init__(self) -> None:
        for name, low, high in (
            ("layers", 1, MAX_LAYERS),
            ("hidden", 1, MAX_HIDDEN),
            ("heads", 1, min(MAX_HEADS, max(1, self.hidden))),
            ("vocab", 0, MAX_VOCAB),
            ("ffn", 0, MAX_FFN),
            ("kv_heads", 0, self.heads if self.heads >= 1 else MAX_HEADS),
            ("head_dim", 0, MAX_HEADS),
            ("decoder_layers", 0, MAX_LAYERS),
            ("max_positions", 0, MAX_VOCAB),
            ("type_vocab", 0, MAX_VOCAB),
            ("experts", 1, MAX_EXPERTS),
            ("relative_buckets", 0, MAX_HEADS),
            ("extra_params", 0, MAX_PARAMS),
        ):
            flag = f"--{name.replace('_', '-')}"
            check_int(getattr(self, name), flag, low, high, name.replace("_", " "))
        if not 0.0 <= self.dropout < 1.0:
            raise BudgetError("--config", f"dropout must be a fraction in [0, 1), "
                                          f"not {self.dropout!r}.")
        if self.arch == "vit":
            check_int(self.channels, "--config", 1, MAX_CHANNELS, "channels")
            check_int(self.image, "--image", 1, MAX_IMAGE, "image size")
            check_int(self.patch, "--config", 1, self.image, "patch size (at most the image)")
            check_int(self.classes, "--config", 0, MAX_VOCAB, "classes")
        if not self.head_dim and self.hidden % self.heads:
            raise BudgetError(
                "--heads", f"{self.heads} heads do not divide the hidden size {self.hidden}."
            )
        if self.heads % self.kv:
            raise BudgetError(
                "--kv-heads",
                f"{self.kv} key/value heads do not divide {self.heads} attention heads.",
            )
        if self.experts < 1 or not 1 <= self.experts_per_token <= self.experts:
            raise BudgetError(
                "experts", "experts per token must be between 1 and the number of experts."
            )

    # Derived dimensions -----------------------------------------------------------
    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def d(self) -> int:
        """Head dimension."""
        return self.head_dim or self.hidden // self.heads

    @property
    def ffn_size(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def total_layers(self) -> int:
        return self.layers + self.decoder_layers

    def seq_for_image(self, height: int, width: int) -> int:
        """ViT: patches plus the class token."""
        return (height // self.patch) * (width // self.patch) + 1

    # Parameters -------------------------------------------------------------------
    def _attention(self, prefix: str, n: int) -> list[ParamGroup]:
        h, q, kv = self.hidden, self.heads * self.d, self.kv * self.d
        out = [
            ParamGroup(f"{prefix}.q", h, q, n),
            ParamGroup(f"{prefix}.kv", h, kv, 2 * n),
            ParamGroup(f"{prefix}.o", q, h, n),
        ]
        if self.bias:
            out.append(ParamGroup(f"{prefix}.bias", q + 2 * kv + h, 1, n, "bias"))
        return out

    def _mlp(self, prefix: str, n: int) -> list[ParamGroup]:
        h, f, e = self.hidden, self.ffn_size, self.experts
        ins = 2 if self.gated_mlp else 1
        out = [
            ParamGroup(f"{prefix}.in", h, f, ins * e * n),
            ParamGroup(f"{prefix}.out", f, h, e * n),
        ]
        if self.bias:
            out.append(ParamGroup(f"{prefix}.bias", ins * f + h, 1, e * n, "bias"))
        if e > 1:
            out.append(ParamGroup(f"{prefix}.router", h, e, n))
        return out

    def _norms(self, n: int, per_layer: bool = True) -> list[ParamGroup]:
        per = 2 if self.norm == "layernorm" and self.arch != "encoder-decoder" else 1
        return [ParamGroup("norm", self.hidden * per, 1, n, "norm", per_layer)] if n else []

    def param_groups(self) -> tuple[ParamGroup, ...]:
        if self.count_only:
            return (ParamGroup("unassigned", self.extra_params, 1, 1, "linear", True),)
        h, V, L = self.hidden, self.vocab, self.layers
        g: list[ParamGroup] = []
        if self.arch == "vit":
            g.append(ParamGroup("patch_embed", self.channels * self.patch**2, h, 1, "conv", False,
                                self.patch))
            g.append(ParamGroup("patch_bias+cls", 2 * h, 1, 1, "bias", False))
            g.append(
                ParamGroup(
                    "pos_embed",
                    self.seq_for_image(self.image, self.image),
                    h,
                    1,
                    "embedding",
                    False,
                )
            )
        else:
            g.append(ParamGroup("embed", V, h, 1, "embedding", False))
        if self.max_positions and self.arch != "vit":
            g.append(ParamGroup("pos_embed", self.max_positions, h, 1, "embedding", False))
        if self.type_vocab:
            g.append(ParamGroup("type_embed", self.type_vocab, h, 1, "embedding", False))
        if self.arch == "encoder":
            g += self._norms(1, per_layer=False)  # embedding LayerNorm
        g += self._attention("attn", L) + self._mlp("mlp", L) + self._norms(2 * L)
        if self.decoder_layers:
            D = self.decoder_layers
            g += self._attention("dec.self", D) + self._attention("dec.cross", D)
            g += self._mlp("dec.mlp", D) + self._norms(3 * D)
            g += self._norms(2, per_layer=False)
        else:
            g += self._norms(1 if self.arch != "encoder" else 0, per_layer=False)
        if self.relative_buckets:
            n_stacks = 2 if self.decoder_layers else 1
            g.append(
                ParamGroup("rel_bias", self.relative_buckets, self.heads, n_stacks, "other", False)
            )
        if self.arch == "vit" and self.classes:
            g.append(ParamGroup("head", h, self.classes, 1, "linear", False))
            g.append(ParamGroup("head.bias", self.classes, 1, 1, "bias", False))
        if self.pooler:
            g.append(ParamGroup("pooler", h, h, 1, "linear", False))
            g.append(ParamGroup("pooler.bias", h, 1, 1, "bias", False))
        if self.mlm_head:
            g.append(ParamGroup("mlm.transform", h, h, 1, "linear", False))
            g.append(ParamGroup("mlm.bias+norm", 3 * h + V, 1, 1, "bias", False))
        if self.arch != "vit" and not self.tied_embeddings:
            g.append(ParamGroup("lm_head", h, V, 1, "linear", False))
        if self.extra_params:
            g.append(ParamGroup("unassigned", self.extra_params, 1, 1, "linear", True))
        return tuple(x for x in g if x.numel)

    @property
    def params(self) -> int:
        return sum(p.numel for p in self.param_groups())

    @property
    def active_params(self) -> int:
        """Parameters a token passes through (mixture of experts: only the routed experts)."""
        if self.experts == 1:
            return self.params
        idle = self.experts - self.experts_per_token
        ins = 2 if self.gated_mlp else 1
        per_expert = (ins + 1) * self.hidden * self.ffn_size
        return self.params - idle * per_expert * self.total_layers

    def layer_params(self) -> int:
        """Parameters of the largest repeated block (what ZeRO-3 gathers at a time)."""
        per_layer = sum(p.numel for p in self.param_groups() if p.per_layer)
        return per_layer // max(1, self.total_layers) * (2 if self.decoder_layers else 1)


@dataclass(frozen=True)
class CnnLayer:
    """One row of a CNN's table: saved activation elements per sample and parameters.

    ``saved_elements`` are kept in the activation dtype (16-bit under autocast).
    Networks with normalisation run in fp32 under autocast, or with attention, add:
    ``wide`` (kept at the residual width: GroupNorm/LayerNorm inputs and outputs),
    ``cast`` (16-bit copies that exist only under autocast, when several matmuls read
    one fp32 tensor), ``scores`` (eager attention's heads·n·m probabilities),
    ``fused`` and ``stats`` (kept only by fused attention: its output, and the fp32
    log-sum-exp) and ``live_elements`` (alive in inference while the layer runs;
    0 means its input and output).
    """

    name: str
    saved_elements: int
    params: int = 0
    index_elements: int = 0  # int64 indices saved (max pooling)
    output_elements: int = 0
    wide: int = 0
    cast: int = 0
    scores: int = 0
    fused: int = 0
    stats: int = 0
    live_elements: int = 0

    @property
    def live(self) -> int:
        return self.live_elements or 2 * self.output_elements


@dataclass(frozen=True)
class CnnSpec:
    """A convolutional network as a per-layer table for one input size."""

    name: str
    layers: tuple[CnnLayer, ...]
    image: tuple[int, int] = (224, 224)
    param_shapes: tuple[ParamGroup, ...] = ()
    note: str = ""  # what the table assumes, for the estimate's notes

    @property
    def params(self) -> int:
        return sum(p.numel for p in self.param_shapes) or sum(x.params for x in self.layers)

    @property
    def active_params(self) -> int:
        return self.params

    def param_groups(self) -> tuple[ParamGroup, ...]:
        return self.param_shapes

    def layer_params(self) -> int:
        return max((x.params for x in self.layers), default=0)

    @property
    def saved_elements_per_sample(self) -> int:
        return sum(x.saved_elements for x in self.layers)

    @property
    def index_elements_per_sample(self) -> int:
        return sum(x.index_elements for x in self.layers)

    @property
    def largest_output_elements(self) -> int:
        return max((x.output_elements for x in self.layers), default=0)

    def total(self, column: str) -> int:
        """The sum of one column of the table (``wide``, ``scores``…), per sample."""
        return sum(getattr(x, column) for x in self.layers)

    @property
    def has_attention(self) -> bool:
        return any(x.scores for x in self.layers)


ModelSpec = TransformerSpec | CnnSpec
