"""The window's log file: where it goes, what it keeps, and how it rotates."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gpuwatch.core import logs


@pytest.fixture(autouse=True)
def _restore_logging():
    logger = logging.getLogger(logs.LOGGER)
    before = list(logger.handlers), logger.level
    yield
    for handler in [h for h in logger.handlers if h not in before[0]]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(before[1])


def test_the_file_goes_to_the_xdg_state_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    setup = logs.setup_logging()
    assert setup.file == tmp_path / "state" / "gpuwatch" / "gpuwatch.log"
    assert logs.current() == setup
    logging.getLogger("gpuwatch.ui.tray").info("window closed to the tray")
    logging.getLogger("gpuwatch.ui.tray").debug("not without --verbose")
    text = setup.file.read_text()
    assert "INFO    gpuwatch.ui.tray: window closed to the tray" in text
    assert "not without --verbose" not in text


def test_verbose_logs_debug_to_the_file_and_stderr(tmp_path: Path, capsys) -> None:
    setup = logs.setup_logging(verbose=True, folder=tmp_path)
    logging.getLogger("gpuwatch.x").debug("a debug line")
    assert "a debug line" in setup.file.read_text()
    assert "a debug line" in capsys.readouterr().err


def test_quiet_stderr_gets_warnings_only(tmp_path: Path, capsys) -> None:
    logs.setup_logging(folder=tmp_path)
    logging.getLogger("gpuwatch.x").info("an info line")
    logging.getLogger("gpuwatch.x").warning("a warning line")
    err = capsys.readouterr().err
    assert "a warning line" in err and "an info line" not in err


def test_the_file_rotates_and_keeps_a_bounded_number(tmp_path: Path) -> None:
    setup = logs.setup_logging(folder=tmp_path, max_bytes=2000, backups=2)
    log = logging.getLogger("gpuwatch.x")
    for i in range(200):
        log.info("line %04d %s", i, "x" * 60)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["gpuwatch.log", "gpuwatch.log.1", "gpuwatch.log.2"]
    assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())
    assert "line 0199" in setup.file.read_text()           # the newest in the live file
    assert "line 0000" not in "".join(p.read_text() for p in tmp_path.iterdir())


def test_a_second_setup_replaces_the_first(tmp_path: Path) -> None:
    logs.setup_logging(folder=tmp_path / "a")
    setup = logs.setup_logging(folder=tmp_path / "b")
    logging.getLogger("gpuwatch.x").info("once")
    assert "once" in setup.file.read_text()
    assert "once" not in (tmp_path / "a" / "gpuwatch.log").read_text()
    ours = [h for h in logging.getLogger(logs.LOGGER).handlers if getattr(h, "_gpuwatch", False)]
    assert len(ours) == 2                                    # stderr and one file


def test_an_unwritable_folder_leaves_stderr_and_says_why(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    setup = logs.setup_logging(folder=blocker / "gpuwatch")
    assert setup.file is None
    assert setup.problem and str(blocker / "gpuwatch" / "gpuwatch.log") in setup.problem
    assert "logging to stderr only" in capsys.readouterr().err


def test_no_file_when_not_asked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert logs.setup_logging(to_file=False).file is None
    assert not any(tmp_path.iterdir())
