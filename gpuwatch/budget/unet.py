"""Stable Diffusion 1.5's UNet as a per-layer table of saved activations.

The network is walked from its configuration (diffusers' ``UNet2DConditionModel``
for SD 1.5): a 4-channel latent of (H/8)×(W/8), channel widths (320, 640, 1280,
1280), two ResNet blocks per level going down and three coming up (each fed the
concatenation of the previous output and a skip), GroupNorm(32) + SiLU, and a
spatial transformer (self-attention over the h·w tokens, cross-attention to 77 text
tokens of width 768, GEGLU feed-forward ×4, 8 heads) after every ResNet of the first
three levels and in the middle block.

What autograd keeps, per sample, counted once per tensor by the layer that saves it:

* a ResNet block saves its input (GroupNorm; the 1×1 shortcut too, when widths
  change), both GroupNorm outputs (SiLU inputs), both SiLU outputs (conv inputs) and
  the second GroupNorm's input: 3·c_in + 3·c_out maps;
* a transformer block saves each LayerNorm's input and output, q, k, v and the
  context for both attentions, and the GEGLU projection (8·C: its two halves are
  views of one tensor), GELU(gate) and the product (4·C each);
* eager attention adds the softmax probabilities, heads·n·m per attention; fused
  attention (flash / memory-efficient SDPA) instead keeps its output and an fp32
  log-sum-exp per head and query.

Under torch autocast GroupNorm, LayerNorm and softmax run in fp32: their saved
tensors are "wide" (the precision's residual width), and a 16-bit copy is saved
again by each convolution or linear that reads the same fp32 tensor
(``autocast_elements``). Inference keeps nothing for backward: the live set is the
skip connections waiting for the up path plus the working tensors of one layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import CnnLayer, CnnSpec, ParamGroup

WIDTHS = (320, 640, 1280, 1280)
ATTENTION_LEVELS = 3  # the first three levels (and the middle block) have transformers
DOWN_BLOCKS = 2
UP_BLOCKS = 3
HEADS = 8
TEXT_TOKENS = 77
TEXT_WIDTH = 768
TIME_WIDTH = 4 * WIDTHS[0]  # 1280
GEGLU = 4  # feed-forward inner width, per channel
LATENT_CHANNELS = 4
VAE_FACTOR = 8


@dataclass
class _Walker:
    """The feature map (c, h, w), the skip stack and the table being written."""

    c: int
    h: int
    w: int
    rows: list[CnnLayer] = field(default_factory=list)
    params: list[ParamGroup] = field(default_factory=list)
    pending: int = 0  # parameters added since the last row
    skips: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.h * self.w

    def skip_elements(self) -> int:
        return sum(c * h * w for c, h, w in self.skips)

    def conv(self, name: str, cin: int, cout: int, k: int, per_layer: bool = True) -> None:
        self.params.append(ParamGroup(name, cout, cin * k * k, 1, "conv", per_layer, kernel=k))
        self.params.append(ParamGroup(name + ".bias", cout, 1, 1, "bias", per_layer))
        self.pending += cout * cin * k * k + cout

    def linear(self, name: str, cin: int, cout: int, bias: bool = True) -> None:
        self.params.append(ParamGroup(name, cin, cout, 1, "linear"))
        self.pending += cin * cout
        if bias:
            self.params.append(ParamGroup(name + ".bias", cout, 1, 1, "bias"))
            self.pending += cout

    def norm(self, name: str, c: int) -> None:
        self.params.append(ParamGroup(name, 2 * c, 1, 1, "norm"))
        self.pending += 2 * c

    def row(self, name: str, live: int, **elements: int) -> None:
        """A table row; ``live`` counts the layer's working tensors (skips are added)."""
        self.rows.append(
            CnnLayer(
                name,
                elements.pop("saved", 0),
                self.pending,
                output_elements=self.c * self.n,
                live_elements=live + self.skip_elements(),
                **elements,
            )
        )
        self.pending = 0


def _resnet(u: _Walker, tag: str, cout: int) -> None:
    cin, n = u.c, u.n
    u.norm(tag + ".norm1", cin)
    u.conv(tag + ".conv1", cin, cout, 3)
    u.linear(tag + ".time_emb_proj", TIME_WIDTH, cout)
    u.norm(tag + ".norm2", cout)
    u.conv(tag + ".conv2", cout, cout, 3)
    shortcut = cin != cout
    if shortcut:
        u.conv(tag + ".conv_shortcut", cin, cout, 1)
    u.c = cout
    u.row(
        tag,
        live=(cin + 2 * cout) * n,
        saved=(cin + cout) * n,  # SiLU outputs, read by conv1 and conv2
        wide=(2 * cin + 2 * cout) * n,  # GroupNorm inputs and outputs
        cast=cin * n if shortcut else 0,  # the 16-bit input the shortcut conv keeps
    )


def _attention(u: _Walker, tag: str, keys: int, key_width: int) -> None:
    """LayerNorm + attention + output projection; ``keys`` tokens of ``key_width``."""
    c, n = u.c, u.n
    self_attention = key_width == c and keys == n
    u.norm(tag + ".norm", c)
    u.linear(tag + ".to_q", c, c, bias=False)
    u.linear(tag + ".to_k", key_width, c, bias=False)
    u.linear(tag + ".to_v", key_width, c, bias=False)
    u.linear(tag + ".to_out", c, c)
    u.row(
        tag,
        live=(4 * c * n + 2 * c * keys),  # residuals, norm output, q, context; k, v
        saved=3 * c * n + 2 * c * keys,  # norm output, q, context; k and v
        wide=c * n,  # the LayerNorm input
        cast=2 * c * n if self_attention else 0,  # to_k and to_v cast the fp32 norm output again
        scores=HEADS * n * keys,
        fused=c * n,  # the kernel's output, before the heads are laid back out
        stats=HEADS * n,
    )


def _transformer(u: _Walker, tag: str) -> None:
    c, n = u.c, u.n
    u.norm(tag + ".norm", c)
    u.conv(tag + ".proj_in", c, c, 1)
    u.conv(tag + ".proj_out", c, c, 1)
    u.row(tag + ".proj", live=2 * c * n, saved=2 * c * n, wide=c * n)
    _attention(u, tag + ".attn1", n, c)
    _attention(u, tag + ".attn2", TEXT_TOKENS, TEXT_WIDTH)
    f = GEGLU * c
    u.norm(tag + ".ff.norm", c)
    u.linear(tag + ".ff.proj", c, 2 * f)
    u.linear(tag + ".ff.out", f, c)
    u.row(
        tag + ".ff",
        live=(3 * c + 4 * f) * n,  # residuals, norm output, projection, GELU(gate), product
        saved=(c + 4 * f) * n,  # norm output, projection (2f), GELU(gate), product
        wide=c * n,
    )


def _sample(u: _Walker, tag: str, h: int, w: int, stride: int) -> None:
    """Down (stride 2 conv) or up (nearest ×2, then conv) sampling; the conv saves its input."""
    c, n_in = u.c, u.n
    u.conv(tag, c, c, 3)
    u.h, u.w = h, w
    saved = c * (n_in if stride == 2 else u.n)
    u.row(tag, live=c * n_in + 2 * c * u.n, saved=saved)


def build_sd15_unet(image: tuple[int, int]) -> CnnSpec:
    """SD 1.5's UNet for an ``image`` (height, width) in pixels: a latent of ``image // 8``."""
    if image[0] % VAE_FACTOR or image[1] % VAE_FACTOR or min(image) < 8 * VAE_FACTOR:
        raise BudgetError(
            "--image",
            f"image {image[0]}x{image[1]} does not suit sd15-unet: height and width must be "
            "multiples of 8 of at least 64 (the VAE downsamples 8×; 512x512 is the default).",
        )
    u = _Walker(LATENT_CHANNELS, image[0] // VAE_FACTOR, image[1] // VAE_FACTOR)
    w0 = WIDTHS[0]
    u.linear("time_embedding.linear_1", w0, TIME_WIDTH)
    u.linear("time_embedding.linear_2", TIME_WIDTH, TIME_WIDTH)
    u.conv("conv_in", LATENT_CHANNELS, w0, 3, per_layer=False)
    u.c = w0
    u.row("conv_in", live=(LATENT_CHANNELS + w0) * u.n, saved=LATENT_CHANNELS * u.n)
    u.skips.append((u.c, u.h, u.w))
    last = len(WIDTHS) - 1
    for level, width in enumerate(WIDTHS):
        for i in range(DOWN_BLOCKS):
            tag = f"down{level}.{i}"
            _resnet(u, tag + ".resnet", width)
            if level < ATTENTION_LEVELS:
                _transformer(u, tag + ".attn")
            u.skips.append((u.c, u.h, u.w))
        if level < last:
            _sample(u, f"down{level}.downsample", -(-u.h // 2), -(-u.w // 2), 2)
            u.skips.append((u.c, u.h, u.w))
    _resnet(u, "mid.resnet0", WIDTHS[-1])
    _transformer(u, "mid.attn")
    _resnet(u, "mid.resnet1", WIDTHS[-1])
    for up, width in enumerate(reversed(WIDTHS)):
        level = last - up
        for i in range(UP_BLOCKS):
            tag = f"up{up}.{i}"
            u.c += u.skips.pop()[0]  # concatenated with the skip; the cat is new memory
            _resnet(u, tag + ".resnet", width)
            if level < ATTENTION_LEVELS:
                _transformer(u, tag + ".attn")
        if level:
            _, h, w = u.skips[-1]  # upsample to the skip's size
            _sample(u, f"up{up}.upsample", h, w, 1)
    c = u.c
    u.norm("conv_norm_out", c)
    u.conv("conv_out", c, LATENT_CHANNELS, 3, per_layer=False)
    u.c = LATENT_CHANNELS
    u.row("conv_out", live=3 * c * u.n, saved=c * u.n, wide=2 * c * u.n)
    latent = f"{image[0] // VAE_FACTOR}×{image[1] // VAE_FACTOR}"
    tokens = (image[0] // VAE_FACTOR) * (image[1] // VAE_FACTOR)
    return CnnSpec(
        "sd15-unet",
        tuple(u.rows),
        image,
        tuple(u.params),
        note=(
            f"Stable Diffusion 1.5 UNet: image {image[0]}x{image[1]} → latent "
            f"{LATENT_CHANNELS}×{latent}, {tokens} tokens of "
            f"self-attention at the first level, cross-attention to {TEXT_TOKENS} text "
            f"tokens of width {TEXT_WIDTH}; the text encoder and the VAE are not counted."
        ),
    )
