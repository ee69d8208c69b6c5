"""Start at login in the tray: an XDG autostart entry, ``$XDG_CONFIG_HOME/autostart``.

The entry's existence is the setting: Settings shows it as on while the file is there
(and not disabled by the desktop's own session settings), turning it off deletes the
file. Its command is the one running now (the bundle's binary, the installed
``gpuwatch`` script, or this Python with ``-m gpuwatch``), with ``gui --tray``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

FILE_NAME = "gpuwatch.desktop"
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def autostart_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or ""
    base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
    return base / "autostart"


def autostart_path() -> Path:
    return autostart_dir() / FILE_NAME


def launch_command() -> list[str]:
    """How to start this same gpuwatch again, as an argument list."""
    if getattr(sys, "frozen", False):
        return [os.path.abspath(sys.executable)]
    # the script beside this Python (a venv's bin: not resolved, its python is a link)
    here = Path(os.path.abspath(sys.executable)).parent
    script = shutil.which("gpuwatch", path=str(here))
    if script:
        return [os.path.abspath(script)]
    return [os.path.abspath(sys.executable), "-m", "gpuwatch"]


def exec_quote(arg: str) -> str:
    """One argument of an Exec key, quoted as the Desktop Entry spec asks (the string
    escaping of the file format included: a backslash is written twice more)."""
    arg = arg.replace("%", "%%")
    if not arg or any(ch in _RESERVED for ch in arg):
        inner = "".join("\\" + ch if ch in '"`$\\' else ch for ch in arg)
        arg = f'"{inner}"'
    return arg.replace("\\", "\\\\")


def entry_text(command: list[str]) -> str:
    exec_line = " ".join(exec_quote(a) for a in [*command, "gui", "--tray"])
    return ("[Desktop Entry]\n"
            "Type=Application\n"
            "Name=gpuwatch\n"
            "Comment=GPU memory monitor, started at login in the system tray\n"
            "Icon=gpuwatch\n"
            f"Exec={exec_line}\n"
            "Terminal=false\n"
            "X-GNOME-Autostart-enabled=true\n"
            "X-GNOME-Autostart-Delay=5\n"
            "X-KDE-autostart-after=panel\n")


def is_enabled() -> bool:
    """Whether the entry is there and the desktop has not switched it off."""
    try:
        text = autostart_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    lines = {line.strip().replace(" ", "") for line in text.splitlines()}
    return "Hidden=true" not in lines and "X-GNOME-Autostart-enabled=false" not in lines


def enable(command: list[str] | None = None) -> Path:
    """Write the entry (atomically); raises OSError where it cannot be written."""
    path = autostart_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        tmp.write_text(entry_text(command or launch_command()), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def disable() -> None:
    autostart_path().unlink(missing_ok=True)


def set_enabled(on: bool) -> None:
    if on != is_enabled():
        enable() if on else disable()
