"""AdaptiveBatch in a real CPU PyTorch training loop whose memory limit moves over time:
a step above the limit raises a real torch.OutOfMemoryError."""

from __future__ import annotations

import json
import logging
import os
import time

import pytest

from gpuwatch.core.probe_format import parse_probe_report
from gpuwatch.probe import AdaptiveBatch, attach, detach

torch = pytest.importorskip("torch", reason="AdaptiveBatch runs PyTorch training steps")
pytestmark = pytest.mark.torch

EFFECTIVE = 32


class Device:
    """A pretend accelerator: a limit on samples per micro-batch that changes with time,
    and the peak the last step used (bytes = samples × 1 MiB)."""

    PER_SAMPLE = 1 << 20

    def __init__(self, limits: dict[int, int], capacity_samples: int = 40):
        self.limits = limits  # from step (inclusive) -> largest micro-batch that fits
        self.calls = 0
        self.peak = 0
        self.capacity = capacity_samples * self.PER_SAMPLE

    def limit(self, step: int) -> int:
        return self.limits[max(k for k in self.limits if k <= step)]

    def memory(self) -> tuple[int, int]:
        return self.peak, self.capacity


def first_publish(probe) -> None:
    """Wait for the probe thread's first publish (it starts with one)."""
    for _ in range(1000):
        if probe.publishes:
            return
        time.sleep(0.01)


def make_loop(device: Device, adaptive_steps: list[int]):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(EFFECTIVE, 8)
    seen: list[tuple[int, int]] = []

    def step(micro: int, accum: int) -> int:
        device.calls += 1
        optimizer.zero_grad(set_to_none=True)
        samples = 0
        for chunk in data.split(micro):
            if chunk.shape[0] > device.limit(len(adaptive_steps)):
                raise torch.OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {chunk.shape[0]} MiB")
            loss = model(chunk).pow(2).mean() / accum
            loss.backward()
            samples += chunk.shape[0]
        optimizer.step()
        device.peak = micro * Device.PER_SAMPLE
        seen.append((micro, accum))
        adaptive_steps.append(micro)
        return samples

    return step, seen


def test_an_oom_lowers_the_micro_batch_and_keeps_the_effective_batch():
    device = Device({0: 10})
    steps: list[int] = []
    step, seen = make_loop(device, steps)
    reports = []
    adaptive = AdaptiveBatch(EFFECTIVE, EFFECTIVE, memory=device.memory, report=reports.append)
    assert adaptive.run(step) == EFFECTIVE  # every sample of the step was used
    assert (adaptive.micro_batch, adaptive.grad_accum) == (8, 4)  # 32 -> 16 -> 8
    assert seen == [(8, 4)]
    assert [c.micro_batch for c in adaptive.changes] == [16, 8]
    assert all(c.reason == "out-of-memory" for c in adaptive.changes)
    assert reports[-1]["micro_batch"] == 8 and reports[-1]["grad_accum"] == 4
    assert reports[-1]["effective_batch"] == EFFECTIVE


def test_it_grows_back_when_headroom_is_steady_and_shrinks_when_the_limit_falls():
    # steps 0-9: 8 fit; from step 10 everything fits; from step 40: 4 fit
    device = Device({0: 8, 10: 10**9, 40: 4}, capacity_samples=64)
    steps: list[int] = []
    step, _ = make_loop(device, steps)
    adaptive = AdaptiveBatch(EFFECTIVE, 8, memory=device.memory, report=None,
                             grow_after=5, headroom=0.9, cooldown=3)
    for _ in range(60):
        assert adaptive.run(step) == EFFECTIVE
        assert adaptive.micro_batch * adaptive.grad_accum == EFFECTIVE
    reasons = [(c.reason, c.old_micro_batch, c.micro_batch) for c in adaptive.changes]
    assert ("headroom", 8, 16) in reasons and ("headroom", 16, 32) in reasons
    assert reasons[-1] == ("out-of-memory", 8, 4)
    assert max(steps[40:]) <= 4  # after the limit fell, nothing above it ran
    assert adaptive.micro_batch == 4 and adaptive.grad_accum == 8


def test_no_headroom_figures_no_growth():
    device = Device({0: 8})
    steps: list[int] = []
    step, _ = make_loop(device, steps)
    adaptive = AdaptiveBatch(EFFECTIVE, 8, memory=None, report=None, grow_after=1)
    for _ in range(5):
        adaptive.run(step)
    assert adaptive.micro_batch == 8 and not adaptive.changes


def test_the_smallest_batch_running_out_of_memory_raises():
    device = Device({0: 0})
    step, _ = make_loop(device, [])
    adaptive = AdaptiveBatch(EFFECTIVE, 4, memory=device.memory, report=None)
    with pytest.raises(torch.OutOfMemoryError):
        adaptive.run(step)
    assert adaptive.micro_batch == 1


def test_other_errors_propagate_untouched():
    adaptive = AdaptiveBatch(8, 8, memory=None, report=None)

    def broken(micro: int, accum: int) -> None:
        raise ValueError("shape mismatch")

    with pytest.raises(ValueError):
        adaptive.run(broken)
    assert adaptive.micro_batch == 8


def test_each_change_is_logged_and_published_in_the_probe_document(tmp_path, caplog):
    device = Device({0: 10})
    step, _ = make_loop(device, [])
    probe = attach(None, None, interval_s=3600, directory=tmp_path)
    try:
        first_publish(probe)  # the thread's own, which must not overwrite ours later
        adaptive = AdaptiveBatch(EFFECTIVE, EFFECTIVE, memory=device.memory)
        with caplog.at_level(logging.WARNING, logger="gpuwatch.probe.adaptive"):
            adaptive.run(step)
        doc = json.loads((tmp_path / f"{os.getpid()}.json").read_text())
    finally:
        detach(withdraw=False)
    assert [r.getMessage() for r in caplog.records][-1].startswith(
        "gpuwatch: micro-batch 16 -> 8, gradient accumulation 4")
    assert probe.publishes >= 2  # the thread's first publish, then one per change
    assert doc["adaptive_batch"]["micro_batch"] == 8
    assert doc["adaptive_batch"]["last_change"]["reason"] == "out-of-memory"
    assert parse_probe_report(doc).adaptive_batch.micro_batch == 8   # gpuwatch reads it


def test_bad_arguments_are_refused():
    for kwargs in ({"effective_batch": 0}, {"effective_batch": 12, "micro_batch": 5},
                   {"effective_batch": 8, "headroom": 0}):
        with pytest.raises(ValueError):
            AdaptiveBatch(**kwargs)


def test_the_caches_are_freed_once_per_out_of_memory_error():
    device = Device({0: 3})
    step, _ = make_loop(device, [])
    freed = []
    adaptive = AdaptiveBatch(EFFECTIVE, EFFECTIVE, memory=device.memory, report=None,
                             release=lambda: freed.append(adaptive.micro_batch))
    adaptive.run(step)
    # 32 -> 16 -> 8 -> 4 -> 2: four errors, each freed after the size was lowered
    assert [c.micro_batch for c in adaptive.changes] == [16, 8, 4, 2]
    assert freed == [16, 8, 4, 2]


def test_each_smaller_size_divides_the_effective_batch():
    limit = 5

    def step(micro: int, accum: int) -> int:
        if micro > limit:
            raise torch.OutOfMemoryError("CUDA out of memory.")
        return micro * accum

    adaptive = AdaptiveBatch(24, 24, memory=None, report=None)
    assert adaptive.run(step) == 24
    # at most half the size each time, and a divisor of 24: 12, 6, then 3
    assert [c.micro_batch for c in adaptive.changes] == [12, 6, 3]
    assert (adaptive.micro_batch, adaptive.grad_accum) == (3, 8)


def test_the_state_stays_in_every_later_publish(tmp_path):
    from gpuwatch.probe.adaptive import probe_reporter

    probe = attach(None, None, interval_s=3600, directory=tmp_path)
    try:
        first_publish(probe)  # so that the thread's is not counted below
        before = probe.publishes
        probe_reporter({"micro_batch": 4})
        assert probe.sections == {"adaptive_batch": {"micro_batch": 4}}
        assert probe.publishes == before + 1
        probe.publish()       # the thread's next periodic publish keeps it
        doc = json.loads((tmp_path / f"{os.getpid()}.json").read_text())
        assert doc["adaptive_batch"] == {"micro_batch": 4}
    finally:
        detach()
    probe_reporter({"micro_batch": 2})  # no probe attached: nothing happens
