"""The range of every input the estimator takes, and the checks that hold it there.

Each bound is several times beyond anything trained or served today, so no real
model is refused, yet every product the estimator forms stays a finite float and
every search ends: the largest published models have about 2 T parameters, 160
layers, a hidden size of 2**14–2**15, 128 heads, 256 experts, a vocabulary of 2**18
and contexts of 2**20–2**23 tokens. ``docs/input-bounds.md`` lists the same table.
"""

from __future__ import annotations

import math
from typing import Any

from gpuwatch.budget.errors import BudgetError
from gpuwatch.core.units import shown

MAX_PARAMS = 10**13        # 10 T parameters: five times the largest published model
MAX_BATCH = 2**20          # micro-batch per GPU
MAX_SEQ = 2**24            # tokens per sequence, and KV-cache context (16.7 M)
MAX_GRAD_ACCUM = 2**20
MAX_LAYERS = 10_000
MAX_HIDDEN = 2**20
MAX_HEADS = 2**16          # attention heads, key/value heads and the head dimension
MAX_FFN = 2**22            # MLP width: four times the largest hidden size
MAX_VOCAB = 2**24          # vocabulary, position and token-type tables
MAX_EXPERTS = 4096
MAX_IMAGE = 2**16          # pixels per side
MAX_CHANNELS = 4096
MAX_DP = 2**20             # data-parallel GPUs
MAX_LORA_RANK = 2**16

BOUND_TEXT = {
    MAX_PARAMS: "1e13 (10 T)",
    MAX_BATCH: "1,048,576 (2**20)",
    MAX_SEQ: "16,777,216 (2**24)",
    MAX_HIDDEN: "1,048,576 (2**20)",
    MAX_HEADS: "65,536 (2**16)",
    MAX_FFN: "4,194,304 (2**22)",
    MAX_IMAGE: "65,536 (2**16)",
}


def bound_text(value: int) -> str:
    return BOUND_TEXT.get(value, f"{value:,}")


def check_int(value: int, field: str, minimum: int, maximum: int, what: str | None = None) -> int:
    """``value`` unchanged, or a BudgetError saying the range ``field`` must be in."""
    name = what or field
    if isinstance(value, bool) or not isinstance(value, int):
        raise BudgetError(field, f"{name} must be a whole number, not {shown(value)}.")
    if value < minimum:
        raise BudgetError(field, f"{name} must be at least {minimum}, not {shown(value)}.")
    if value > maximum:
        raise BudgetError(field, f"{name} must be at most {bound_text(maximum)}, "
                                 f"not {shown(value)}.")
    return value


def whole_number(text: Any, field: str, minimum: int, maximum: int) -> int:
    """A command-line whole number: ``8``, ``1_024``, ``1e3``; bounded to the range."""
    raw = str(text).strip().replace("_", "")
    if len(raw) > 40:
        raise BudgetError(field, f"{field} must be a whole number from {minimum} to "
                                 f"{bound_text(maximum)}, not {shown(text)}.")
    try:
        number: int | float = int(raw)
    except ValueError:
        try:
            number = float(raw)
        except ValueError:
            raise BudgetError(field, f"{field} must be a whole number, not {shown(text)}.") \
                from None
    if isinstance(number, float):
        if math.isinf(number):
            number = maximum + 1 if number > 0 else minimum - 1
        elif math.isnan(number) or number != math.floor(number):
            raise BudgetError(field, f"{field} must be a whole number, not {shown(text)}.")
        number = int(number)
    if not minimum <= number <= maximum:
        raise BudgetError(field, f"{field} must be a whole number from {minimum} to "
                                 f"{bound_text(maximum)}, not {shown(text)}.")
    return number


def finite_number(text: Any, field: str) -> float:
    """A command-line number that is finite."""
    try:
        number = float(str(text).strip())
    except ValueError:
        raise BudgetError(field, f"{field} must be a number, not {shown(text)}.") from None
    if not math.isfinite(number):
        raise BudgetError(field, f"{field} must be a finite number, not {shown(text)}.")
    return number


def divisors(n: int, limit: int = 8) -> str:
    """The divisors of ``n`` as text, for "use one of …" suggestions."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    found = sorted(set(small + [n // d for d in small]))
    if len(found) > limit:
        return ", ".join(str(d) for d in found[: limit - 1]) + f", …, {n}"
    return ", ".join(str(d) for d in found)
