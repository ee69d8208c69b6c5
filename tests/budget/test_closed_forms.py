"""Table-driven checks of the budget's closed forms."""

from __future__ import annotations

import pytest

from gpuwatch.budget import (
    CnnSpec,
    Setup,
    TransformerSpec,
    Workload,
    estimate,
    lookup_model,
    max_batch_size,
    max_sequence_length,
    spec_from_params,
    training_bytes_per_param,
)
from gpuwatch.budget.activations import ActivationOptions, head_activations, layer_activations
from gpuwatch.budget.precision import get_optimizer, get_precision
from gpuwatch.core.units import format_bytes

GIB = 1024**3


def test_one_billion_fp32_params_is_3_73_gib():
    spec = spec_from_params(1e9)
    e = estimate(spec, Workload(mode="infer"), Setup(precision="fp32"))
    assert e.breakdown.parameters == 4_000_000_000
    assert format_bytes(e.breakdown.parameters, digits=2) == "3.73 GiB"
    assert format_bytes(e.breakdown.parameters, "si", digits=2) == "4.00 GB"


@pytest.mark.parametrize(
    ("precision", "optimizer", "total"),
    [
        ("fp32", "adamw", 16),
        ("amp-bf16", "adamw", 16),
        ("mixed-bf16", "adamw", 16),
        ("bf16", "adamw", 8),
        ("fp32", "sgd", 8),
        ("fp32", "momentum", 12),
        ("fp32", "lion", 12),
        ("mixed-fp16", "sgd", 8),
        ("fp32", "adam8bit", 10 + 8 / 2048),
    ],
)
def test_bytes_per_param(precision, optimizer, total):
    assert training_bytes_per_param(
        get_precision(precision), get_optimizer(optimizer)
    ) == pytest.approx(total)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("gpt2", 124_439_808),
        ("llama-3.1-8b", 8_030_261_248),
        ("vit-b-16", 86_567_656),
        ("t5-base", 222_903_552),
        ("resnet-18", 11_689_512),
        ("resnet-50", 25_557_032),
        ("resnet-101", 44_549_160),
        ("vgg-16", 138_357_544),
        ("yolov5s", 7_235_389),
        ("yolov5m", 21_190_557),
        ("yolov5l", 46_563_709),
        ("llama-2-7b", 6_738_415_616),
        ("mistral-7b", 7_241_732_096),
        ("mixtral-8x7b", 46_702_792_704),
        ("sd15-unet", 859_520_964),
    ],
)
def test_catalog_parameter_counts(name, params):
    assert lookup_model(name).params == params


PSI = 7_500_000_000


# (stage, DeepSpeed 0.19.8's estimators, the ZeRO paper), GB for Ψ = 7.5e9 on N = 64
ZERO_FIGURES = [(0, 120.0, 120.0), (1, 31.875, 31.4), (2, 17.11, 16.6), (3, 2.11, 1.875)]


@pytest.mark.parametrize(("zero", "deepspeed", "paper"), ZERO_FIGURES)
def test_zero_stages_match_deepspeed_and_name_the_paper(zero, deepspeed, paper):
    """Stage 1: 4Ψ + 16Ψ/N; stage 2: 2Ψ + 18Ψ/N (an fp32 gradient partition beside the
    16-bit one); stage 3: 18Ψ/N + 4 B × the largest module. The note gives the paper's
    4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N and 16Ψ/N where they differ."""
    from gpuwatch.budget.states import gathered_bytes

    spec = spec_from_params(PSI)
    setup = Setup(
        precision="mixed-fp16", optimizer="adam", zero=zero, dp=64, foreach_optimizer=False
    )
    e = estimate(spec, Workload(), setup)
    b = e.breakdown
    states = b.parameters + b.gradients + b.optimizer_states
    if zero == 3:
        gathered = gathered_bytes(spec, setup)
        assert gathered == 4 * spec.vocab * spec.hidden  # the largest module: an embedding
        states -= gathered
    assert states / 1e9 == pytest.approx(deepspeed, rel=0.005)
    note = next((n for n in e.notes if n.startswith(f"ZeRO-{zero} counted")), None)
    if zero:
        shown_paper = float(note.rsplit("gives ", 1)[1].split(" GiB")[0]) * 2**30 / 1e9
        assert shown_paper == pytest.approx(paper, rel=0.01)
    else:
        assert note is None


@pytest.mark.parametrize("offload", ["optimizer", "params"])
@pytest.mark.parametrize("zero", [2, 3])
def test_offload_keeps_no_gradient_partition_on_the_gpu(offload, zero):
    """DeepSpeed's offload estimators: stage 2 → 2Ψ on the GPU; stage 3 → 2Ψ/N + 4 B ×
    largest module (optimizer offload) or 4 B × largest module (parameters too)."""
    from gpuwatch.budget.states import gathered_bytes

    if offload == "params" and zero != 3:
        return
    spec = spec_from_params(PSI)
    setup = Setup(precision="mixed-fp16", optimizer="adam", zero=zero, dp=64, offload=offload,
                  foreach_optimizer=False)
    b = estimate(spec, Workload(), setup).breakdown
    assert b.gradients == 0 and b.optimizer_states == 0
    expected = {2: 2 * spec.params, 3: 2 * spec.params / 64 + gathered_bytes(spec, setup)}[zero]
    if offload == "params":
        expected = gathered_bytes(spec, setup)
    assert b.parameters == pytest.approx(expected, rel=1e-6)


def _korthikanti(s, b, h, a, t=1, sp=False, selective=False):
    if sp:
        return s * b * h / t * (34 + (0 if selective else 5 * a * s / h))
    return s * b * h * (10 + 24 / t + (0 if selective else 5 * a * s / (h * t)))


@pytest.mark.parametrize("t", [1, 2, 4, 8])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("selective", [False, True])
def test_korthikanti_per_layer(t, sp, selective):
    spec = TransformerSpec("gpt3", 96, 12288, 96, 51200, dropout=0.1)
    p = get_precision("bf16")
    opt = ActivationOptions(
        flash=False, tp=t, sequence_parallel=sp, checkpointing="selective" if selective else "none"
    )
    la = layer_activations(spec, p, opt, 1, 2048)
    assert la.total(opt) == pytest.approx(
        _korthikanti(2048, 1, 12288, 96, t, (sp and t > 1) or sp, selective)
    )


def test_full_recompute_keeps_layer_input():
    """Each layer keeps its input; the re-run of one layer (its saved tensors and its
    output's gradient) comes after the head and loss are done, never on top of them;
    its largest weight's gradient (one MLP matrix) is made on top of the re-run."""
    spec = TransformerSpec("x", 24, 1024, 16, 0, dropout=0.1, arch="encoder")
    full = estimate(spec, Workload(batch=2, seq=512), Setup(precision="bf16", checkpointing="full"))
    none = estimate(spec, Workload(batch=2, seq=512), Setup(precision="bf16"))
    la = layer_activations(spec, get_precision("bf16"), ActivationOptions(), 2, 512)
    layer_input = 2 * 512 * 1024 * 2
    head = head_activations(spec, get_precision("bf16"), 2, 512)
    first_backward = 2 * 2 * 512 * spec.ffn_size  # no loss here: without recompute the
    rest = (none.breakdown.activations  # first layer's backward peaks
            - first_backward - 24 * la.total(ActivationOptions()) - head)
    rerun = la.total(ActivationOptions()) + layer_input
    weight_grad = spec.ffn_size * spec.hidden * 2
    assert full.breakdown.activations == pytest.approx(
        rest + 24 * layer_input + max(head, rerun, rerun + weight_grad), rel=1e-9)


def test_flash_attention_removes_the_s_squared_term():
    spec = lookup_model("gpt2")
    wl = Workload(batch=4, seq=1024)
    eager = estimate(spec, wl, Setup(precision="bf16", flash_attention=False))
    flash = estimate(spec, wl, Setup(precision="bf16"))
    assert (
        eager.breakdown.activations - flash.breakdown.activations > 12 * 5 * 12 * 1024**2 * 4 * 0.9
    )


@pytest.mark.parametrize(
    ("name", "gib_per_1k"),
    [("llama-3.1-8b", 0.125), ("llama-2-7b", 0.5), ("llama-3.1-70b", 0.3125)],
)
def test_gqa_kv_cache(name, gib_per_1k):
    e = estimate(
        lookup_model(name), Workload(mode="infer", seq=1, context=1024), Setup(precision="bf16")
    )
    assert e.breakdown.kv_cache / GIB == pytest.approx(gib_per_1k)


def test_kv_cache_tensor_parallel_and_fp8():
    spec = lookup_model("llama-3.1-8b")
    wl = Workload(mode="infer", batch=4, seq=1, context=4096)
    base = estimate(spec, wl, Setup(precision="bf16")).breakdown.kv_cache
    assert estimate(spec, wl, Setup(precision="bf16", tp=2)).breakdown.kv_cache == base // 2
    assert (
        estimate(spec, wl, Setup(precision="bf16", kv_precision="fp8")).breakdown.kv_cache
        == base // 2
    )


@pytest.mark.parametrize("capacity_gib", [24, 40, 80])
@pytest.mark.parametrize(
    ("name", "precision", "flash"),
    [
        ("gpt2", "amp-bf16", False),
        ("llama-2-7b", "bf16", True),
        ("resnet-50", "fp32", False),
    ],
)
def test_max_batch_is_the_largest_that_fits(capacity_gib, name, precision, flash):
    spec = lookup_model(name)
    cap = capacity_gib * GIB
    setup = Setup(precision=precision, flash_attention=flash)
    e = estimate(spec, Workload(batch=1, seq=1024), setup)
    b = max_batch_size(e, cap)
    if b == 0:
        assert (
            e.total_bytes > cap
            or estimate(spec, Workload(batch=1, seq=1024), setup).total_bytes > cap
        )
        return
    assert estimate(spec, Workload(batch=b, seq=1024), setup).total_bytes <= cap
    # A CNN's backward sweep holds fewer late-layer gradients beyond its activations as
    # the batch grows, which the solver's line from batch 1 does not see: its answer
    # fits and may be one short of the largest batch that does (never more).
    slack = 1 if isinstance(spec, CnnSpec) else 0
    assert estimate(spec, Workload(batch=b + slack + 1, seq=1024), setup).total_bytes > cap


@pytest.mark.parametrize("flash", [False, True])
def test_max_sequence_is_the_longest_that_fits(flash):
    spec = lookup_model("gpt2-medium")
    setup = Setup(precision="amp-bf16", flash_attention=flash)
    cap = 24 * GIB
    e = estimate(spec, Workload(batch=2, seq=512), setup)
    s = max_sequence_length(spec, e, cap)
    assert s and s > 0
    assert estimate(spec, Workload(batch=2, seq=s), setup).total_bytes <= cap
    assert estimate(spec, Workload(batch=2, seq=s + 2), setup).total_bytes > cap


def test_peak_is_sum_less_overlap():
    e = estimate(lookup_model("gpt2"), Workload(batch=8, seq=1024), Setup())
    assert e.total_bytes == e.breakdown.sum - e.overlap_bytes
    assert e.overlap_bytes >= 0
    acc = estimate(lookup_model("gpt2"), Workload(batch=8, seq=1024, grad_accum=4), Setup())
    assert acc.total_bytes > e.total_bytes  # gradients live through the forward pass


def test_lora_and_quantized_training():
    spec = lookup_model("llama-3.1-8b")
    q = estimate(spec, Workload(seq=1024), Setup(precision="int4", lora_rank=16))
    assert q.trainable_params < 0.01 * spec.params
    assert q.breakdown.parameters < 0.4 * spec.params * 2  # 4-bit blocks, 16-bit embeddings


def test_sparsity_index_overhead():
    spec = lookup_model("llama-2-7b")
    dense = estimate(spec, Workload(mode="infer"), Setup(precision="bf16"))
    sparse = estimate(spec, Workload(mode="infer"), Setup(precision="bf16", sparsity=0.5))
    assert 0.55 < sparse.breakdown.parameters / dense.breakdown.parameters < 0.62


def test_min_gpus_zero3_is_the_fewest():
    from gpuwatch.budget import min_gpus_zero3

    spec = lookup_model("llama-3.1-8b")
    e = estimate(
        spec,
        Workload(batch=1, seq=2048),
        Setup(precision="mixed-bf16", flash_attention=True, checkpointing="full"),
    )
    cap = 24 * GIB
    n = min_gpus_zero3(spec, e, cap)
    assert n and n > 1
    wl = Workload(batch=1, seq=2048)
    assert (
        estimate(
            spec,
            wl,
            Setup(precision="mixed-bf16", flash_attention=True, checkpointing="full", zero=3, dp=n),
        ).total_bytes
        <= cap
    )
    assert (
        estimate(
            spec,
            wl,
            Setup(
                precision="mixed-bf16", flash_attention=True, checkpointing="full", zero=3, dp=n - 1
            ),
        ).total_bytes
        > cap
    )
