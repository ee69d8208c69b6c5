"""Exporting a session to a report file, written atomically (a failure leaves nothing)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.report_csv import write_csv_zip
from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_json import report_to_json
from gpuwatch.sessions.report_model import build_report

FORMATS = ("html", "pdf", "csv", "json")
EXTENSIONS = {"html": ".html", "pdf": ".pdf", "csv": ".zip", "json": ".json"}
Progress = Callable[[float, str], None]    # (fraction done, what is happening)


class ExportError(Exception):
    """The report could not be written; names the path and the reason."""


def default_output(session: Path, fmt: str) -> Path:
    base = session.name.removesuffix(".sqlite").removesuffix(".gpuwatch")
    return session.with_name(base + "-report" + EXTENSIONS[fmt])


def export(session: str | Path, fmt: str, output: str | Path | None = None,
           progress: Progress | None = None) -> Path:
    """Write the report; returns its path. The session file is only ever read."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    session = Path(session)
    target = Path(output) if output is not None else default_output(session, fmt)
    step = progress or (lambda fraction, text: None)
    step(0.0, "reading the session")
    with SessionReader(session) as reader:
        if fmt == "csv":
            return _atomic_write(target, lambda f: write_csv_zip(reader, f), step)
        report = build_report(reader)
    step(0.5, "rendering")
    if fmt == "json":
        data = (json.dumps(report_to_json(report), indent=2) + "\n").encode("utf-8")
    elif fmt == "html":
        data = render_html(report).encode("utf-8")
    else:
        from gpuwatch.sessions.pdf import render_pdf  # Qt is loaded only for PDF
        data = render_pdf(report)
    return _atomic_write(target, lambda f: f.write(data), step)


def _atomic_write(target: Path, write: Callable, step: Progress) -> Path:
    step(0.8, f"writing {target}")
    directory = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ExportError(f"{target}: is a folder; give a file name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as exc:
        raise ExportError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, 0o644)     # mkstemp makes it private; a report is meant to be shared
        os.replace(tmp, target)
    except SessionFileError:
        os.unlink(tmp)
        raise
    except OSError as exc:
        os.unlink(tmp)
        raise ExportError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    except BaseException:
        os.unlink(tmp)
        raise
    step(1.0, f"wrote {target}")
    return target
