"""The advisor: rules that turn history, budgets and allocator figures into hints."""

from gpuwatch.advisor.budget_link import LinkedBudget, link_estimate
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.advisor.engine import Advisor
from gpuwatch.advisor.format import event_to_json, format_event, format_hint_text
from gpuwatch.advisor.settings import AdvisorSettings

__all__ = ["Advisor", "AdvisorSettings", "Finding", "LinkedBudget", "RuleContext",
           "event_to_json", "format_event", "format_hint_text", "link_estimate"]
