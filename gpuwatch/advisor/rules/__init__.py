"""The rules, one module each: pure functions ``(RuleContext) -> list[Finding]``."""

from collections.abc import Callable

from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.advisor.rules.bandwidth import bandwidth_saturated
from gpuwatch.advisor.rules.budget_capacity import budget_exceeds_capacity
from gpuwatch.advisor.rules.contention import contention
from gpuwatch.advisor.rules.fragmentation import fragmentation
from gpuwatch.advisor.rules.gpu_lost import gpu_lost
from gpuwatch.advisor.rules.leak import memory_leak
from gpuwatch.advisor.rules.likely_oom import likely_oom
from gpuwatch.advisor.rules.oom_risk import oom_risk
from gpuwatch.advisor.rules.underused import underused

RULES = (gpu_lost, oom_risk, likely_oom, budget_exceeds_capacity, memory_leak, fragmentation,
         contention, underused, bandwidth_saturated)

# Rules that look at trends over many minutes run every few seconds, not every sample:
# their answer cannot change faster, and with 64 processes a GPU they are most of the cost.
# (bandwidth-saturated reads two minutes of history and only informs.)
RULE_PERIODS_S: dict[Callable[[RuleContext], list[Finding]], float] = {
    memory_leak: 10.0, contention: 5.0, underused: 10.0, bandwidth_saturated: 5.0}

__all__ = ["RULES", "RULE_PERIODS_S", "bandwidth_saturated",
           "budget_exceeds_capacity", "contention", "fragmentation", "gpu_lost", "likely_oom",
           "memory_leak", "oom_risk", "underused"]
