"""The layering of DESIGN.md, checked on the source: who may import what."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gpuwatch"

# (third-party or gpuwatch top-level module) -> the only places allowed to import it
RESTRICTED = {
    "PySide6": ("ui/", "sessions/pdf"),
    "pyqtgraph": ("ui/",),
    "shiboken6": ("ui/",),
    "pynvml": ("telemetry/nvml/", "telemetry/sim/"),
    "psutil": ("telemetry/host.py",),
    "torch": ("probe/",),
    "prometheus_client": ("exporter/",),
}
# package -> gpuwatch packages it may import
ALLOWED_INTERNAL = {
    "core": {"core"},
    "budget": {"core", "budget"},
    "telemetry": {"core", "telemetry"},
    "advisor": {"core", "budget", "advisor"},
    "sessions": {"core", "budget", "advisor", "sessions"},
    "probe": {"core", "budget", "probe"},
    "plan": {"core", "budget", "plan"},
    "exporter": {"core", "budget", "telemetry", "advisor", "exporter"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_respect_layers(path: Path) -> None:
    rel = path.relative_to(PACKAGE).as_posix()
    layer = rel.split("/")[0] if "/" in rel else None
    for name in _imports(path):
        top = name.split(".")[0]
        if top in RESTRICTED:
            assert rel.startswith(RESTRICTED[top]), f"{rel} imports {name}"
        if top == "gpuwatch" and layer in ALLOWED_INTERNAL and "." in name:
            target = name.split(".")[1]
            if (PACKAGE / target).is_dir():
                assert target in ALLOWED_INTERNAL[layer], f"{rel} ({layer}) imports {name}"


def test_the_check_sees_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import psutil\nfrom PySide6 import QtCore\n")
    assert _imports(bad) == ["psutil", "PySide6"]


def test_there_are_sources_to_check() -> None:
    assert any(p.parent.name == "nvml" for p in SOURCES)
