"""The Grafana dashboard uses only metrics the exporter writes (or dcgm-exporter's and
Prometheus's own); test_real_prometheus runs its queries on a real server."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpuwatch.telemetry.prometheus import names as n

DASHBOARD = Path(__file__).resolve().parents[2] / "resources" / "grafana" / "gpuwatch.json"
KNOWN = {name for name in vars(n).values() if isinstance(name, str)
         and (name.startswith(("DCGM_FI_", n.PREFIX)) or name == n.UP)}


def _exprs(panels: list[dict]) -> list[str]:
    out = []
    for panel in panels:
        out += [t["expr"] for t in panel.get("targets", [])]
        out += _exprs(panel.get("panels", []))
    return out


def test_the_dashboard_reads_only_metrics_that_exist() -> None:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = _exprs(doc["panels"])
    assert len(exprs) >= 10
    used = set()
    for expr in exprs:
        used |= {m for m in re.findall(r"\b(DCGM_FI_\w+|gpuwatch_\w+|up)\b", expr)}
    assert used <= KNOWN, used - KNOWN
    # every gpuwatch metric a person would chart is on it
    for name in (n.PROCESS_USED, n.PROCESS_BUDGET, n.ALLOC_ALLOCATED, n.ALLOC_RESERVED,
                 n.ALLOC_INACTIVE, n.HINTS_OPEN, n.SECONDS_TO_FULL, n.FB_USED):
        assert name in used, name


def test_panels_do_not_overlap() -> None:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    cells = set()
    for panel in doc["panels"]:
        g = panel["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))
