"""Traced attention takes the fused kernel CUDA would take (``CudaAttention``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from gpuwatch.probe.cuda_autocast import CudaAttention  # noqa: E402

F = torch.nn.functional


class _Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def _attend(qk: int, v: int, b: int, h: int, s: int, mask: bool):
    with FakeTensorMode():
        q = torch.randn(b, h, s, qk, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, h, s, qk, dtype=torch.bfloat16, requires_grad=True)
        val = torch.randn(b, h, s, v, dtype=torch.bfloat16, requires_grad=True)
        causal = torch.ones(s, s, dtype=torch.bool).tril()[None, None] if mask else None
        with CudaAttention(), _Ops() as ops:
            out = F.scaled_dot_product_attention(q, k, val, attn_mask=causal)
            out.sum().backward()
        assert out.shape == (b, h, s, v)
        assert q.grad.shape == q.shape and val.grad.shape == val.shape
        return ops.names


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([(192, 128), (128, 64), (96, 128)]), st.integers(1, 3),
       st.integers(1, 4), st.integers(1, 64), st.booleans())
def test_differing_value_heads_run_the_memory_efficient_kernel(dims, b, h, s, mask):
    names = _attend(*dims, b, h, s, mask)
    assert "_scaled_dot_product_efficient_attention" in names
    assert "_softmax" not in names and "_safe_softmax" not in names  # no a·s² probabilities


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([64, 128]), st.integers(1, 64))
def test_equal_heads_keep_the_cpus_own_fused_kernel(d, s):
    assert "_scaled_dot_product_efficient_attention" not in _attend(d, d, 1, 2, s, False)


def test_unaligned_heads_fall_back_as_cuda_would():
    assert "_scaled_dot_product_efficient_attention" not in _attend(20, 12, 1, 2, 16, False)
