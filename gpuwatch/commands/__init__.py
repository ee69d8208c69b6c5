"""The subcommands of the `gpuwatch` command line.

Each has its one-line summary here, its options declared by a ``declare`` function
(imported only when that subcommand is in use, see :mod:`gpuwatch.commands.parsing`)
and a run function imported only when it runs. Importing this package costs nothing.
"""

from __future__ import annotations

# (name, one-line summary for `gpuwatch --help`, "module:function" declaring its options)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("gui", "open the desktop window (the default)", "gpuwatch.commands.gui:declare"),
    ("snapshot", "take one sample and print it (table or JSON)",
     "gpuwatch.commands.telemetry_args:declare_snapshot"),
    ("record", "sample headless and print each tick",
     "gpuwatch.commands.telemetry_args:declare_record"),
    ("scenarios", "list the built-in simulated scenarios",
     "gpuwatch.commands.telemetry_args:declare_scenarios"),
    ("report", "export a recorded session as HTML, PDF, CSV or JSON",
     "gpuwatch.commands.session_args:declare_report"),
    ("sessions", "list recorded sessions, or prune old ones",
     "gpuwatch.commands.session_args:declare_sessions"),
    ("estimate", "memory budget of a model before launching it",
     "gpuwatch.commands.estimate_args:declare"),
    ("plan", "hardware, step time and cloud cost for a model and setup",
     "gpuwatch.commands.plan_args:declare"),
    ("serve", "serve the GPUs as a Prometheus endpoint",
     "gpuwatch.commands.serve_args:declare"),
)


def summary(name: str) -> str:
    """The one-line summary of subcommand ``name``."""
    return next(text for command, text, _ in COMMANDS if command == name)
