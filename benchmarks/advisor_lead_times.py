"""Advisor quality per built-in scenario: false alarms on healthy runs, lead time on failing ones.

Every built-in scenario runs through the simulated backend and the advisor at 1 s of
virtual time (``--step``), with the budget links the tests use.

* healthy scenarios: every hint opened (or raised) at warning or critical is a false
  alarm; info hints are listed apart;
* failing scenarios: the hints the scenario was built for are expected; any other
  warning or critical is a false alarm. Where the GPU fills (``oom-ramp``; ``leak``
  runs on past its file's end until it does), the lead time is how long before the
  first sample with no free memory the first warning, and the first critical, opened.

The scenario files are always this checkout's, and ``gpuwatch`` is whatever Python
imports, so older code can be measured on the same files:
``PYTHONPATH=/path/to/old/checkout python benchmarks/advisor_lead_times.py``.

Usage: ``python benchmarks/advisor_lead_times.py [--step S] [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpuwatch.advisor import Advisor
from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.core.hints import HintEventKind
from gpuwatch.core.history import History
from gpuwatch.telemetry.source import SourceOptions, open_backend

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS_DIR = ROOT / "resources" / "scenarios"
HOURS_8 = 8 * 3600


def link(advisor: Advisor, gpu: int, pid: int, model: str, batch: int, seq: int,
         **setup: object) -> None:
    spec = lookup_model(model)
    advisor.link(gpu, pid, estimate(spec, Workload(batch=batch, seq=seq),
                                    Setup(**setup)), spec)   # type: ignore[arg-type]


def _contention(a: Advisor) -> None:
    for pid in (5100, 5200):
        link(a, 0, pid, "gpt2-medium", 12, 1024, precision="amp-bf16")


LINKS: dict[str, Callable[[Advisor], None]] = {
    "workstation": lambda a: link(a, 0, 48211, "gpt2-medium", 8, 1024, precision="amp-bf16",
                                  flash_attention=True),
    "fragmentation": lambda a: link(a, 0, 66120, "gpt2-medium", 8, 1024,
                                    precision="amp-bf16"),
    "contention": _contention,
    "underused": lambda a: link(a, 0, 7300, "gpt2", 4, 1024),
}


@dataclass(frozen=True)
class Case:
    name: str
    duration_s: float
    expected: frozenset[str] = frozenset()   # codes the scenario was built to raise
    healthy: bool = True


CASES = [
    Case("workstation", 3600),
    Case("multi-gpu-ddp", 3600),
    Case("churn", 3600),
    Case("underused", 1800),
    Case("bandwidth", 900),
    Case("warmup-sawtooth", HOURS_8),
    Case("warmup-staircase", HOURS_8),
    Case("eval-spikes", HOURS_8),
    Case("checkpoint-restart", HOURS_8),
    Case("notebook-idle", HOURS_8),
    Case("oom-ramp", 1200, frozenset({"oom-risk", "likely-oom"}), healthy=False),
    Case("leak", 39_000, frozenset({"memory-leak", "oom-risk"}), healthy=False),
    Case("fragmentation", 1800, frozenset({"fragmentation"}), healthy=False),
    Case("contention", 900, frozenset({"contention"}), healthy=False),
    Case("faults", 720, frozenset({"gpu-lost", "gpu-recovered"}), healthy=False),
]


@dataclass
class Result:
    warnings: list[tuple[float, str]] = field(default_factory=list)    # (t, code) opened
    criticals: list[tuple[float, str]] = field(default_factory=list)   # opened or raised
    infos: set[str] = field(default_factory=set)
    full_at: float | None = None
    exits: list[tuple[float, str, str]] = field(default_factory=list)  # (t, code, kind)
    wall_s: float = 0.0


def run(case: Case, step: float) -> Result:
    path = SCENARIOS_DIR / f"{case.name}.toml"
    backend = open_backend(SourceOptions(demo=str(path), time_scale="max"))
    advisor, history, r = Advisor(), History(), Result()
    if case.name in LINKS:
        LINKS[case.name](advisor)
    severity: dict[tuple, str] = {}
    started = time.perf_counter()
    n = int(case.duration_s / step)
    try:
        for i in range(n + 1):
            t = i * step
            backend.clock.set_elapsed(t)   # type: ignore[attr-defined]
            snap = backend.sample()
            history.append(snap)
            if r.full_at is None and any(g.memory.free_bytes == 0 for g in snap.gpus):
                r.full_at = t
            for e in advisor.update(history):
                h, sev = e.hint, e.hint.severity.value
                if e.kind is HintEventKind.CLOSED:
                    severity.pop(h.key, None)
                    r.exits.append((t, h.code, "closed"))
                    continue
                before = severity.get(h.key)
                severity[h.key] = sev
                if e.kind is HintEventKind.OPENED:
                    r.exits.append((t, h.code, "opened"))
                if sev == "info":
                    r.infos.add(h.code)
                elif sev == "warning" and e.kind is HintEventKind.OPENED:
                    r.warnings.append((t, h.code))
                elif sev == "critical" and before != "critical":
                    r.criticals.append((t, h.code))
    finally:
        backend.close()
    r.wall_s = time.perf_counter() - started
    return r


def _lead(r: Result, events: list[tuple[float, str]]) -> str:
    if not events:
        return "none"
    t, code = events[0]
    if r.full_at is None:
        return f"{code} at {t:.0f} s"
    return f"{r.full_at - t:,.0f} s ({code})"


def _count(events: list[tuple[float, str]], expected: frozenset[str]) -> str:
    false = [code for _, code in events if code not in expected]
    if not false:
        return "0"
    codes = sorted(set(false))
    return f"{len(false)} ({', '.join(codes)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=float, default=1.0, help="virtual seconds per sample")
    parser.add_argument("--only", nargs="*", help="scenario names")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or c.name in args.only]
    print(f"{'scenario':<19} {'virtual':>8}  {'false warnings':<22} {'false criticals':<22} "
          f"{'lead: first warning':<26} {'lead: first critical':<26} info")
    for case in cases:
        if not (SCENARIOS_DIR / f"{case.name}.toml").is_file():
            continue
        r = run(case, args.step)
        warn_lead = crit_lead = "-"
        if not case.healthy:
            loud = sorted(r.warnings + r.criticals)
            warn_lead = _lead(r, loud)
            crit_lead = _lead(r, r.criticals)
        print(f"{case.name:<19} {case.duration_s / 3600:>7.2f}h  "
              f"{_count(r.warnings, case.expected):<22} "
              f"{_count(r.criticals, case.expected):<22} {warn_lead:<26} {crit_lead:<26} "
              f"{', '.join(sorted(r.infos)) or '-'}")
        if case.name == "oom-ramp":
            after = [f"{code} {kind} at {t:.0f} s" for t, code, kind in r.exits
                     if t >= 480 and code in ("oom-risk", "likely-oom")]
            print(f"{'':<19} full at {r.full_at:.0f} s, the process dies at 492 s: "
                  f"{'; '.join(after)}")
        if case.name == "leak" and r.full_at is not None:
            print(f"{'':<19} full at {r.full_at:,.0f} s ({r.full_at / 3600:.1f} h)")


if __name__ == "__main__":
    main()
