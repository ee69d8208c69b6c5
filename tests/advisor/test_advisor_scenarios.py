"""Real scenarios through the real simulated backend, sampled at 1 s of virtual time.

Each rule fires on the scenario built for it; ``workstation`` stays silent, and an
8-hour run of it (looped, sampled every 10 s to keep the suite fast: 2,880 samples)
raises no warning or critical hint. Scenarios the built-in set lacks (contention,
idle memory, memory bandwidth) are built-in scenarios too.
"""

from __future__ import annotations

import pytest
from advisor_support import GIB, run_scenario

from gpuwatch.advisor import Advisor
from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.core.hints import HintEventKind
from gpuwatch.core.resources import resource_path


def _linked(advisor: Advisor, gpu: int, pid: int, model: str, batch: int, seq: int,
            **setup: object) -> None:
    spec = lookup_model(model)
    est = estimate(spec, Workload(batch=batch, seq=seq), Setup(**setup))  # type: ignore[arg-type]
    advisor.link(gpu, pid, est, spec)


def test_oom_ramp_warns_well_before_the_gpu_is_full() -> None:
    run = run_scenario("oom-ramp", 600)
    opened = run.first_open["oom-risk"]
    full = run.full_at_s[0]
    lead = full - opened
    print(f"\noom-ramp: oom-risk opened at {opened:.0f} s, memory full at {full:.0f} s: "
          f"lead {lead:.0f} s")
    assert lead >= 300          # five minutes to save a checkpoint and act
    crit = [t for t, e in run.events if e.hint.code == "oom-risk"
            and e.hint.severity.value == "critical"]
    assert crit and full - crit[0] >= 120
    assert run.codes("warning") == {"oom-risk", "likely-oom"}


def test_the_crash_is_named_and_the_stale_warning_closes_at_once() -> None:
    run = run_scenario("oom-ramp", 1200)
    died = 492                  # the process's end_s: torch.OutOfMemoryError
    log = [(t, e.kind.value, e.hint.code) for t, e in run.events if t >= died]
    assert sorted(log[:2]) == [(died, "closed", "oom-risk"), (died, "opened", "likely-oom")]
    hint = next(e.hint for t, e in run.events if e.hint.code == "likely-oom")
    assert hint.pid == 71310
    assert hint.title == ("pid 71310 (python finetune.py) exited at 39.6 GiB / 40.0 GiB — "
                          "likely out of memory")
    assert hint.badge == "OOM · pid 71310"
    badges = [e.hint.badge for _, e in run.events if e.hint.code == "oom-risk"]
    assert badges[0].startswith("OOM in ~") and badges[-1] == "FULL"   # type: ignore[union-attr]
    assert log[2:] == [(died + 600, "closed", "likely-oom")]


def test_budget_that_cannot_fit_is_flagged_as_soon_as_the_process_appears() -> None:
    advisor = Advisor()
    _linked(advisor, 0, 71310, "llama-3.1-8b", 4, 1024, precision="bf16", lora_rank=16)
    run = run_scenario("oom-ramp", 120, advisor=advisor)
    assert run.first_open["budget-exceeds-capacity"] <= 30
    (event,) = [e for _, e in run.events if e.hint.code == "budget-exceeds-capacity"]
    assert event.hint.pid == 71310
    assert any("enough on its own" in a.text for a in event.hint.actions)


def test_leak_is_named_with_its_rate() -> None:
    run = run_scenario("leak", 1200)     # 6 min of warm-up, then 10 min of floors
    assert run.codes() == {"memory-leak"}
    (hint,) = [e.hint for _, e in run.events if e.kind is HintEventKind.OPENED]
    assert hint.pid == 90211
    assert "72 MiB/min" in hint.title
    assert hint.badge == "LEAK +72 MiB/min"
    assert hint.value("leak_bytes_per_s") == pytest.approx(72 * 1024**2 / 60, rel=0.05)


def test_fragmentation_against_the_runs_own_budget(tmp_path) -> None:
    advisor = Advisor()
    # the process's command line: gpt2-medium, batch 8, seq 1024, amp-bf16
    _linked(advisor, 0, 66120, "gpt2-medium", 8, 1024, precision="amp-bf16")
    # without its probe, only the budget can tell fragmentation from a leak
    text = (resource_path("scenarios", "fragmentation.toml").read_text()
            .split("[processes.probe]")[0])
    (tmp_path / "no-probe.toml").write_text(text)
    run = run_scenario(str(tmp_path / "no-probe.toml"), 600, advisor=advisor)
    assert "fragmentation" in run.codes()
    hint = next(e.hint for _, e in run.events if e.hint.code == "fragmentation")
    assert hint.value("unexplained_bytes") >= 2 * GIB   # type: ignore[operator]
    assert "expandable_segments:True" in hint.actions[0].text
    assert hint.badge is not None and hint.badge.startswith("FRAGMENTED ")
    assert "memory-leak" not in run.codes()


def test_fragmentation_from_the_probes_allocator_figures() -> None:
    run = run_scenario("fragmentation", 700)            # no budget linked: the probe speaks
    first, *_, last = [e.hint for _, e in run.events if e.hint.code == "fragmentation"]
    assert first.value("inactive_split_bytes") >= 2 * GIB  # type: ignore[operator]
    assert last.value("reserved_bytes") > 2 * last.value("allocated_bytes")  # type: ignore[operator]
    assert "memory-leak" not in run.codes()


def test_lost_gpu_and_its_return() -> None:
    run = run_scenario("faults", 150)
    lost = [(t, e.kind.value) for t, e in run.events
            if e.hint.code == "gpu-lost" and e.hint.gpu_index == 1]
    assert lost == [(30, "opened"), (90, "closed")]
    assert {e.hint.badge for _, e in run.events if e.hint.code == "gpu-lost"} == {"LOST"}
    back = [(t, e.kind.value) for t, e in run.events if e.hint.code == "gpu-recovered"]
    assert back[0] == (90, "opened")
    assert run.codes("warning") == {"gpu-lost"}


def test_contention_between_two_budgeted_runs() -> None:
    advisor = Advisor()
    for pid in (5100, 5200):
        _linked(advisor, 0, pid, "gpt2-medium", 12, 1024, precision="amp-bf16")
    run = run_scenario("contention", 120, advisor=advisor)
    assert run.codes() == {"contention"}
    hint = next(e.hint for _, e in run.events if e.hint.code == "contention")
    assert any("GPU 1" in a.text for a in hint.actions)


def test_underused_suggests_a_bigger_batch() -> None:
    advisor = Advisor()
    _linked(advisor, 0, 7300, "gpt2", 4, 1024)
    run = run_scenario("underused", 660, advisor=advisor)
    assert run.codes() == {"underused"}
    hint = next(e.hint for _, e in run.events if e.hint.code == "underused")
    assert "raise the micro-batch from 4 to" in hint.actions[0].text


def test_saturated_memory_bandwidth_is_reported_as_info() -> None:
    run = run_scenario("bandwidth", 200)
    assert run.codes() == {"bandwidth-saturated"}
    assert run.codes("warning") == set()


def test_workstation_is_quiet() -> None:
    advisor = Advisor()
    # a correct budget for the training run (it uses flash attention)
    _linked(advisor, 0, 48211, "gpt2-medium", 8, 1024, precision="amp-bf16",
            flash_attention=True)
    # 50 min covers the training start and all three of the notebook's steps
    run = run_scenario("workstation", 3000, advisor=advisor)
    assert run.events == []


def test_eight_hours_without_a_warning() -> None:
    run = run_scenario("workstation", 8 * 3600, step_s=10.0, loop=True)
    assert run.codes("warning") == set()


def test_eight_training_ranks_for_an_hour_are_quiet() -> None:
    run = run_scenario("multi-gpu-ddp", 3600, step_s=30.0)
    assert run.events == []
