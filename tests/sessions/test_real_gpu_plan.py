"""The real-GPU run's plan (benchmarks/real_gpu/plan.py) holds what the traces and the
estimate table need, and every estimate configuration's command line is one
`gpuwatch estimate` accepts, for the real sizes and the dry run's, so a flag renamed
in the estimator fails here and not on a borrowed GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "real_gpu"))

import estimates  # noqa: E402
import expectations  # noqa: E402
import shapes  # noqa: E402
from plan import estimate_configs, phases  # noqa: E402


@pytest.mark.parametrize("dry", [False, True])
def test_the_plan_records_every_expectation_and_twelve_estimates(dry):
    plan = phases(dry)
    recorded = {p.expect for p in plan if p.record and p.expect}
    assert recorded == set(expectations.EXPECTS)
    configs = estimate_configs(dry)
    assert len(configs) >= 12
    assert {c["mode"] for c in configs} == {"train", "infer"}
    assert len({c["precision"] for c in configs}) >= 3
    assert any(c.get("lora") for c in configs) and any(c.get("checkpointing") for c in configs)
    assert any(c["model"].startswith("resnet") for c in configs)
    assert len({p.name for p in plan}) == len(plan)


@pytest.mark.parametrize("dry", [False, True])
def test_every_estimate_configuration_is_a_valid_command_line(dry, tmp_path):
    for name in (*shapes.SPECS, "gpt2-tiny"):      # the configs the run writes
        shapes.write_config(name, tmp_path)
    for cfg in estimate_configs(dry):
        got = estimates.run_estimate(cfg, tmp_path)
        assert "error" not in got, (cfg["name"], got)
        assert got["total_bytes"] > got["breakdown_bytes"]["framework_overhead"] > 0
