"""The probe inside a real PyTorch process (CPU build): what it publishes, and how."""

from __future__ import annotations

import json
import os
import stat

import pytest

from gpuwatch.core.probe_format import parse_probe_report
from gpuwatch.probe import Probe, attach, detach, find_max_batch

torch = pytest.importorskip("torch", reason="the probe's facts come from PyTorch")
pytestmark = pytest.mark.torch


def small_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.LayerNorm(128),
                                torch.nn.Linear(128, 10))
    model.register_buffer("scale", torch.ones(32))
    return model


def train_step(model, optimizer, batch: int = 8) -> None:
    loss = model(torch.randn(batch, 64)).pow(2).mean()
    loss.backward()
    optimizer.step()


def test_published_bytes_match_the_module(tmp_path):
    model = small_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_step(model, optimizer)
    probe = Probe(model, optimizer, interval_s=60, directory=tmp_path)
    try:
        doc = probe.publish()
    finally:
        probe.close(withdraw=True)
    params = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    state_bytes = sum(v.numel() * v.element_size() for s in optimizer.state.values()
                      for v in s.values() if torch.is_tensor(v))
    report = parse_probe_report(doc)
    assert report.pid == os.getpid()
    m = report.model
    assert (m.parameters, m.trainable_parameters) == (params, params)
    assert m.parameter_bytes == param_bytes == m.parameter_bytes_by_dtype["float32"]
    assert m.gradient_bytes == grad_bytes
    assert m.buffer_bytes == 32 * 4 + 0            # the registered buffer
    assert report.optimizer.class_name == "AdamW"
    assert report.optimizer.state_bytes == state_bytes >= 2 * param_bytes
    assert report.optimizer.step == 1
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        assert report.allocator is not None        # CUDA in use: its allocator's figures
    else:
        assert report.allocator is None            # no CUDA in this process


def test_tied_weights_are_counted_once(tmp_path):
    emb = torch.nn.Embedding(100, 16)
    head = torch.nn.Linear(16, 100, bias=False)
    head.weight = emb.weight
    model = torch.nn.ModuleList([emb, head])
    probe = Probe(model, directory=tmp_path, interval_s=60)
    doc = probe.publish()
    probe.close(withdraw=True)
    assert doc["model"]["parameters"] == 1600


def test_injected_allocator_statistics_fill_the_cuda_fields(tmp_path):
    stats = {"allocated_bytes.all.current": 10, "allocated_bytes.all.peak": 20,
             "reserved_bytes.all.current": 64, "reserved_bytes.all.peak": 96,
             "active_bytes.all.current": 12, "active_bytes.all.peak": 22,
             "inactive_split_bytes.all.current": 30, "num_alloc_retries": 3, "num_ooms": 1}
    probe = Probe(small_model(), directory=tmp_path, interval_s=60, stats=lambda: stats)
    report = parse_probe_report(probe.publish())
    probe.close(withdraw=True)
    a = report.allocator
    assert (a.allocated_bytes, a.reserved_bytes, a.inactive_split_bytes) == (10, 64, 30)
    assert (a.num_alloc_retries, a.num_ooms, a.cached_free_bytes) == (3, 1, 54)
    stats_for_advisor = report.allocator_stats()
    assert stats_for_advisor.reserved_bytes == 64 and stats_for_advisor.allocated_bytes == 10
    assert stats_for_advisor.allocated_peak_bytes == a.allocated_peak_bytes is not None


def test_files_are_private_and_written_whole(tmp_path, monkeypatch):
    folder = tmp_path / "probes"
    monkeypatch.setenv("GPUWATCH_PROBE_DIR", str(folder))
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    probe = attach(small_model(), interval_s=0.05)
    try:
        path = folder / f"{os.getpid()}.json"
        probe.publish()
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        doc = json.loads(path.read_text())
        assert doc["alloc_conf"] == "expandable_segments:True"
        assert not list(folder.glob(".*.tmp"))
    finally:
        detach()
    assert not path.exists()                       # detach withdraws the document


def test_a_publish_never_synchronises_or_copies_a_tensor(tmp_path, monkeypatch):
    model = small_model()
    optimizer = torch.optim.AdamW(model.parameters())
    train_step(model, optimizer)

    def forbidden(*args, **kwargs):
        raise AssertionError("the probe must not synchronise or copy tensors")

    monkeypatch.setattr(torch.cuda, "synchronize", forbidden)
    monkeypatch.setattr(torch.Tensor, "cpu", forbidden)
    monkeypatch.setattr(torch.Tensor, "tolist", forbidden)
    monkeypatch.setattr(torch.Tensor, "clone", forbidden)
    probe = Probe(model, optimizer, directory=tmp_path, interval_s=60)
    doc = probe.publish()
    probe.close(withdraw=True)
    assert doc["model"]["gradient_bytes"] > 0


@pytest.mark.parametrize(("threshold", "start", "trials"), [
    (37, 1, 12), (37, 32, 5), (37, 100, 7), (1, 1, 2), (1000, 1, 20), (64, 64, 6),
])
def test_find_max_batch_is_exact_with_real_oom_errors(threshold, start, trials):
    tried = []

    def step(batch: int) -> None:
        tried.append(batch)
        if batch > threshold:
            # what the CUDA caching allocator raises
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {batch} GiB")
        torch.zeros(batch)

    result = find_max_batch(step, start=start)
    assert result.batch_size == threshold
    assert result.trials == len(tried) == trials
    assert all(ok == (b <= threshold) for b, ok in result.tried)


def test_find_max_batch_respects_its_limit_and_other_errors():
    result = find_max_batch(lambda b: None, start=4, limit=10)
    assert (result.batch_size, result.limit_reached) == (10, True)
    assert find_max_batch(lambda b: (_ for _ in ()).throw(
        torch.OutOfMemoryError("out of memory")), start=8).batch_size == 0

    def broken(batch: int) -> None:
        raise ValueError("a bug, not memory")

    with pytest.raises(ValueError, match="a bug"):
        find_max_batch(broken)
