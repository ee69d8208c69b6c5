"""How a GPU card shows its state in colour and shape: the badge (words, icon, colours,
tooltip), the colour of % used, and the ticks at the memory thresholds. No widgets
here: the card hands these to its badge, figure, bar and sparkline."""

from __future__ import annotations

from gpuwatch.core.hints import Severity
from gpuwatch.core.snapshot import GpuState
from gpuwatch.ui.live.card_badge import ICON_CRITICAL, ICON_LOST, ICON_WARNING
from gpuwatch.ui.live.card_state import LEVEL_WORDS, STATE_WORDS, fill_level, level_color
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme

_ICONS = {Severity.WARNING: ICON_WARNING, Severity.CRITICAL: ICON_CRITICAL}

# (words, icon, fill colour, text colour, tooltip) for SeverityBadge.set_state
BadgeState = tuple[str, str, str, str, str]


def badge_state(c: theme.Colors, state: GpuState, error: str, level: Severity | None,
                reason: str | None, hint_lines: tuple[str, ...]) -> BadgeState | None:
    """A GPU that cannot be read says so (LOST, ERROR, the driver's words on hover);
    else the worst open hint, named by its reason ("OOM in ~2 min", else WARNING or
    CRITICAL) with every hint's sentences on hover; else no badge."""
    if state is not GpuState.OK:
        return STATE_WORDS[state], ICON_LOST, c.critical, c.on_severity, error
    if level is not None:
        return (reason or LEVEL_WORDS[level], _ICONS[level],
                level_color(c, level) or c.warning, c.on_severity, "\n".join(hint_lines))
    return None


def percent_color(c: theme.Colors, lost: bool, used_percent: float | None,
                  thresholds: Thresholds | None) -> str:
    """% used in the colour of its memory threshold ("lost 55 s ago" in the critical
    colour): how full the GPU is, whatever a hint says (an empty card after a crash is
    not amber; the badge and outline carry the hint)."""
    if lost:
        return c.critical
    return level_color(c, fill_level(used_percent, thresholds)) or c.text


def threshold_ticks(c: theme.Colors, thresholds: Thresholds
                    ) -> tuple[tuple[tuple[float, str, str], ...], tuple[float, float]]:
    """(the bar's ticks, the sparkline's guides) at the warning and critical thresholds
    (the settings' memory thresholds, 85 and 95 % unless changed)."""
    warn, crit = thresholds.memory_warning_percent, thresholds.memory_critical_percent
    return (((warn / 100, c.warning, f"{warn:g} % of capacity: the warning threshold"),
             (crit / 100, c.critical, f"{crit:g} % of capacity: the critical threshold")),
            (warn / 100, crit / 100))
