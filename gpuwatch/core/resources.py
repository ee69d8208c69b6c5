"""Where gpuwatch's shipped files (scenarios, icons, catalogs) are found.

Installed wheels carry ``resources/`` inside the package (``gpuwatch/resources``); a
source checkout or editable install reads the repository's top-level ``resources/``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


@cache
def resources_dir() -> Path:
    for candidate in (_PACKAGE / "resources", _PACKAGE.parent / "resources"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gpuwatch's resources folder is missing from this installation")


def resource_path(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
