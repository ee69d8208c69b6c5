"""The desktop entry, the AppStream metainfo and the application icon: valid, and
consistent with the app (its desktop file name, version, icon and screenshots)."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpuwatch import __version__

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
DESKTOP = PACKAGING / "gpuwatch.desktop"
METAINFO = PACKAGING / "io.github.gpuwatch.gpuwatch.metainfo.xml"
HICOLOR = ROOT / "resources" / "icons" / "hicolor"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


def _entry(path: Path) -> dict[str, str]:
    group, values = None, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            group = line.strip("[]")
        elif "=" in line and group == "Desktop Entry":
            key, _, value = line.partition("=")
            values[key] = value
    return values


def test_desktop_file_validates() -> None:
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("needs desktop-file-validate (apt install desktop-file-utils)")
    run = subprocess.run([tool, str(DESKTOP)], capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout.strip(), run.stdout + run.stderr


def test_metainfo_validates() -> None:
    tool = shutil.which("appstreamcli")
    if tool is None:
        pytest.skip("needs appstreamcli (apt install appstream)")
    run = subprocess.run([tool, "validate", "--no-net", str(METAINFO)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not re.search(r"^[EW]:", run.stdout, re.M), run.stdout      # no errors, no warnings


def test_the_desktop_file_is_the_one_the_app_names() -> None:
    app = (ROOT / "gpuwatch" / "ui" / "app.py").read_text()
    name = re.search(r'setDesktopFileName\("([^"]+)"\)', app).group(1)
    assert DESKTOP.name == f"{name}.desktop"
    entry = _entry(DESKTOP)
    assert entry["Icon"] == "gpuwatch" and entry["Exec"].split()[0] == "gpuwatch"
    assert entry["StartupWMClass"] == "gpuwatch"


def test_metainfo_matches_the_app() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == METAINFO.name.removesuffix(".metainfo.xml")
    assert root.findtext("launchable") == DESKTOP.name
    assert root.findtext("project_license") == "MIT"
    releases = [r.get("version") for r in root.iter("release")]
    assert releases[0] == __version__                      # the newest release is this one
    shots = [i.text for i in root.iter("image")]
    assert shots
    for url in shots:
        assert url.startswith("https://raw.githubusercontent.com/gpuwatch/gpuwatch/main/")
        local = ROOT / url.split("/main/", 1)[1]
        assert local.is_file(), f"{url}: no {local.relative_to(ROOT)} in the repository"


def test_the_icon_comes_in_every_hicolor_size() -> None:
    from PySide6.QtGui import QImage

    assert (HICOLOR / "scalable" / "apps" / "gpuwatch.svg").is_file()
    for size in SIZES:
        image = QImage(str(HICOLOR / f"{size}x{size}" / "apps" / "gpuwatch.png"))
        assert (image.width(), image.height()) == (size, size)
        assert image.hasAlphaChannel()


def test_the_app_icon_has_every_size(qapp) -> None:
    from gpuwatch.ui.app_icon import app_icon, bundled_icon

    icon = bundled_icon()
    assert not icon.isNull()
    assert {s.width() for s in icon.availableSizes()} >= set(SIZES)
    assert not app_icon().pixmap(48, 48).isNull()
