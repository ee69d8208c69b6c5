"""`gpuwatch record`: sample headless with the advisor running, and save a session.

Its options are declared in :mod:`gpuwatch.commands.telemetry_args`; this module, and
the telemetry, advisor, history (numpy) and sessions it needs, is imported only when
the command runs.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections import Counter

import numpy as np

from gpuwatch.advisor import Advisor, event_to_json, format_event
from gpuwatch.commands import options
from gpuwatch.commands.snapshot_text import describe_backend, format_tick
from gpuwatch.commands.term_colour import paint, wanted
from gpuwatch.core.hints import Severity
from gpuwatch.core.history import History
from gpuwatch.core.output_paths import check_output_file
from gpuwatch.core.safe_text import visible
from gpuwatch.core.snapshot import BackendKind, Snapshot
from gpuwatch.core.snapshot_csv import csv_text, snapshot_rows
from gpuwatch.core.snapshot_json import snapshot_to_json
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.core.wording import plural
from gpuwatch.sessions import paths
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.sampler import Sampler
from gpuwatch.telemetry.source import open_backend

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_record(args: argparse.Namespace) -> int:
    # a bad --out is refused before any sampling starts (no missing folder is created)
    out_path = check_output_file(args.out, "session file") if args.out else None
    fmt = options.output_format(args)
    backend = open_backend(options.source_options(args))
    # neither the printed lines nor the session hold processes' resident sets: they are
    # read every tenth tick only (the JSON lines give them: there, every tick)
    backend.set_host_detail(fmt == "json")
    simulated = backend.info.kind is BackendKind.SIMULATED
    duration = args.duration
    if duration is None and simulated:
        duration = backend.scenario_duration_s
    history = History()
    start = backend.clock.elapsed_s()
    start_stamp = backend.clock.now_s()      # the first sample's time
    done = threading.Event()
    recorder = None
    if not args.no_save:
        out = out_path or paths.new_session_path(backend.clock.now_s())
        try:
            # a name gpuwatch picked gives way to the next free one if another recorder
            # took it in the same second; a name the user gave is never written over
            recorder = Recorder(out, args.interval, on_error=lambda exc: (
                print(f"gpuwatch: {exc}", file=sys.stderr, flush=True),
                done.set()),             # a recording that cannot be saved ends here
                free_name=out_path is None)
        except Exception:
            backend.close()
            raise

    advisor = Advisor()
    colour = wanted(args.color, sys.stdout)
    hint_colour = wanted(args.color, sys.stderr)
    worst: dict[tuple, Severity] = {}

    def on_snapshot(snap: Snapshot) -> None:
        history.append(snap)
        events = advisor.update(history)
        if recorder is not None:
            recorder.add_snapshot(snap)
            for event in events:
                recorder.add_hint_event(event)
        for e in events:      # each hint counted once, at the worst severity it reached
            worst[e.hint.key] = max(worst.get(e.hint.key, e.hint.severity), e.hint.severity)
        if fmt == "json":
            lines = [json.dumps(snapshot_to_json(snap), separators=(",", ":"))]
            lines += [json.dumps(event_to_json(e), separators=(",", ":")) for e in events]
        elif fmt == "csv":         # the rows on stdout, the hints on stderr
            lines = [csv_text(snapshot_rows(snap), header=False).rstrip("\n")]
            for e in events:
                print("hint " + paint(visible(format_event(e, None)), e.hint.severity.value,
                                      hint_colour), file=sys.stderr, flush=True)
        else:
            lines = format_tick(snap, backend.clock.elapsed_s() - start, colour)
            # virtual runs print time since the start; real ones the time of day
            since = start_stamp if simulated else None
            lines += ["  hint " + paint(visible(format_event(e, since)),
                                        e.hint.severity.value, colour) for e in events]
        try:
            print("\n".join(lines), flush=True)
        except BrokenPipeError:        # `gpuwatch record | head`: the reader has gone
            sampler.stop(timeout_s=0)

    def on_error(exc: Exception) -> None:
        print(f"gpuwatch: a sample failed: {exc}", file=sys.stderr)

    if fmt == "text":
        where = f" to {recorder.path}" if recorder is not None else ""
        print(f"Recording {describe_backend(backend.info)} every {args.interval:g} s"
              + (f" for {format_duration(duration)}" if duration else " until Ctrl-C")
              + where, flush=True)
    if fmt == "csv":                  # the header once, before any row
        print(csv_text([], header=True), end="", flush=True)
    sampler = Sampler(backend, args.interval, on_snapshot, on_error,
                      until_elapsed_s=None if duration is None else start + duration,
                      on_finished=done.set, start_elapsed_s=start)
    # Ctrl-C, logout (SIGHUP), `systemctl stop` and `timeout` (SIGTERM) all end the
    # recording the same way: the session is finished and the summary printed.
    previous = {sig: signal.signal(sig, lambda *_: sampler.stop(timeout_s=0))
                for sig in STOP_SIGNALS}
    try:
        sampler.start()
        while not done.wait(0.2):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sampler.stop()
        end_s = backend.clock.now_s()
        backend.close()
        if recorder is not None:
            recorder.close(end_s)
    summary = _summary(history, sampler.samples, backend.clock.elapsed_s() - start)
    if worst:
        counts = Counter(worst.values())      # "1 critical hint, 2 warning hints."
        summary += " " + ", ".join(plural(counts[sev], f"{sev.value} hint") for sev in
                                   sorted(counts, key=lambda sev: sev.rank, reverse=True)) + "."
    if recorder is not None and recorder.error is None:
        summary += f" Session saved to {recorder.path}"
    print(summary, file=sys.stdout if fmt == "text" else sys.stderr)
    if recorder is not None and recorder.error is not None:
        print(f"gpuwatch: the recording failed; {_what_was_saved(recorder, sampler.samples)}",
              file=sys.stderr)
        return 1
    return 0


def _what_was_saved(recorder: Recorder, taken: int) -> str:
    """The truth about the file after a failure: how many of the samples taken it
    holds (as a reader finds them), or that it holds none."""
    saved = recorder.saved_samples
    if not saved:
        return f"no samples were saved ({recorder.path} holds none)"
    return (f"{saved:,} of the {plural(max(taken, saved), 'sample')} taken are saved in "
            f"{recorder.path}")


def _summary(history: History, samples: int, elapsed_s: float) -> str:
    peaks = []
    for index, ring in sorted(history.gpus.items()):
        used = ring.column("used_bytes")
        finite = used[~np.isnan(used)]  # NaN: the GPU was lost

        peak = format_bytes(float(finite.max())) if finite.size else "n/a"
        peaks.append(f"GPU {index} peak {peak}")
    return (f"Recorded {plural(samples, 'sample')} over {format_duration(elapsed_s)}"
            + (": " + ", ".join(peaks) if peaks else "") + ".")
