#!/usr/bin/env python3
"""Print pip constraints that pin every declared dependency to its lowest allowed version.

`make test-floor` installs gpuwatch with these and runs the suite, so a floor in
pyproject.toml is a version that was actually tested, not a guess.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_FLOOR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)")


def floors(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    specs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    pins = []
    for spec in specs:
        match = _FLOOR.match(spec)
        if match is None:
            raise SystemExit(f"floor_constraints: {spec!r} declares no '>=' floor")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    print("\n".join(floors(root / "pyproject.toml")))
