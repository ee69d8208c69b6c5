"""Bring a real-GPU run into the repository: its sessions as test data, its figures as
tables for docs/real-gpu.md.

    python3 benchmarks/real_gpu/import_results.py OUT_DIR            # import
    python3 benchmarks/real_gpu/import_results.py OUT_DIR --tables   # only print tables

Each recorded session with an expectation is compacted (SQLite ``VACUUM``, gzip) into
``tests/data/real/`` and listed in ``manifest.json`` (DESIGN.md's contract; an entry of
the same file is replaced). Refused: a dry run, a session whose backend is not real
NVML, a GPU the fake driver names, a death that was not an out-of-memory error, a leak
too short for the leak rule, and a set of traces above 3 MB. The expectations are then
replayed through ``gpuwatch report`` at once, as CI will. The figures go to
``tests/data/real/<gpu>-figures.json`` and, as Markdown tables, between the markers
of docs/real-gpu.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO)]

import expectations  # noqa: E402
import manifest  # noqa: E402
from run import leak_span_s  # noqa: E402
from tables import markdown  # noqa: E402

from gpuwatch.sessions.reader import SessionReader  # noqa: E402

DEST = REPO / "tests" / "data" / "real"
DOC = REPO / "docs" / "real-gpu.md"
BEGIN, END = "<!-- real-gpu:figures:begin -->", "<!-- real-gpu:figures:end -->"


class Refused(Exception):
    """This run, or one of its sessions, must not be imported as real."""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().removeprefix("nvidia ")).strip("-")[:40]


def session_facts(path: Path) -> dict[str, Any]:
    with SessionReader(path) as r:
        info, gpus = r.info(), r.gpus()
    if info.backend_kind != "nvml":
        raise Refused(f"{path.name}: recorded from the {info.backend_kind} backend, "
                      "not a real driver through NVML")
    name = gpus[0].name if gpus else None
    if not name or any(m in name.lower() for m in manifest.FAKE_MARKERS):
        raise Refused(f"{path.name}: GPU {name!r} is not a real NVIDIA GPU "
                      "(the fake driver's, or none)")
    if not info.driver_version:
        raise Refused(f"{path.name}: no driver version recorded")
    return {"gpu": name, "driver": info.driver_version, "duration_s": info.duration_s,
            "started_at_s": info.started_at_s}


def compact(src: Path, dest: Path) -> int:
    """A vacuumed, gzipped copy of the session; its size in bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / src.name
        with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as a, \
                sqlite3.connect(copy) as b:
            a.backup(b)
        with sqlite3.connect(copy) as b:
            b.execute("VACUUM")
        with copy.open("rb") as f, gzip.open(dest, "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
    return dest.stat().st_size


def entries_of(out: Path, summary: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """(session file, manifest entry) for every session the run may contribute."""
    found, notes = [], []
    for name, phase in summary.get("phases", {}).items():
        entry, rel = phase.get("entry"), phase.get("session")
        if not entry or not rel:
            continue
        path = out / rel
        facts = session_facts(path)
        e: dict[str, Any] = {"file": f"{slug(facts['gpu'])}-{name}.gpuwatch.sqlite.gz",
                             "workload": name, "gpu": facts["gpu"],
                             "driver": facts["driver"], "expect": entry["expect"],
                             "recorded_at": time.strftime(
                                 "%Y-%m-%dT%H:%M:%SZ", time.gmtime(facts["started_at_s"]))}
        if entry.get("pid") is not None:
            e["pid"] = entry["pid"]
        if entry["expect"] == "oom":
            if not entry.get("died_of_out_of_memory") or not entry.get("t_oom_s"):
                notes.append(f"{name}: the process did not die of an out-of-memory error; "
                             "not imported")
                continue
            e["t_oom_s"] = entry["t_oom_s"]
        if entry["expect"] == "leak" and facts["duration_s"] < leak_span_s():
            notes.append(f"{name}: {facts['duration_s']:.0f} s recorded; the leak rule needs "
                         f"{leak_span_s():.0f} s by default; not imported as a leak trace")
            continue
        found.append((path, e))
    for n in notes:
        print(f"import: {n}")
    return found


def write_doc_tables(text: str, path: Path = DOC) -> bool:
    if not path.exists():
        return False
    doc = path.read_text()
    if BEGIN not in doc or END not in doc:
        return False
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    return True


def import_run(out: Path, dest: Path, doc_path: Path = DOC) -> int:
    summary = json.loads((out / "summary.json").read_text())
    if summary.get("mode") != "real":
        raise Refused(f"{out}: a {summary.get('mode')!r} run; only a run on a real GPU is "
                      "imported (a dry run never is)")
    picked = entries_of(out, summary)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "manifest.json"
    old = manifest.load(path) if path.exists() else []
    new_files = {e["file"] for _, e in picked}
    kept = [e for e in old if e["file"] not in new_files]
    for src, e in picked:
        size = compact(src, dest / e["file"])
        print(f"import: {e['file']}: {size / 1e3:.0f} kB, expect {e['expect']}")
    entries = kept + [e for _, e in picked]
    total = sum((dest / e["file"]).stat().st_size for e in entries)
    if total > manifest.MAX_TOTAL_BYTES:
        for _, e in picked:
            (dest / e["file"]).unlink(missing_ok=True)
        raise Refused(f"the traces would take {total / 1e6:.2f} MB, above the "
                      f"{manifest.MAX_TOTAL_BYTES / 1e6:.0f} MB budget; nothing imported")
    doc = {"schema": manifest.SCHEMA, "sessions": entries}
    manifest.validate(doc)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    gpu = summary.get("gpu") or {}
    figures = {"gpu": gpu, "started_at_s": summary.get("started_at_s"),
               "wall_s": summary.get("wall_s"), "figures": summary.get("figures")}
    (dest / f"{slug(gpu.get('name') or 'gpu')}-figures.json").write_text(
        json.dumps(figures, indent=1, default=str) + "\n")
    failed = 0
    for e in entries:
        problems = expectations.check(manifest.replay(dest / e["file"], REPO), e)
        failed += bool(problems)
        print(f"replay: {e['file']}: " + ("ok" if not problems else "; ".join(problems)))
    if write_doc_tables(markdown(summary), doc_path):
        print(f"import: tables written into {doc_path}")
    print(f"import: {len(picked)} traces imported, {len(entries)} listed, "
          f"{total / 1e6:.2f} MB in all; {failed} fail their expectation")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the run's output folder (holds summary.json)")
    ap.add_argument("--dest", type=Path, default=DEST, help="default: tests/data/real")
    ap.add_argument("--doc", type=Path, default=DOC,
                    help="the page whose figures section is replaced (default: "
                         "docs/real-gpu.md)")
    ap.add_argument("--tables", action="store_true",
                    help="only print the figures as Markdown tables (any run, dry included)")
    args = ap.parse_args(argv)
    try:
        if args.tables:
            print(markdown(json.loads((args.out / "summary.json").read_text())))
            return 0
        return import_run(args.out, args.dest, args.doc)
    except Refused as exc:
        print(f"import: refused: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, manifest.ManifestError) as exc:
        print(f"import: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
