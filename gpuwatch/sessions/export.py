"""Exporting a session to a report file, written atomically (a failure leaves nothing)."""

from __future__ import annotations

import io
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpuwatch.core.output_paths import OutputPathError, check_output_file, still_safe_to_replace
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.protected import overwrite_problem
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.report_csv import write_csv_zip, write_gpu_samples_csv
from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_json import report_to_json
from gpuwatch.sessions.report_model import build_report

FORMATS = ("html", "pdf", "csv", "json")
EXTENSIONS = {"html": ".html", "pdf": ".pdf", "csv": ".zip", "json": ".json"}
# an output's extension -> the format it implies (``report -o r.pdf`` writes PDF); csv
# goes into a .zip of every table, or into a .csv file of the GPU samples alone
FORMAT_OF_EXTENSION = {".html": "html", ".htm": "html", ".pdf": "pdf", ".json": "json",
                       ".zip": "csv", ".csv": "csv"}
Progress = Callable[[float, str], None]    # (fraction done, what is happening)


class ExportError(Exception):
    """The report could not be written; names the path and the reason."""


def default_output(session: Path, fmt: str) -> Path:
    base = session.name.removesuffix(".sqlite").removesuffix(".gpuwatch") or "session"
    return session.with_name(base + "-report" + EXTENSIONS[fmt])


def choose_format(fmt: str | None, output: str | None) -> str:
    """The format to write: ``fmt`` if given, else the one the output's extension names.

    Without ``fmt``: no output, a folder (an existing one, or a path ending in a
    separator) or ``-`` gives html (json for ``-``); an extension in
    FORMAT_OF_EXTENSION gives its format; any other extension is refused. With
    ``fmt``, an output whose known extension names another format is a contradiction
    and refused. Raises ExportError with one sentence."""
    if fmt is not None and fmt not in FORMATS:
        raise ExportError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if output is None or output == "" or output_is_folder(output):
        return fmt or "html"
    if output == "-":
        return fmt or "json"
    suffix = Path(output).suffix.lower()
    implied = FORMAT_OF_EXTENSION.get(suffix)
    if fmt is None:
        if implied is None:
            raise ExportError(
                f"{output}: cannot tell the report format from the extension "
                f"{suffix or '(none)'}; add --format {{{','.join(FORMATS)}}} or end the "
                f"name in {', '.join(FORMAT_OF_EXTENSION)}")
        return implied
    if implied is not None and implied != fmt:
        raise ExportError(f"{output}: the extension {suffix} means {implied}, but --format "
                          f"{fmt} was asked for; change one of them")
    return fmt


def output_is_folder(output: str | Path) -> bool:
    text = os.fspath(output)
    return text.endswith(os.sep) or bool(os.altsep and text.endswith(os.altsep)) or \
        os.path.isdir(text)


def export(session: str | Path, fmt: str, output: str | Path | None = None,
           progress: Progress | None = None) -> Path:
    """Write the report; returns its path. The session file is only ever read.

    ``output`` may be a new file in an existing folder, an existing regular file (or a
    link to one, written through), or a folder to write the default name into; see
    :func:`gpuwatch.core.output_paths.check_output_file`. Raises ExportError for an
    output that is refused, SessionFileError for a session that cannot be read."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    session = Path(session)
    if not session.name:
        raise SessionFileError(str(session), "is not a session file")
    default = default_output(session, fmt)
    try:
        target = check_output_file(default if output is None else output, "report",
                                   default_name=default.name)
    except OutputPathError as exc:
        raise ExportError(str(exc)) from None
    guard = _guard(target, session)
    guard()
    step = progress or (lambda fraction, text: None)
    step(0.0, "reading the session")
    with SessionReader(session) as reader:
        if fmt == "csv" and target.suffix.lower() == ".csv":
            return _atomic_write(target, lambda f: _text_into(f, reader), step, guard)
        if fmt == "csv":
            return _atomic_write(target, lambda f: write_csv_zip(reader, f), step, guard)
        report = build_report(reader)
    step(0.5, "rendering")
    if fmt == "json":
        data = (json.dumps(report_to_json(report), indent=2) + "\n").encode("utf-8")
    elif fmt == "html":
        data = render_html(report).encode("utf-8")
    else:
        from gpuwatch.sessions.pdf import render_pdf  # Qt is loaded only for PDF
        data = render_pdf(report)
    return _atomic_write(target, lambda f: f.write(data), step, guard)


def _text_into(binary: io.BufferedIOBase, reader: SessionReader) -> None:
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
    write_gpu_samples_csv(reader, text)
    text.flush()
    text.detach()               # the caller closes the file


def _guard(target: Path, session: Path) -> Callable[[], None]:
    """Refuses (ExportError) a target that is the session read, or any session."""
    def check() -> None:
        problem = overwrite_problem(target, "report", [session])
        if problem is not None:
            raise ExportError(problem)
    return check


def _atomic_write(target: Path, write: Callable, step: Progress,
                  guard: Callable[[], None]) -> Path:
    """Write a temporary file beside ``target`` and rename it over ``target``.

    ``target`` has been checked (absent, or a regular file); it is checked again just
    before the rename, so a pipe or device put there meanwhile is never replaced. An
    existing file keeps its permissions; a new one is readable by all (0644)."""
    step(0.8, f"writing {target}")
    directory = target.parent if str(target.parent) else Path(".")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = 0o644            # a report is meant to be shared
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as exc:
        raise ExportError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, mode)
        if not still_safe_to_replace(target):
            raise ExportError(f"{target}: is no longer a regular file; the report was not "
                              "written")
        guard()                 # a session put there meanwhile is not replaced either
        os.replace(tmp, target)
    except OSError as exc:
        os.unlink(tmp)
        raise ExportError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    except BaseException:
        os.unlink(tmp)
        raise
    step(1.0, f"wrote {target}")
    return target
