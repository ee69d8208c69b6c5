"""FP8 and TF32, layouts beyond one node, overlap and the pipeline bubble, and the
efficiency by kind of model: hand-checkable cases and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.budget.catalog import lookup_model
from gpuwatch.budget.estimator import estimate
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.comm import CommPart, Links, comm_parts
from gpuwatch.plan.efficiency import CNN, LARGE, MEDIUM, family
from gpuwatch.plan.hardware import SHEETS, hardware_for
from gpuwatch.plan.layouts import Estimates, Layout, evaluate, layouts
from gpuwatch.plan.planner import PlanInput, make_plan
from gpuwatch.plan.roofline import Efficiency, step_time, virtual_stages
from gpuwatch.plan.scale import MAX_GPUS

TINY = TransformerSpec("tiny", layers=8, hidden=64, heads=8, vocab=100, ffn=256, bias=False)


@pytest.mark.parametrize("gpu, fp8_tflops", [
    ("H100-80GB", 1978.9), ("H200", 1978.9), ("L40S", 733), ("MI300X", 2614.9),
    ("H100-PCIe", 1513),
])
def test_fp8_peaks_are_the_data_sheets_dense_figures(gpu, fp8_tflops):
    peaks = hardware_for(gpu).peaks("fp8")
    assert peaks.matmul == fp8_tflops * 1e12 and peaks.matmul_format == "fp8"
    assert peaks.other_format == "bf16"  # the rest of the work stays bf16
    assert SHEETS[gpu].fp8_source  # each FP8 figure names its sheet


def test_data_sheet_fixes():
    assert SHEETS["MI300X"].fp32_flops == 163.4e12
    assert hardware_for("A100-80GB-PCIe").gpu.bandwidth_bytes_per_s == 1.935e12
    assert hardware_for("H100-PCIe").gpu.bandwidth_bytes_per_s == 2.0e12
    assert hardware_for("H100").name == "H100-80GB"  # the SXM part, as clouds mean it


def test_a_gpu_without_fp8_or_tf32_falls_back_and_says_so():
    a100 = hardware_for("A100-80GB").peaks("fp8")
    assert a100.matmul == 312e12 and "no FP8" in a100.matmul_format
    v100 = hardware_for("V100-32GB").peaks("tf32")
    assert v100.matmul == 15.7e12 and "no TF32" in v100.matmul_format


def test_tf32_for_fp32_training_and_cudnn_convolutions():
    a100 = hardware_for("A100-80GB")
    assert a100.peaks("tf32").matmul == 156e12
    assert a100.peaks("fp32").matmul == 19.5e12  # PyTorch leaves TF32 off for matmuls
    conv = a100.peaks("fp32", convolutions=True)  # cuDNN allows it by default
    assert conv.matmul == 156e12 and conv.matmul_format.startswith("tf32")


def test_fp8_weights_keep_the_bf16_weight_and_its_fp8_copy():
    spec = lookup_model("llama-3.1-8b")
    wl = Workload("train", 1, 1024)
    mixed = estimate(spec, wl, Setup(precision="mixed-bf16")).breakdown.parameters
    fp8 = estimate(spec, wl, Setup(precision="fp8")).breakdown.parameters
    assert 1.4 < fp8 / mixed < 1.5  # block matmuls 3 B instead of 2; embeddings stay 2 B
    infer = Workload("infer", 1, 1024)
    weights = estimate(spec, infer, Setup(precision="fp8-weights")).breakdown.parameters
    assert weights < 0.6 * mixed  # an inference engine keeps 1 B per block weight


def test_fp8_speeds_the_matmuls_and_not_the_attention():
    spec = lookup_model("llama-3.1-8b")
    hw = hardware_for("H100-80GB")
    wl = Workload("train", 1, 4096)
    eff = Efficiency()
    bf16 = step_time(spec, estimate(spec, wl, Setup(precision="mixed-bf16")), hw, 1, eff, 1)
    fp8 = step_time(spec, estimate(spec, wl, Setup(precision="fp8")), hw, 1, eff, 1)
    speedup = bf16.compute_s / fp8.compute_s
    assert 1.3 < speedup < 2 * eff.fp8_factor  # attention at the bf16 rate holds it back
    assert fp8.precision_format == "fp8, attention bf16"


def test_efficiency_by_kind_of_model():
    assert family(lookup_model("resnet-50")) is CNN and CNN.compute == 0.17
    assert family(lookup_model("llama-3.1-8b")) is LARGE
    assert family(lookup_model("bert-large")) is MEDIUM
    plan = make_plan(PlanInput(lookup_model("resnet-50"), Workload("train", 64),
                               Setup(), gpus=("A100-80GB",), counts=(1,)), None)
    assert plan.request.eff.compute == 0.17 and "CNN" in plan.request.eff.source
    # in plain fp32 on CUDA cores (no TF32 on Volta) a CNN's convolutions run at 50 %
    spec = lookup_model("resnet-50")
    est = estimate(spec, Workload("train", 64), Setup(precision="fp32"))
    v100 = step_time(spec, est, hardware_for("V100-32GB"), 1, plan.request.eff, 1)
    cnn_flops = v100.flops
    assert v100.compute_s == pytest.approx(cnn_flops / (15.7e12 * 0.5))
    a100 = step_time(spec, est, hardware_for("A100-80GB"), 1, plan.request.eff, 1)
    assert a100.compute_s == pytest.approx(cnn_flops / (156e12 * 0.17))  # TF32, cuDNN


def test_layouts_reach_past_one_node_in_whole_nodes():
    spec = lookup_model("llama-3.1-70b")
    hw = hardware_for("H100-80GB")
    found = layouts(spec, hw, 64, True, seq=8192)
    assert found and all(x.gpus == 64 and x.tp <= 8 for x in found)
    assert any(x.pp > 1 for x in found) and any(x.zero == 3 for x in found)
    assert all(x.zero <= 1 for x in found if x.pp > 1)  # ZeRO-2/3 do not combine with PP
    twelve = layouts(spec, hw, 12, True)  # a node and a half: the last node part-used
    assert twelve and all(x.gpus == 12 and x.tp <= 4 for x in twelve)
    long = layouts(spec, hw, 64, True, seq=65536)
    assert any(x.cp > 1 for x in long)  # context parallel for long sequences


def test_a_70b_model_on_64_h100s_fits_and_sends_over_the_network():
    spec = lookup_model("llama-3.1-70b")
    hw = hardware_for("H100-80GB")
    cache = Estimates(spec, Workload("train", 128, 4096), Setup(precision="mixed-bf16"))
    config = evaluate(spec, cache, hw, 64, Efficiency())
    assert config.fits and config.nodes == 8 and config.peak_bytes <= hw.gpu.memory_bytes
    assert config.step is not None and config.step.network_bytes_per_s == 50e9
    slow = evaluate(spec, cache, hw, 64, Efficiency(), network=5e9)  # 40 Gb/s Ethernet
    assert slow.step is not None and slow.step.total_s >= config.step.total_s


def test_data_parallel_reduction_hides_behind_the_backward_pass_but_its_last_bucket():
    spec = lookup_model("llama-3.1-8b")
    est = estimate(spec, Workload("train", 1, 1024), Setup(precision="mixed-bf16", dp=2))
    (part,) = comm_parts(spec, est, 1, 8, backward_s=10.0, busy_s=15.0, attention_s=0.0)
    links = Links(450e9, 50e9)
    assert links.time(part) > 0 and links.exposed(part) == pytest.approx(
        part.floor_bytes / 450e9)  # a 10 s backward hides all but the last bucket
    (bare,) = comm_parts(spec, est, 1, 8, backward_s=0.0, busy_s=0.0, attention_s=0.0)
    assert links.exposed(bare) == pytest.approx(links.time(bare))


@pytest.mark.parametrize("pp, virtual", [(1, 1), (2, 2), (4, 1), (8, 1)])
def test_the_interleaved_pipeline_bubble(pp, virtual):
    assert virtual_stages(TINY, pp) == virtual  # 8 layers: two per chunk
    est = estimate(TINY, Workload("train", 1, 64), Setup(precision="bf16", pp=pp))
    t = step_time(TINY, est, hardware_for("H100-80GB"), 16, Efficiency(), pp)
    assert t.bubble_s == pytest.approx((pp - 1) * t.micro_s / virtual)
    assert t.busy_s == pytest.approx(16 * t.micro_s + t.bubble_s + t.optimizer_s)


def test_a_model_no_layout_holds_is_impossible_with_a_reason_and_levers():
    spec = lookup_model("llama-3.1-8b")
    wl = Workload("train", 1, 2**24)  # 16.7 M tokens in one sequence
    plan = make_plan(PlanInput(spec, wl, Setup(precision="mixed-bf16"), gpus=("T4",)), None)
    assert plan.beyond_node == {"T4": None}
    assert "micro-batch 1 needs" in plan.impossible["T4"]
    assert plan.levers and plan.reference is None  # what each lever saves, on one GPU
    assert MAX_GPUS == 16384


def test_a_model_that_fits_beyond_one_node_is_planned_there_not_called_impossible():
    spec = lookup_model("llama-3.1-70b")
    plan = make_plan(PlanInput(spec, Workload("train", 8, 4096), Setup(precision="mixed-bf16"),
                               gpus=("A100-40GB",)), None)
    (beyond,) = [c for c in plan.configs if c.gpus > 8]
    assert beyond.fits and plan.beyond_node["A100-40GB"] == beyond.gpus
    assert not plan.impossible


def test_layout_text_names_every_dimension():
    text = Layout(4, 8, 1, pp=2, cp=2, checkpointing="full").describe()
    assert text == "TP 8 × PP 2 × CP 2 × DP 4 ZeRO-1, full recompute"


def test_a_batch_too_small_for_the_count_is_not_called_impossible():
    plan = make_plan(PlanInput(lookup_model("gpt2"), Workload("train", 1, 512), Setup(),
                               gpus=("H100-80GB",), counts=(16384,)), None)
    (config,) = plan.configs
    assert not config.fits and "global batch of 1" in config.note
    assert plan.beyond_node == {} and plan.impossible == {}


@given(gpus=st.integers(1, 4096), model=st.sampled_from(["gpt2", "llama-3.1-70b", "bert-large",
                                                       "resnet-50", "mixtral-8x7b"]),
       gpu=st.sampled_from(["H100-80GB", "RTX-4090", "MI250X", "A100-80GB-PCIe"]),
       seq=st.sampled_from([512, 16384, 131072]), train=st.booleans())
@settings(max_examples=80, deadline=None)
def test_every_layout_uses_every_gpu_and_keeps_tensor_parallel_inside_a_node(
        gpus, model, gpu, seq, train):
    spec = lookup_model(model)
    hw = hardware_for(gpu)
    for x in layouts(spec, hw, gpus, train, seq=seq):
        assert x.gpus == gpus and x.tp <= min(hw.sheet.node, hw.sheet.fast_domain)
        assert x.pp == 1 or x.zero <= 1
        assert x.cp == 1 or (train and seq >= 16384 and seq % (2 * x.cp) == 0)
        assert x.zero == 0 or (train and x.dp > 1)


@given(size=st.floats(0, 1e13), hide=st.floats(0, 1e3), floor=st.floats(0, 1e13),
       calls=st.floats(0, 1e6), inter=st.booleans())
def test_exposed_communication_is_between_its_floor_and_its_whole_time(size, hide, floor,
                                                                       calls, inter):
    links = Links(450e9, 50e9)
    part = CommPart("x", size, inter, hide, floor, calls)
    assert 0 <= links.exposed(part) <= links.time(part) + 1e-9
    if size:
        assert links.exposed(part) >= min(size, floor) / links.of(part) - 1e-9
