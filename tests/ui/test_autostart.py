"""Start at login in the tray: the XDG autostart entry the Settings toggle writes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.ui import autostart
from gpuwatch.ui.settings import Preferences, Settings
from gpuwatch.ui.settings_dialog import SettingsDialog

VALIDATOR = shutil.which("desktop-file-validate")
needs_validator = pytest.mark.skipif(VALIDATOR is None, reason="needs desktop-file-validate "
                                     "(apt install desktop-file-utils)")


@pytest.fixture
def config(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


def unquote_exec(value: str) -> list[str]:
    """The Exec key's arguments, read back as the Desktop Entry spec says (string
    unescaping first, then the quoting rules); an independent reader for the tests."""
    text = value.replace("\\\\", "\\")
    args, current, quoted, i, started = [], "", False, 0, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"`$\\':
                current += text[i + 1]
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current += ch
        elif ch == '"':
            quoted, started = True, True
        elif ch == " ":
            if started or current:
                args.append(current)
            current, started = "", False
        else:
            current += ch
        i += 1
    if started or current:
        args.append(current)
    return [a.replace("%%", "%") for a in args]


def exec_value(text: str) -> str:
    return next(line[5:] for line in text.split("\n") if line.startswith("Exec="))


@needs_validator
def test_the_entry_is_a_valid_desktop_file_that_starts_gpuwatch_in_the_tray(config) -> None:
    command = ["/opt/my apps/gpu watch/gpuwatch"]          # spaces need quoting
    path = autostart.enable(command)
    assert path == config / "autostart" / "gpuwatch.desktop"
    run = subprocess.run([VALIDATOR, str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout.strip(), run.stdout + run.stderr
    text = path.read_text()
    assert unquote_exec(exec_value(text)) == [*command, "gui", "--tray"]
    assert "Icon=gpuwatch" in text and "Terminal=false" in text
    assert autostart.is_enabled()


def test_the_default_command_runs_this_gpuwatch(config) -> None:
    path = autostart.enable()
    args = unquote_exec(exec_value(path.read_text()))
    assert args[-2:] == ["gui", "--tray"]
    assert Path(args[0]).is_absolute() and Path(args[0]).exists()
    beside = Path(sys.executable).parent / "gpuwatch"
    if beside.exists():                        # a venv or pip install: its script
        assert args == [str(beside), "gui", "--tray"]
    else:
        assert args[1:] == ["-m", "gpuwatch", "gui", "--tray"]


def test_off_removes_the_entry_and_a_desktop_switch_counts_as_off(config) -> None:
    assert not autostart.is_enabled()
    autostart.set_enabled(True)
    assert autostart.is_enabled()
    path = autostart.autostart_path()
    path.write_text(path.read_text().replace("X-GNOME-Autostart-enabled=true",
                                             "X-GNOME-Autostart-enabled=false"))
    assert not autostart.is_enabled()          # GNOME's session settings switched it off
    path.write_text(path.read_text() + "Hidden=true\n")
    assert not autostart.is_enabled()
    autostart.set_enabled(True)                # on again: a fresh entry
    assert autostart.is_enabled()
    autostart.set_enabled(False)
    assert not path.exists()
    autostart.set_enabled(False)               # off twice is fine


def test_a_folder_that_cannot_be_written_raises_oserror(config) -> None:
    config.mkdir(parents=True)
    (config / "autostart").write_text("a file where the folder should be")
    with pytest.raises(OSError):
        autostart.enable(["/usr/bin/gpuwatch"])


def test_the_settings_toggle_shows_and_sets_the_entry(qtbot, config, tmp_path) -> None:
    settings = Settings(str(tmp_path / "gpuwatch.ini"))
    prefs = settings.preferences()
    assert prefs.start_at_login is False
    dialog = SettingsDialog(prefs)
    qtbot.addWidget(dialog)
    assert not dialog.start_at_login.isChecked()
    dialog.start_at_login.setChecked(True)
    chosen = dialog.preferences()
    assert chosen.start_at_login is True
    from gpuwatch.ui.app import _apply_start_at_login

    _apply_start_at_login(chosen, None)        # what the app does on preferences_changed
    assert autostart.is_enabled()
    settings.set_preferences(chosen)
    settings.sync()
    assert "start_at_login" not in Path(settings.path).read_text()   # the file holds it
    assert Settings(settings.path).preferences().start_at_login is True
    autostart.disable()                        # removed outside the app: the dialog knows
    assert not SettingsDialog(chosen).start_at_login.isChecked()
    assert Settings(settings.path).preferences().start_at_login is False
    assert SettingsDialog(Settings(settings.path).preferences()).start_at_login.isChecked() \
        is False
    assert Preferences().start_at_login is False


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
                        max_size=20), min_size=1, max_size=4))
def test_any_command_reads_back_unchanged(command: list[str]) -> None:
    text = autostart.entry_text(command)
    assert unquote_exec(exec_value(text)) == [*command, "gui", "--tray"]
    assert text.count("\n") == 10             # no argument breaks a line


@given(st.binary(max_size=400))
def test_any_entry_file_reads_as_on_or_off(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("config")
    (folder / "autostart").mkdir()
    (folder / "autostart" / "gpuwatch.desktop").write_bytes(data)
    import os

    old = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(folder)
    try:
        on = autostart.is_enabled()
    finally:
        if old is None:
            del os.environ["XDG_CONFIG_HOME"]
        else:
            os.environ["XDG_CONFIG_HOME"] = old
    assert isinstance(on, bool)
    if b"Hidden" not in data and b"Autostart-enabled" not in data:
        assert on                  # the file is there and nothing switched it off
