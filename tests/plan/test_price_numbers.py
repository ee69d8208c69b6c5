"""Every number of a price file is bounded where it is read: any TOML value in any
numeric field gives a price book with the value in range, or a PlanError that names
the file and the field; never another exception, never an unbounded number inside."""

from __future__ import annotations

import copy
import math
import tomllib

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.core.units import MAX_SIZE_BYTES
from gpuwatch.plan.errors import PlanError
from gpuwatch.plan.prices import (
    MAX_GPUS_PER_NODE,
    MAX_PRICE_PER_HOUR,
    default_prices_path,
    parse_prices,
    read_prices,
)

BASE = tomllib.loads(default_prices_path().read_text(encoding="utf-8"))
# (table, field): None is the first instance
FIELDS = [(None, "on_demand_per_hour"), (None, "spot_per_hour"), (None, "gpus"),
          (None, "cpu_memory"), ("spot", "mean_hours_between_interruptions"),
          ("spot", "checkpoint_write_bytes_per_s")]

huge_ints = st.integers(min_value=1, max_value=400).map(lambda n: 10**n)
digit_text = st.text(st.characters(categories=("Nd", "No")), min_size=1, max_size=8)
values = st.one_of(
    st.integers(), huge_ints, huge_ints.map(lambda v: -v), st.floats(),
    st.booleans(), st.text(max_size=20),
    st.builds(lambda d, u: d + u, digit_text, st.sampled_from(["", "GiB", "GB", "B"])),
    st.builds(lambda n, u: f"{n}{u}", huge_ints, st.sampled_from(["GiB", "B", "e400GiB"])),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                        st.integers(), max_size=2),
)


def _with(field: tuple[str | None, str], value: object) -> dict:
    doc = copy.deepcopy(BASE)
    table, key = field
    target = doc["instances"][0] if table is None else doc[table]
    target[key] = value
    return doc


def _check_bounded(book) -> None:
    spot = book.mean_hours_between_interruptions
    assert math.isfinite(spot) and 0.01 <= spot <= 100_000
    assert 0 < book.checkpoint_write_bytes_per_s <= MAX_SIZE_BYTES
    for i in book.instances:
        assert 1 <= i.gpus <= MAX_GPUS_PER_NODE
        assert 0 < i.cpu_memory_bytes <= MAX_SIZE_BYTES
        for price in (i.on_demand_per_hour, i.spot_per_hour):
            assert price is None or (math.isfinite(price) and 0 <= price <= MAX_PRICE_PER_HOUR)


@given(field=st.sampled_from(FIELDS), value=values)
def test_any_value_in_a_numeric_field_is_bounded_or_refused_naming_it(field, value):
    try:
        book = parse_prices(_with(field, value), "p.toml")
    except PlanError as exc:
        text = str(exc)
        assert "p.toml" in text and field[1] in text
        assert len(text) < 400                    # a huge number is not printed in full
        return
    _check_bounded(book)


@given(field=st.sampled_from(FIELDS), digits=st.integers(min_value=19, max_value=600))
def test_huge_integers_in_the_file_itself_are_refused(tmp_path_factory, field, digits):
    """Through the TOML parser, as `plan --prices` reads it: an integer of hundreds of
    digits is refused by field, never converted (which would overflow)."""
    text = default_prices_path().read_text(encoding="utf-8")
    key = field[1]
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key} ="))
    lines[at] = f"{key} = {'9' * digits}"
    path = tmp_path_factory.mktemp("prices") / "p.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        read_prices(path)
    except PlanError as exc:
        assert key in str(exc) and str(path) in str(exc)
    else:
        raise AssertionError(f"{key} = {digits} nines was accepted")
