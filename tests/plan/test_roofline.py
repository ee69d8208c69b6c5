"""Roofline arithmetic on small hand-computed cases."""

from __future__ import annotations

import pytest

from gpuwatch.budget.catalog import lookup_model
from gpuwatch.budget.estimator import estimate
from gpuwatch.budget.gpus import GPUS
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.flops import cnn_forward_flops, matmul_params, micro_step
from gpuwatch.plan.hardware import SHEETS, catalog, hardware_for
from gpuwatch.plan.roofline import Efficiency, comm_bytes, ring, step_time

TINY = TransformerSpec("tiny", layers=2, hidden=64, heads=4, vocab=100, ffn=256, bias=False,
                       tied_embeddings=True)
# parameters: embedding 100·64 = 6,400; per layer q,k,v,o 4·64² = 16,384 and MLP
# 2·64·256 = 32,768; LayerNorms 2·2·64 per layer and 2·64 final
N = 6_400 + 2 * (16_384 + 32_768) + 4 * 128 + 128
B, S = 2, 8
DENSE = 2 * N * B * S  # forward matmuls
ATTN = 4 * B * S * S * 64 * 2  # QKᵀ and P·V, 2 layers


def est(setup: Setup, **wl):
    return estimate(TINY, Workload("train", batch=B, seq=S, **wl), setup)


def test_the_tiny_model_has_the_hand_counted_parameters():
    assert TINY.params == N == 105_344
    assert matmul_params(TINY) == N  # tied: the embedding is the output head


@pytest.mark.parametrize("setup, flops", [
    (Setup(precision="fp32"), 3 * DENSE + 3 * ATTN),  # 6·N·tokens + 3× attention
    (Setup(precision="fp32", checkpointing="full"), 4 * DENSE + 4 * ATTN),  # +1 forward
    (Setup(precision="fp32", checkpointing="selective"), 3 * DENSE + 4 * ATTN),
    (Setup(precision="bf16", lora_rank=4), 2 * DENSE + 3 * ATTN),  # no weight gradients
])
def test_training_flops(setup, flops):
    assert micro_step(TINY, est(setup)).flops == flops


def test_tensor_parallel_splits_the_flops():
    whole = micro_step(TINY, est(Setup(precision="fp32"))).flops
    assert micro_step(TINY, est(Setup(precision="fp32", tp=2))).flops == whole / 2


def test_decoding_flops_and_bytes():
    e = estimate(TINY, Workload("infer", batch=4, seq=16, context=32), Setup(precision="bf16"))
    m = micro_step(TINY, e)
    assert m.flops == 2 * N * 4 + 4 * 4 * 1 * 32 * 64 * 2
    assert m.bytes_moved == e.breakdown.parameters + e.breakdown.kv_cache
    assert m.tokens == 4


def test_step_time_is_the_larger_roof_plus_communication():
    e = est(Setup(precision="bf16"))
    hw = hardware_for("H100-80GB")
    eff = Efficiency(compute=0.5, bandwidth=0.8)
    t = step_time(TINY, e, hw, 3, eff, 1)
    m = micro_step(TINY, e)
    # a decoder's flash attention skips the masked half of the counted attention FLOPs
    compute = (m.flops - m.other_flops / 2) / (989.4e12 * 0.5)
    memory = m.bytes_moved / (3.35e12 * 0.8)
    assert t.compute_s == pytest.approx(3 * compute)
    assert t.micro_s == pytest.approx(max(compute, memory))
    assert t.total_s == pytest.approx(3 * max(compute, memory) + t.optimizer_s)
    assert t.comm_s == 0 and t.bound in ("compute", "memory")


def test_data_parallel_all_reduce_volume_and_time():
    e = est(Setup(precision="mixed-bf16", dp=4))
    # ring all-reduce: each GPU sends 2·(n−1)/n of the bf16 gradients
    assert comm_bytes(TINY, e, 1) == pytest.approx(2 * 0.75 * N * 2)
    z3 = est(Setup(precision="mixed-bf16", dp=4, zero=3))
    # ZeRO-3, per micro-batch: weights gathered twice, gradients reduce-scattered
    assert comm_bytes(TINY, z3, 2) == pytest.approx(2 * (2 * 0.75 * N * 2 + 0.75 * N * 2))
    t = step_time(TINY, e, hardware_for("H100-80GB"), 1, Efficiency(), 4)
    assert t.comm_s == pytest.approx(1.5 * N * 2 / 450e9)  # NVLink 4, one direction
    pcie = step_time(TINY, e, hardware_for("RTX-4090"), 1, Efficiency(), 4)
    assert pcie.link_bytes_per_s == 32e9


def test_ring_shares():
    assert ring(1) == 0 and ring(2) == 0.5 and ring(8) == 0.875


def test_figures_of_merit():
    h100 = hardware_for("H100")
    assert h100.ridge_point("amp-bf16") == pytest.approx(989.4e12 / 3.35e12)  # ≈ 295 FLOPs/B
    assert h100.ridge_point("fp32") == pytest.approx(67e12 / 3.35e12)
    assert h100.bandwidth_per_gb() == pytest.approx(3.35e12 / (80 * 2**30 / 1e9) / 1e9)
    assert hardware_for("V100-32GB").peak_flops("bf16")[1].startswith("fp32")
    assert hardware_for("T4").peak_flops("amp-fp16") == (65e12, "fp16")


def test_every_budget_catalog_gpu_has_a_data_sheet_with_a_named_source():
    assert {g.name for g in GPUS} == set(SHEETS)  # a renamed or added GPU fails here
    assert [h.name for h in catalog()] == [g.name for g in GPUS]
    assert all(h.sheet.source and h.sheet.fp32_flops > 0 for h in catalog())


@pytest.mark.parametrize("model, published_gflops, tolerance", [
    ("resnet-18", 2 * 1.82, 0.01),   # torchvision: 1.82 GMACs at 224×224
    ("resnet-50", 2 * 4.09, 0.01),   # torchvision: 4.09 GMACs
    ("vgg-16", 2 * 15.47, 0.01),     # torchvision: 15.47 GMACs
    ("yolov5s", 16.5, 0.07),         # Ultralytics README at 640: 16.5 GFLOPs (thop)
    ("yolov5l", 109.1, 0.07),
])
def test_cnn_flops_match_published_counts(model, published_gflops, tolerance):
    assert cnn_forward_flops(lookup_model(model)) / 1e9 == pytest.approx(
        published_gflops, rel=tolerance)


def test_offloading_adds_its_pcie_traffic():
    hw = hardware_for("RTX-4090")
    plain = est(Setup(precision="mixed-bf16"))
    opt = est(Setup(precision="mixed-bf16", offload="optimizer"))
    t = step_time(TINY, opt, hw, 2, Efficiency(), 1)
    # gradients (2 B) down and weights (2 B) up, once per step, over PCIe 4.0 x16
    assert t.offload_bytes == N * (2 + 2)
    assert t.offload_s == pytest.approx(N * 4 / 32e9)
    assert step_time(TINY, plain, hw, 2, Efficiency(), 1).offload_s == 0
    params = est(Setup(precision="mixed-bf16", offload="params", zero=3))
    tp = step_time(TINY, params, hw, 2, Efficiency(), 1)
    # and the weights come up for the forward and the backward pass of each micro-batch
    assert tp.offload_bytes == N * 4 + 2 * 2 * N * 2
    assert tp.total_s == pytest.approx(tp.busy_s + tp.comm_s + tp.offload_s)


def test_inference_reports_the_prompt_prefill_apart_from_the_decoding_step():
    e = estimate(TINY, Workload("infer", batch=4, seq=16, context=32), Setup(precision="bf16"))
    hw = hardware_for("H100-80GB")
    eff = Efficiency(compute=0.5, bandwidth=0.8)
    t = step_time(TINY, e, hw, 1, eff, 1)
    flops = 2 * N * 4 * 16 + 4 * 4 * 16 * 16 * 64 * 2  # the prompt's forward pass
    assert t.prefill_s == pytest.approx(max(flops / (989.4e12 * 0.5),
                                            e.breakdown.parameters / (3.35e12 * 0.8)))
    assert t.total_s == pytest.approx(t.micro_s)  # the decoding step alone
    assert step_time(TINY, est(Setup(precision="bf16")), hw, 1, eff, 1).prefill_s == 0
