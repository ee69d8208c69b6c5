"""packaging/install.sh into a throwaway home: the XDG places, what desktop tooling
finds there, and a clean uninstall."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_packaging import wait_for

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "packaging" / "install.sh"
GPUWATCH = Path(sys.executable).parent / "gpuwatch"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local/share"),
                XDG_CONFIG_HOME=str(home / ".config"), PYTHONPATH=str(ROOT))


def _install(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(INSTALL), *args], env=env, capture_output=True,
                          text=True, cwd=ROOT)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _exec_program(desktop: Path) -> str:
    line = next(x for x in desktop.read_text().splitlines() if x.startswith("Exec="))
    return line[5:].rsplit(" gui", 1)[0].strip('"')


@pytest.mark.skipif(not GPUWATCH.exists(), reason="needs the gpuwatch script beside Python")
def test_install_puts_everything_in_the_xdg_places_and_uninstall_takes_it_back(
        tmp_path: Path) -> None:
    env = _home(tmp_path)
    data, config = Path(env["XDG_DATA_HOME"]), Path(env["XDG_CONFIG_HOME"])
    run = _install(env, "--exec", str(GPUWATCH))
    assert run.returncode == 0, run.stderr
    desktop = data / "applications" / "gpuwatch.desktop"
    assert _exec_program(desktop) == str(GPUWATCH)
    for size in SIZES:
        assert (data / f"icons/hicolor/{size}x{size}/apps/gpuwatch.png").is_file()
    assert (data / "icons/hicolor/scalable/apps/gpuwatch.svg").is_file()
    assert (data / "metainfo/io.github.gpuwatch.gpuwatch.metainfo.xml").is_file()
    bash = data / "bash-completion/completions/gpuwatch"
    assert subprocess.run(["bash", "-n", str(bash)]).returncode == 0
    assert (data / "zsh/site-functions/_gpuwatch").read_text().startswith("#compdef gpuwatch")
    assert "complete --command gpuwatch" in (config / "fish/completions/gpuwatch.fish").read_text()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True,
                               text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout
    # a start-at-login entry from the app, then uninstall: all of it goes
    (config / "autostart").mkdir(parents=True)
    (config / "autostart" / "gpuwatch.desktop").write_text("[Desktop Entry]\n")
    kept = data / "gpuwatch" / "sessions" / "run.gpuwatch.sqlite"
    kept.parent.mkdir(parents=True)
    kept.write_text("a recorded session")
    run = _install(env, "--uninstall")
    assert run.returncode == 0, run.stderr
    left = _files(Path(env["HOME"])) - {".local/share/applications/mimeinfo.cache",
                                        ".local/share/icons/hicolor/icon-theme.cache"}
    assert left == {".local/share/gpuwatch/sessions/run.gpuwatch.sqlite"}
    assert "Sessions, settings and logs are kept" in run.stdout


def test_the_icon_theme_lookup_finds_the_installed_icon(tmp_path: Path, x_display) -> None:
    """Qt on X11 looks icons up in the XDG data folders, as the desktop's launcher does."""
    env = _home(tmp_path)
    env.update(x_display)
    run = _install(env, "--exec", str(GPUWATCH) if GPUWATCH.exists() else "/bin/true")
    assert run.returncode == 0, run.stderr
    probe = ("from PySide6.QtGui import QGuiApplication, QIcon\n"
             "app = QGuiApplication([])\n"
             "icon = QIcon.fromTheme('gpuwatch')\n"
             "print(QIcon.themeName(), icon.name(), *sorted({s.width() for s in "
             "icon.availableSizes()}))\n")
    found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           text=True, check=True)
    theme, name, *sizes = found.stdout.split()
    assert (theme, name) == ("hicolor", "gpuwatch")
    assert [int(s) for s in sizes] == list(SIZES)


@pytest.mark.skipif(shutil.which("gio") is None, reason="needs gio (libglib2.0-bin)")
@pytest.mark.skipif(not GPUWATCH.exists(), reason="needs the gpuwatch script beside Python")
def test_the_installed_entry_launches_the_window(tmp_path: Path, x_display) -> None:
    """GLib's desktop-entry launcher (what GNOME's menu uses) starts the window from it."""
    env = _home(tmp_path)
    env.update(x_display, XDG_STATE_HOME=str(tmp_path / "state"),
               GPUWATCH_DATA_DIR=str(tmp_path / "data"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    assert _install(env, "--exec", str(GPUWATCH)).returncode == 0
    desktop = Path(env["XDG_DATA_HOME"]) / "applications" / "gpuwatch.desktop"
    # the window inherits gio's output: a file, not a pipe that would stay open
    with open(tmp_path / "gio.out", "w") as out:
        launched = subprocess.run(["gio", "launch", str(desktop)], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=120)
    assert launched.returncode == 0, (tmp_path / "gio.out").read_text()
    log = tmp_path / "state" / "gpuwatch" / "gpuwatch.log"
    wait_for(lambda: log.is_file() and "listening on" in log.read_text(), "the window")
    pid = int(re.search(r"listening on .* \(pid (\d+)\)", log.read_text()).group(1))
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or
             "zombie" in Path(f"/proc/{pid}/status").read_text(), "the window to quit")


def test_a_path_with_spaces_is_quoted_in_the_entry(tmp_path: Path) -> None:
    env = _home(tmp_path)
    program = tmp_path / "my apps" / "gpuwatch"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    run = _install(env, "--exec", str(program))
    assert run.returncode == 0, run.stderr
    desktop = Path(env["XDG_DATA_HOME"]) / "applications" / "gpuwatch.desktop"
    assert f'Exec="{program}" gui\n' in desktop.read_text()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True,
                               text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout


def test_a_bundle_is_copied_and_linked(tmp_path: Path) -> None:
    env = _home(tmp_path)
    bundle = tmp_path / "dist" / "gpuwatch"
    (bundle / "completions").mkdir(parents=True)
    (bundle / "gpuwatch").write_text("#!/bin/sh\necho frozen gpuwatch\n")
    (bundle / "gpuwatch").chmod(0o755)
    from gpuwatch.commands.completion import write_all

    write_all(bundle / "completions")
    run = _install(env, "--bundle", str(bundle))
    assert run.returncode == 0, run.stderr
    home = Path(env["HOME"])
    link = home / ".local/bin/gpuwatch"
    assert link.is_symlink() and link.resolve() == home / ".local/lib/gpuwatch/gpuwatch"
    assert subprocess.run([str(link)], capture_output=True, text=True).stdout == \
        "frozen gpuwatch\n"
    desktop = Path(env["XDG_DATA_HOME"]) / "applications" / "gpuwatch.desktop"
    assert _exec_program(desktop) == str(home / ".local/lib/gpuwatch/gpuwatch")
    run = _install(env, "--uninstall")
    assert run.returncode == 0, run.stderr
    assert not link.exists() and not (home / ".local/lib/gpuwatch").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--bundle", "/nonexistent"], "is not a gpuwatch bundle"),
    (["--exec", "/nonexistent/gpuwatch"], "is not an executable program"),
    (["--frobnicate"], "unknown argument '--frobnicate'"),
    (["--bundle"], "--bundle needs"),
])
def test_bad_arguments_exit_2_and_say_why(tmp_path: Path, args: list[str], message: str) -> None:
    run = _install(_home(tmp_path), *args)
    assert run.returncode == 2
    assert message in run.stderr


def test_glib_and_gtk_resolve_the_installed_entry_name_and_icon(tmp_path: Path,
                                                                 x_display) -> None:
    """GLib's GDesktopAppInfo (GNOME Shell's application list) finds the entry by its
    desktop id with its name and icon; GTK's icon theme finds the icon's files."""
    env = _home(tmp_path)
    env.update(x_display)
    program = str(GPUWATCH) if GPUWATCH.exists() else "/bin/true"
    assert _install(env, "--exec", program).returncode == 0
    run = subprocess.run([sys.executable, str(ROOT / "tests/packaging/xdg_lookup.py"),
                          "gpuwatch.desktop"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    if found.get("error") == "no libgio-2.0":
        pytest.skip("needs GLib's libgio (apt install libglib2.0-0)")
    data = Path(env["XDG_DATA_HOME"])
    assert found["file"] == str(data / "applications" / "gpuwatch.desktop")
    assert (found["name"], found["icon"], found["shown_in_menus"]) == ("gpuwatch", "gpuwatch",
                                                                       True)
    assert found["commandline"] == f"{program} gui"
    if "gtk_icon_files" in found:                        # GTK 3 is installed here
        for size, path in found["gtk_icon_files"].items():
            assert path == str(data / f"icons/hicolor/{size}x{size}/apps/gpuwatch.png")
