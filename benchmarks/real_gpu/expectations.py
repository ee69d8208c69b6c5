"""What a recorded session must show, checked on its `gpuwatch report --format json`.

One function per ``expect`` of ``tests/data/real/manifest.json`` (DESIGN.md, "Real-GPU
traces"). Each returns the problems it found, in words; an empty list is a pass. Used
by the harness right after a run (so a run on a real card says at once whether the
advisor did what it should), by the importer, and by the replay tests in CI.
"""

from __future__ import annotations

from typing import Any

EXPECTS = ("oom", "healthy", "arrival", "leak", "fragmentation")
LEAD_S = 60.0             # an out-of-memory warning must come at least this early
EXIT_SLACK_S = 15.0       # the report's exit time vs the workload's own clock
WARNINGS = ("warning", "critical")
# evidence only the in-process probe's allocator figures give (advisor/rules/fragmentation)
PROBE_FIGURES = ("is allocated", "split blocks", "allocation retr")


def _warnings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for h in report.get("hints", []) if h.get("severity") in WARNINGS]


def _name(h: dict[str, Any]) -> str:
    return f"{h.get('code')} ({h.get('severity')}) at {h.get('first_seen_s')} s: {h.get('title')}"


def check_oom(report: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    t_oom = entry.get("t_oom_s")
    if not isinstance(t_oom, int | float):
        return ["an oom entry needs t_oom_s, the seconds from the session's start to the death"]
    problems = []
    early = [h for h in _warnings(report) if h.get("code") in ("oom-risk", "memory-leak")
             and isinstance(h.get("first_seen_s"), int | float)
             and h["first_seen_s"] <= t_oom - LEAD_S]
    if not early:
        seen = [_name(h) for h in _warnings(report)] or ["no warning at all"]
        problems.append(f"no oom-risk or memory-leak warning {LEAD_S:.0f} s or more before "
                        f"the death at {t_oom} s; seen: " + "; ".join(seen))
    pid = entry.get("pid")
    deaths = [h for h in report.get("hints", []) if h.get("code") == "likely-oom"
              and (pid is None or h.get("pid") == pid)]
    if not deaths:
        named = [h.get("pid") for h in report.get("hints", []) if h.get("code") == "likely-oom"]
        problems.append(f"the death of pid {pid} is not named likely-oom"
                        + (f" (likely-oom named pids {named})" if named else ""))
    elif not any(isinstance(h.get("first_seen_s"), int | float)
                 and abs(h["first_seen_s"] - t_oom) <= EXIT_SLACK_S for h in deaths):
        problems.append(f"likely-oom came at {[h.get('first_seen_s') for h in deaths]} s, "
                        f"not within {EXIT_SLACK_S:.0f} s of the death at {t_oom} s")
    return problems


def check_quiet(report: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    loud = _warnings(report)
    return [f"expected no warning, saw {len(loud)}: " + "; ".join(_name(h) for h in loud)] \
        if loud else []


def check_leak(report: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    pid = entry.get("pid")
    found = [h for h in report.get("hints", []) if h.get("code") == "memory-leak"
             and (pid is None or h.get("pid") == pid)]
    return [] if found else [f"no memory-leak hint{'' if pid is None else f' for pid {pid}'}; "
                             f"hints: {[h.get('code') for h in report.get('hints', [])]}"]


def check_fragmentation(report: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    pid = entry.get("pid")
    found = [h for h in report.get("hints", []) if h.get("code") == "fragmentation"
             and (pid is None or h.get("pid") == pid)]
    if not found:
        return [f"no fragmentation hint; hints: {[h.get('code') for h in report['hints']]}"
                if "hints" in report else "the report has no hints section"]
    if not any(any(p in (h.get("detail") or "") for p in PROBE_FIGURES) for h in found):
        return ["the fragmentation hint does not give the probe's allocator figures: "
                + "; ".join(repr(h.get("detail")) for h in found)]
    return []


CHECKS = {"oom": check_oom, "healthy": check_quiet, "arrival": check_quiet,
          "leak": check_leak, "fragmentation": check_fragmentation}


def check(report: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    """The problems of ``report`` against the manifest ``entry`` (empty: it shows what
    the entry expects)."""
    expect = entry.get("expect")
    if expect not in CHECKS:
        return [f"unknown expect {expect!r}; use one of {', '.join(EXPECTS)}"]
    if report.get("schema") != "gpuwatch.report/1":
        return [f"not a gpuwatch report (schema {report.get('schema')!r})"]
    return CHECKS[expect](report, entry)
