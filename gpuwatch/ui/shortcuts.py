"""The keyboard shortcuts, in one table (menus use it, Help lists it)."""

from __future__ import annotations

SHORTCUTS = {
    "pause": "Space",
    "filter": "Ctrl+F",
    "settings": "Ctrl+,",
    "screenshot": "Ctrl+S",
    "quit": "Ctrl+Q",
    "help": "F1",
}

DESCRIPTIONS = (
    ("Space", "Pause or resume the plots (drag a paused plot to scroll back)"),
    ("1 · 2 · 3 · 4", "Plot the last 1 min · 10 min · 1 h · 24 h"),
    ("Ctrl+1 · 2 · 3 · 4", "Processes · Budget · Advisor · Plan tab"),
    ("Tab · Enter", "Move to a GPU's card · show that GPU alone (again: every GPU)"),
    ("Esc", "Show every GPU again"),
    ("Ctrl+F", "Filter processes"),
    ("Ctrl+C", "Copy the selected process's command line"),
    ("Ctrl+L", "Link the selected process to the budget in the form"),
    ("Delete", "Terminate the selected process (your own, after confirming)"),
    ("Ctrl+O", "Browse recorded sessions"),
    ("Ctrl+,", "Settings"),
    ("Ctrl+S", "Save a screenshot"),
    ("Ctrl+Q", "Quit"),
    ("F1", "This list"),
)


def shortcuts_html() -> str:
    rows = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{d}</td></tr>"
                   for k, d in DESCRIPTIONS)
    return f"<table>{rows}</table>"
