"""`gpuwatch scenarios`: the built-in simulated scenarios, one line each.

Its options are declared in :mod:`gpuwatch.commands.telemetry_args`; this module is
imported only when the command runs.
"""

from __future__ import annotations

import argparse

from gpuwatch.core.units import format_duration
from gpuwatch.core.wording import plural
from gpuwatch.telemetry.sim.catalog import builtin_scenarios


def run_scenarios(args: argparse.Namespace) -> int:
    scenarios = builtin_scenarios()
    width = max(len(s.name) for s in scenarios)
    for s in scenarios:
        print(f"{s.name:<{width}}  {plural(len(s.gpus), 'GPU'):>6}  "
              f"{format_duration(s.duration_s):>11}  "
              f"{s.description}")
    return 0
