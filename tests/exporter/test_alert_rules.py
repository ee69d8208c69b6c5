"""The alerting rules docs/cluster.md offers pass promtool and use real metric names."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from prometheus_support import PROMTOOL, REPO
from test_dashboard import KNOWN

DOC = REPO / "docs" / "cluster.md"


def _rules() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Alerting on them"):]
    start = section.index("```yaml\n") + len("```yaml\n")
    return section[start:section.index("\n```", start)] + "\n"


@pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="needs promtool (Debian: prometheus)")
def test_the_documented_rules_pass_promtool(tmp_path: Path) -> None:
    rules = tmp_path / "gpuwatch-rules.yml"
    rules.write_text(_rules())
    result = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 rules found" in result.stdout


def test_the_documented_rules_use_exported_metrics() -> None:
    used = set(re.findall(r"\b(DCGM_FI_\w+|gpuwatch_\w+|up)\b", _rules()))
    assert used and used <= KNOWN, used - KNOWN
