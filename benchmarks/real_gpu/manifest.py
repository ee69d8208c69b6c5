"""``tests/data/real/manifest.json``: the real-GPU traces and what each must show.

The contract is DESIGN.md's ("Real-GPU traces"): ``{"sessions": [{"file", "workload",
"gpu", "driver", "expect", "t_oom_s"}]}``, ``t_oom_s`` for ``oom`` only. Extended with
``pid`` (the process that dies, leaks or fragments, where the check names it) and
``recorded_at``. A manifest that breaks it is refused with the entry and the reason.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from expectations import EXPECTS

SCHEMA = "gpuwatch.real-traces/1"
MAX_TOTAL_BYTES = 3 * 10**6          # every trace together, as stored
FAKE_MARKERS = ("fake",)             # the vendored fake driver names its GPUs "NVIDIA Fake GPU"


class ManifestError(ValueError):
    """The manifest is not one gpuwatch can replay; the message says where and why."""


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ManifestError(f"{where}: {key!r} must be a non-empty text of at most 200 "
                            f"characters, not {value!r:.60}")
    return value


def validate(doc: Any) -> list[dict[str, Any]]:
    """The entries of a manifest document, checked; ManifestError names the first fault."""
    if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), list):
        raise ManifestError('the manifest must be an object with a "sessions" list')
    entries = []
    seen: set[str] = set()
    for i, entry in enumerate(doc["sessions"]):
        where = f"sessions[{i}]"
        if not isinstance(entry, dict):
            raise ManifestError(f"{where}: an entry must be an object")
        name = _text(entry, "file", where)
        if "/" in name or "\\" in name or name.startswith(".") or not (
                name.endswith(".gpuwatch.sqlite") or name.endswith(".gpuwatch.sqlite.gz")):
            raise ManifestError(f"{where}: file {name!r:.60} must be a plain name ending in "
                                ".gpuwatch.sqlite or .gpuwatch.sqlite.gz")
        if name in seen:
            raise ManifestError(f"{where}: file {name!r} is listed twice")
        seen.add(name)
        for key in ("workload", "gpu", "driver"):
            _text(entry, key, where)
        if any(m in entry["gpu"].lower() for m in FAKE_MARKERS):
            raise ManifestError(f"{where}: {entry['gpu']!r} is the fake driver's GPU, "
                                "not a real one")
        if entry.get("expect") not in EXPECTS:
            raise ManifestError(f"{where}: expect must be one of {', '.join(EXPECTS)}, "
                                f"not {entry.get('expect')!r:.40}")
        t = entry.get("t_oom_s")
        if entry["expect"] == "oom":
            if isinstance(t, bool) or not isinstance(t, int | float) or not (
                    math.isfinite(t) and 0 < t < 10**7):
                raise ManifestError(f"{where}: an oom entry needs t_oom_s, seconds from the "
                                    f"session's start to the death (a positive number), "
                                    f"not {t!r:.40}")
        elif t is not None:
            raise ManifestError(f"{where}: t_oom_s is for oom entries only")
        pid = entry.get("pid")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)
                                or not 0 < pid < 2**31):
            raise ManifestError(f"{where}: pid must be a process id, not {pid!r:.40}")
        entries.append(entry)
    return entries


def load(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ManifestError(f"{path}: not readable JSON ({exc})") from None
    return validate(doc)


def unpacked(trace: Path, folder: Path) -> Path:
    """The session file itself (a ``.gz`` trace decompressed into ``folder``)."""
    if trace.suffix != ".gz":
        return trace
    target = folder / trace.name.removesuffix(".gz")
    with gzip.open(trace, "rb") as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def replay(trace: Path, repo: Path) -> dict[str, Any]:
    """``gpuwatch report TRACE --format json``, as a user runs it, parsed."""
    with tempfile.TemporaryDirectory(prefix="gpuwatch-replay-") as tmp:
        session = unpacked(trace, Path(tmp))
        out = Path(tmp) / "report.json"
        done = subprocess.run([sys.executable, "-m", "gpuwatch", "report", str(session),
                               "--format", "json", "-o", str(out)], capture_output=True,
                              text=True, cwd=repo, check=False,
                              env={**_env(), "PYTHONPATH": str(repo)})
        if done.returncode != 0:
            raise ManifestError(f"{trace.name}: gpuwatch report failed: {done.stderr.strip()}")
        return json.loads(out.read_text())


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
