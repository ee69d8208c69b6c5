"""The advisor on generated shapes: false alarms on healthy runs, lead time on failing ones.

The long profile of ``tests/advisor/test_advisor_shapes.py``: healthy and failing runs
drawn by the Hypothesis strategies of ``tests/advisor/generated_shapes.py`` (half each), each
sampled every second and fed to the advisor as the recorder does.

* healthy: a run with any warning or critical hint is a false alarm;
* failing: a warning (or critical) must open at least 60 s, and at least a quarter of
  the climb's duration (at most 10 min), before the card is full; a warning or critical
  before the climb began is a false alarm.

Prints the false-alarm rates, the misses, and the distribution of the lead (seconds
before full) per kind of failure. ``gpuwatch`` is whatever Python imports, so older code
can be measured on the same runs (``PYTHONPATH=<old checkout>:tests/advisor``).

Usage: ``python benchmarks/advisor_shapes.py [--examples 2000] [--jobs 2] [--seed 0]
[--rows FILE]``. The runs are drawn in chunks of ``--chunk``; with ``--rows`` each
chunk's rows are appended to FILE (JSON lines) as it finishes, each with its run's
spec; ``--summarize FILE`` prints the figures of what a run (finished or not) wrote
there (and judges again, with no evaluation, the late runs whose card an evaluation's
spike filled: the same climb alone), and ``--again FILE`` judges again, one by one,
the runs it has failing (the draws of a chunk depend on more than its seed, so a
failure is kept by its spec, not found again by drawing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "advisor"))

from generated_shapes import RunSpec, failing_runs, healthy_runs, judge
from hypothesis import HealthCheck, Phase, given, seed, settings

Row = tuple  # (kind, label, ok, detail...)


def _collect(strategy, n: int, at: int, measure) -> list[Row]:
    rows: list[Row] = []

    @seed(at)
    @settings(max_examples=n, phases=[Phase.generate], deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def each(spec) -> None:
        rows.append(measure(spec))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        each()
    return rows


def _healthy(spec) -> Row:
    out = judge(spec)
    crit = any(sev == "critical" for _, _, sev in out.loud)
    return ("healthy", spec.label, bool(out.loud), crit, out.loud[:1], spec.to_json())


def _failing(spec) -> Row:
    out = judge(spec)
    f = spec.failure
    early = [x for x in out.loud if x[0] < f.start_s]
    first = next((x for x in out.loud if x[0] >= f.start_s), None)
    full = out.full_s
    lead = None if first is None or full is None else full - first[0]
    need = None if full is None else spec.required_lead_s(full)
    crit = next((x for x in out.loud if x[0] >= f.start_s and x[2] == "critical"), None)
    crit_lead = None if crit is None or full is None else full - crit[0]
    return (f.kind, spec.label, bool(early), lead, need, crit_lead,
            None if first is None else first[1], early[:1], full, spec.to_json())


def _failed(row: Row) -> bool:
    """A healthy run that warned, or a failing run warned early, late or never."""
    if row[0] == "healthy":
        return bool(row[2])
    return bool(row[2]) or _late(row)


def _late(row: Row) -> bool:
    """A failing run warned late or never (not early)."""
    return row[0] != "healthy" and row[4] is not None and (row[3] is None or row[3] < row[4])


def _without_evaluations(row: Row) -> Row:
    """The failing run judged again with no evaluation: the same climb alone."""
    return _failing(RunSpec.from_json(row[-1]).without_evaluations())


def _again(row: Row) -> Row:
    spec = RunSpec.from_json(row[-1])
    return _healthy(spec) if row[0] == "healthy" else _failing(spec)


def _work(job: tuple[str, int, int, float]) -> list[Row]:
    kind, n, at, longest = job
    if kind == "healthy":
        return _collect(healthy_runs(), n, at, _healthy)
    return _collect(failing_runs(longest_fill_s=longest), n, at, _failing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=50, help="runs drawn per task")
    parser.add_argument("--longest-fill", type=float, default=4 * 3600,
                        help="slowest climb, seconds to fill the card")
    parser.add_argument("--show", type=int, default=5, help="failures to print")
    parser.add_argument("--rows", type=Path, help="append each chunk's rows here")
    parser.add_argument("--summarize", type=Path, help="print the figures of a rows file")
    parser.add_argument("--again", type=Path,
                        help="judge again, one by one, the runs a rows file has failing")
    args = parser.parse_args()
    if args.again is not None:
        rows = [json.loads(line) for line in args.again.read_text().splitlines()
                if line.strip()]
        bad = [r for r in rows if isinstance(r[-1], dict) and _failed(r)]  # (spec kept)
        with ProcessPoolExecutor(args.jobs) as pool:
            for now in pool.map(_again, bad):
                print(("still  " if _failed(now) else "passes ") + _verdict(now))
        print(f"\n{len(bad)} failed runs judged again")
        return
    if args.summarize is not None:
        rows = [tuple(json.loads(line)) for line in args.summarize.read_text().splitlines()
                if line.strip()]
        _report(rows, None, args.jobs, args.show)
        return
    half = args.examples // 2
    chunks = max(1, half // max(1, args.chunk))
    per = max(1, half // chunks)
    # healthy and failing chunks alternate, so a profile cut short has both
    jobs = [(kind, per, args.seed * 1000 + k, args.longest_fill)
            for k in range(chunks) for kind in ("healthy", "failing")]
    started = time.perf_counter()
    rows: list[Row] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for done in as_completed([pool.submit(_work, job) for job in jobs]):
            part = done.result()
            rows += part
            if args.rows is not None:
                with args.rows.open("a") as f:
                    f.writelines(json.dumps(r) + "\n" for r in part)
    _report(rows, time.perf_counter() - started, args.jobs, args.show)


def _verdict(row: Row) -> str:
    if row[0] == "healthy":
        return f"{row[1]}: {row[4]}"
    return f"{row[1]}: lead {row[3]} s (owed {row[4]:.0f} s), early {row[7]}"


def _report(rows: list[Row], wall: float | None, jobs: int, show: int) -> None:
    healthy = [r for r in rows if r[0] == "healthy"]
    failing = [r for r in rows if r[0] != "healthy"]
    alarms = [r for r in healthy if r[2]]
    crits = [r for r in healthy if r[3]]
    took = "" if wall is None else f" in {wall:.0f} s ({jobs} processes)"
    print(f"{len(rows)} generated runs{took}\n")
    print(f"healthy runs: {len(healthy)}; with a false warning or critical: {len(alarms)} "
          f"({100 * len(alarms) / max(1, len(healthy)):.2f} %), with a false critical: "
          f"{len(crits)} ({100 * len(crits) / max(1, len(healthy)):.2f} %)")
    early = [r for r in failing if r[2]]
    print(f"failing runs: {len(failing)}; false alarm before the climb began: {len(early)} "
          f"({100 * len(early) / max(1, len(failing)):.2f} %)")
    by_kind: dict[str, list[Row]] = defaultdict(list)
    for r in failing:
        by_kind[r[0]].append(r)
    print(f"\n{'failure':<10} {'runs':>5} {'in time':>8} {'late':>5} {'missed':>7}   "
          f"lead before full, s: {'min':>6} {'p10':>6} {'median':>7} {'p90':>7}   "
          f"lead / required: {'min':>5} {'median':>6}   critical lead median")
    for kind in sorted(by_kind):
        rs = by_kind[kind]
        leads = np.array([r[3] for r in rs if r[3] is not None], dtype=float)
        ratio = np.array([r[3] / r[4] for r in rs if r[3] is not None and r[4]], dtype=float)
        ontime = sum(1 for r in rs if r[3] is not None and r[4] is not None and r[3] >= r[4])
        missed = sum(1 for r in rs if r[3] is None)
        crit = np.array([r[5] for r in rs if r[5] is not None], dtype=float)

        def q(a: np.ndarray, p: float) -> str:
            return f"{np.percentile(a, p):,.0f}" if a.size else "-"
        print(f"{kind:<10} {len(rs):>5} {ontime:>8} {len(rs) - ontime - missed:>5} "
              f"{missed:>7}   {'':<21}{q(leads, 0):>6} {q(leads, 10):>6} {q(leads, 50):>7} "
              f"{q(leads, 90):>7}   {'':<17}"
              f"{(f'{ratio.min():.2f}' if ratio.size else '-'):>5} "
              f"{(f'{np.median(ratio):.2f}' if ratio.size else '-'):>6}   "
              f"{q(crit, 50)}")
    bad = ([f"false alarm: {r[1]}: {r[4]}" for r in alarms]
           + [f"early alarm: {r[1]}: {r[7]}" for r in early]
           + [f"late ({r[3]} s < {r[4]:.0f} s, full at {r[8]}): {r[1]}" for r in failing
              if _late(r)])
    if bad:
        print("\nSome of them:")
        for line in bad[:show]:
            print("  " + line)
    _report_evaluations([r for r in failing if _late(r)], jobs, show)


def _report_evaluations(late: list[Row], jobs: int, show: int) -> None:
    """Of the runs warned late or never, those whose card an evaluation's spike filled,
    and how the same climbs fare with no evaluation: a spike the samples have not
    shown yet (a run's first evaluation) is no forecast's to see."""
    kept = [(r, RunSpec.from_json(r[-1])) for r in late if isinstance(r[-1], dict)]
    spiked = [(r, n) for r, spec in kept
              if (n := spec.evaluation_filling(r[8])) is not None]
    if not spiked:
        return
    with ProcessPoolExecutor(jobs) as pool:
        alone = list(pool.map(_without_evaluations, [r for r, _ in spiked]))
    first = sum(1 for _, n in spiked if n == 1)
    in_time = sum(1 for r in alone if not _failed(r))
    print(f"\nlate or missed: {len(late)}; filled while an evaluation was under way: "
          f"{len(spiked)} ({first} by the run's first, which no sample had shown)\n"
          f"the same climbs with no evaluation: {in_time} of {len(alone)} warned in time")
    for (r, n), a in list(zip(spiked, alone, strict=True))[:show]:
        print(f"  evaluation {n}, full at {r[8]} s, warned {r[3]} s before ({r[4]:.0f} s "
              f"owed); alone: full at {a[8]} s, warned {a[3]} s before ({a[4]:.0f} s owed)"
              f": {r[1]}")


if __name__ == "__main__":
    main()
