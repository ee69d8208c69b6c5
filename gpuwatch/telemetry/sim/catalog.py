"""The built-in scenarios shipped in ``resources/scenarios`` and lookup by name or path."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.core.resources import resource_path
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.fields import source_name
from gpuwatch.telemetry.sim.scenario import Scenario, load_scenario_file

DEFAULT_SCENARIO = "workstation"


def builtin_dir() -> Path:
    return resource_path("scenarios")


def builtin_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.toml"))


def builtin_scenarios() -> list[Scenario]:
    return [load_scenario_file(builtin_dir() / f"{name}.toml") for name in builtin_names()]


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for names no file can have (too long, a NUL byte…)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def resolve_scenario(name_or_path: str | None) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    name = name_or_path or DEFAULT_SCENARIO
    builtin = builtin_dir() / f"{name}.toml"
    if "/" not in name and not name.endswith(".toml") and _is_file(builtin):
        return load_scenario_file(builtin)
    path = Path(name)
    if _is_file(path) or "/" in name or name.endswith(".toml"):
        return load_scenario_file(path)
    raise ScenarioError(
        source_name(path), None,
        f"is neither a built-in scenario ({', '.join(builtin_names())}) nor a scenario file",
    )
