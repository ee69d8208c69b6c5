"""A builder that walks a vision model op by op and writes down what autograd keeps.

Each op names the tensors it saves for backward, as PyTorch's derivative formulas do;
a tensor saved by several ops (a squeeze-excitation's pooling and its product, a
ReLU's result read by the next convolution) counts once. Every op becomes one row of
a :class:`~gpuwatch.budget.specs.CnnLayer` table, in forward order (the backward sweep
runs it from the end). What each op keeps, checked against torch's saved tensors:

* convolution and linear: their input (under autocast a 16-bit copy when the input is
  fp32, one per reader: the table's ``cast`` column for every reader after the first);
* batch norm: its input; ReLU (in place): its result, the tensor it overwrote;
  SiLU, Hardswish and ReLU6 in place: a copy of their input, made before they
  overwrite it; GELU and Hardsigmoid: their input; Sigmoid: its result;
* max pooling: its input and int64 indices of the output's size; average pooling
  (global or not): its input;
* a product of two tensors that both need gradients (squeeze-excitation, a layer
  scale): both; an add, a concatenation, a reshape or stochastic depth: nothing
  (stochastic depth keeps a mask of one element per sample);
* layer norm: its input, which CUDA's autocast first casts to fp32 (a ``wide``
  tensor: fp32 under autocast), and its output is fp32 too; dropout: its mask.

Tensors are ``act`` (the activation dtype: 16-bit under autocast) or ``wide`` (fp32
under autocast: norm outputs and what they are added to).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuwatch.budget.specs import CnnLayer, CnnSpec, ParamGroup

Kind = Literal["act", "wide"]


@dataclass(frozen=True)
class T:
    """A tensor of one sample: channels × height × width (tokens: c × n × 1)."""

    key: int
    c: int
    h: int
    w: int
    kind: Kind = "act"

    @property
    def size(self) -> int:
        return self.c * self.h * self.w


@dataclass
class _Row:
    saved: int = 0
    wide: int = 0
    cast: int = 0
    index: int = 0
    params: int = 0


@dataclass
class Net:
    """The model being walked: its rows, parameter groups and saved tensors."""

    rows: list[CnnLayer] = field(default_factory=list)
    params: list[ParamGroup] = field(default_factory=list)
    _saved: set[int] = field(default_factory=set)
    _read: set[int] = field(default_factory=set)  # wide tensors a matmul has read
    _next: int = 0

    # ---------------------------------------------------------------- bookkeeping
    def tensor(self, c: int, h: int, w: int, kind: Kind = "act") -> T:
        self._next += 1
        return T(self._next, c, h, w, kind)

    def like(self, x: T, c: int | None = None, kind: Kind | None = None) -> T:
        return self.tensor(x.c if c is None else c, x.h, x.w, kind or x.kind)

    def _keep(self, r: _Row, x: T) -> None:
        if x.key in self._saved:
            return
        self._saved.add(x.key)
        if x.kind == "wide":
            r.wide += x.size
        else:
            r.saved += x.size

    def _keep_for_matmul(self, r: _Row, x: T) -> None:
        if x.kind == "act":
            self._keep(r, x)
        elif x.key in self._read or x.key in self._saved:  # autocast casts for each reader
            r.cast += x.size
        else:
            self._read.add(x.key)
            r.saved += x.size

    def _emit(self, name: str, r: _Row, out: T) -> T:
        self.rows.append(CnnLayer(name, r.saved, r.params, r.index, out.size,
                                  wide=r.wide, cast=r.cast))
        return out

    def spec(self, name: str, image: tuple[int, int], note: str = "") -> CnnSpec:
        return CnnSpec(name, tuple(self.rows), image, tuple(self.params), note)

    # ---------------------------------------------------------------- ops
    def conv(self, name: str, x: T, cout: int, k: int, stride: int = 1,
             groups: int = 1, bias: bool = False, pad: int | None = None,
             dilation: int = 1) -> T:
        pad = (k - 1) // 2 * dilation if pad is None else pad
        span = dilation * (k - 1) + 1
        h = (x.h + 2 * pad - span) // stride + 1
        w = (x.w + 2 * pad - span) // stride + 1
        r = _Row(params=cout * (x.c // groups) * k * k + (cout if bias else 0))
        self.params.append(ParamGroup(name, cout, x.c // groups * k * k, 1, "conv", kernel=k))
        if bias:
            self.params.append(ParamGroup(name + ".bias", cout, 1, 1, "bias"))
        self._keep_for_matmul(r, x)
        return self._emit(name, r, self.tensor(cout, h, w))

    def linear(self, name: str, x: T, cout: int, bias: bool = True,
               per_layer: bool = True) -> T:
        r = _Row(params=x.c * cout + (cout if bias else 0))
        self.params.append(ParamGroup(name, x.c, cout, 1, "linear", per_layer))
        if bias:
            self.params.append(ParamGroup(name + ".bias", cout, 1, 1, "bias", per_layer))
        self._keep_for_matmul(r, x)
        return self._emit(name, r, self.tensor(cout, x.h, x.w))

    def norm(self, name: str, x: T, layer: bool = False, affine: bool = True) -> T:
        """Batch norm keeps its input; layer norm an fp32 input and gives an fp32 output."""
        r = _Row(params=2 * x.c if affine else 0)
        if affine:
            self.params.append(ParamGroup(name, 2 * x.c, 1, 1, "norm"))
        if layer:
            if x.key not in self._saved:
                self._saved.add(x.key)
                r.wide += x.size
            return self._emit(name, r, self.like(x, kind="wide"))
        self._keep(r, x)
        return self._emit(name, r, self.like(x))

    def act(self, name: str, x: T, fn: str) -> T:
        """An activation as torchvision applies it (``relu``, ``relu6``, ``silu``,
        ``hardswish`` in place; ``gelu``, ``sigmoid``, ``hardsigmoid`` and ``relu-new``,
        a ReLU not in place)."""
        r = _Row()
        if fn == "relu":  # in place: keeps its result, the storage it overwrote
            self._keep(r, x)
            return self._emit(name, r, x)
        if fn in ("relu6", "silu", "hardswish"):  # in place: a copy of its input first
            r.saved += x.size if x.kind == "act" else 0
            r.wide += x.size if x.kind == "wide" else 0
            return self._emit(name, r, self.like(x))
        if fn in ("sigmoid", "relu-new"):  # keep their result (a new tensor)
            out = self.like(x)
            self._keep(r, out)
            return self._emit(name, r, out)
        self._keep(r, x)  # gelu, hardsigmoid, relu (not in place)
        return self._emit(name, r, self.like(x))

    def mul(self, name: str, x: T, other: T, out_kind: Kind | None = None) -> T:
        """A product where both factors need gradients: both are kept."""
        r = _Row()
        self._keep(r, x)
        self._keep(r, other)
        return self._emit(name, r, self.like(x, kind=out_kind))

    def matmul(self, name: str, a: T, b: T, c: int, kind: Kind = "act") -> T:
        """A product of two activations (attention's q·kᵀ, p·v): keeps both, as a
        matmul keeps its inputs; the result has ``c`` elements per row of ``a``."""
        r = _Row()
        self._keep_for_matmul(r, a)
        self._keep_for_matmul(r, b)
        return self._emit(name, r, self.tensor(c, a.h, a.w, kind))

    def scale(self, name: str, x: T, numel: int) -> T:
        """A product with an fp32 parameter (a layer scale): keeps ``x``; the result is
        fp32 under autocast (type promotion)."""
        r = _Row(params=numel)
        self.params.append(ParamGroup(name, numel, 1, 1, "other"))
        self._keep(r, x)
        return self._emit(name, r, self.like(x, kind="wide"))

    def add(self, name: str, x: T, other: T) -> T:
        kind: Kind = "wide" if "wide" in (x.kind, other.kind) else "act"
        return self._emit(name, _Row(), self.like(x, kind=kind))

    def cat(self, name: str, parts: list[T]) -> T:
        x = parts[0]
        kind: Kind = "wide" if any(p.kind == "wide" for p in parts) else "act"
        return self._emit(name, _Row(), self.tensor(sum(p.c for p in parts), x.h, x.w, kind))

    def maxpool(self, name: str, x: T, k: int, stride: int, pad: int = 0,
                ceil: bool = False) -> T:
        r = _Row()
        self._keep(r, x)
        span = x.h + 2 * pad - k, x.w + 2 * pad - k
        h, w = ((-(-s // stride) if ceil else s // stride) + 1 for s in span)
        out = self.tensor(x.c, h, w)
        r.index = out.size
        return self._emit(name, r, out)

    def avgpool(self, name: str, x: T, h: int = 1, w: int = 1) -> T:
        """Average pooling (global, or to/by a size): keeps its input."""
        r = _Row()
        self._keep(r, x)
        return self._emit(name, r, self.tensor(x.c, h, w, x.kind))

    def attention(self, name: str, qkv: T, heads: int) -> T:
        """``scaled_dot_product_attention`` over a packed q/k/v (``c`` = 3 × width): it
        keeps q, k and v (views of one buffer) and, fused, its output and an fp32
        log-sum-exp per head (eager: the heads·n² probabilities). Its output is laid out
        as q is, so the projection after it keeps the same storage (counted there)."""
        r = _Row()
        self._keep(r, qkv)
        width, n = qkv.c // 3, qkv.h * qkv.w
        self.rows.append(CnnLayer(name, r.saved, 0, 0, width * n,
                                  stats=heads * n, scores=heads * n * n))
        return self.tensor(width, qkv.h, qkv.w)

    def dropout(self, name: str, x: T, p: float) -> T:
        r = _Row()
        if p > 0:
            r.saved += x.size  # the mask, in the input's dtype on the CPU (CUDA: 1 byte)
        return self._emit(name, r, self.like(x))

    def reshape(self, x: T, c: int, h: int, w: int = 1) -> T:
        return T(x.key, c, h, w, x.kind)

    def param(self, name: str, numel: int, kind: str = "other") -> None:
        """A free parameter (class token, positions, layer scale): no activation."""
        self.params.append(ParamGroup(name, numel, 1, 1, kind))  # type: ignore[arg-type]
        self.rows.append(CnnLayer(name, 0, numel))
