"""What a configuration costs, in the units people budget in: per hour, per epoch and
per million tokens (never "0.000053 USD per step"). No widgets here.

Worked out from the plan's own fields (:class:`gpuwatch.plan.cloud.CloudFit`: the
instance's hourly price, the cost of a step, steps per epoch; the configuration's
tokens per step), so the plan package stays the one that prices a step.
"""

from __future__ import annotations

import math
from typing import Any


def amount(value: float | None, currency: str) -> str:
    """"3.20 USD", "0.53 USD", "1,204 USD"; "—" when unknown. Two decimals below a
    thousand, none above: a cost is read, not audited."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:,.0f} {currency}" if value >= 1000 else f"{value:,.2f} {currency}"


def per_million_tokens(fit: Any) -> float | None:
    """The cost of a million tokens at this configuration's step cost."""
    tokens = fit.config.tokens_per_step
    if not tokens or tokens <= 0:
        return None
    return fit.cost_per_step / tokens * 1e6


def cost_cells(fit: Any, currency: str, tokens: bool) -> tuple[str, str, str]:
    """(per hour, per epoch, per million tokens, or "—" where the workload has none)."""
    return (amount(fit.instance.on_demand_per_hour, currency) + "/h",
            amount(fit.cost_per_epoch, currency),
            amount(per_million_tokens(fit), currency) if tokens else "—")


def cost_summary(fit: Any, currency: str, tokens: bool) -> str:
    """"3.20 USD/h · 41.00 USD per epoch · 0.53 USD per million tokens"."""
    hour, epoch, mtok = cost_cells(fit, currency, tokens)
    parts = [hour]
    if epoch != "—":
        parts.append(f"{epoch} per epoch")
    if mtok != "—":
        parts.append(f"{mtok} per million tokens")
    return " · ".join(parts)

