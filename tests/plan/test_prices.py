"""The price file: the shipped one reads, bad ones fail naming the field, nothing else."""

from __future__ import annotations

import os
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.plan.errors import PlanError
from gpuwatch.plan.prices import (
    MAX_PRICE_FILE_BYTES,
    PriceBook,
    default_prices_path,
    parse_prices,
    read_prices,
)

GOOD = {"schema": "gpuwatch.prices/1", "currency": "EUR", "instances": [
    {"name": "box", "provider": "me", "gpu": "H100", "gpus": 4, "interconnect": "nvlink",
     "cpu_memory": "512GiB", "on_demand_per_hour": 20.0, "spot_per_hour": 8}]}


def with_field(path: str, value) -> dict:
    doc = {**GOOD, "instances": [dict(GOOD["instances"][0])]}
    target = doc["instances"][0] if path.startswith("instances") else doc
    key = path.split(".")[-1]
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value
    return doc


def test_the_shipped_file_reads():
    book = read_prices()
    assert book.instances and book.currency == "USD"
    assert all(i.on_demand_per_hour > 0 for i in book.instances)
    assert tomllib.loads(default_prices_path().read_text())["schema"] == "gpuwatch.prices/1"


def test_a_good_document_parses():
    book = parse_prices(GOOD, "mine.toml")
    (i,) = book.instances
    assert (i.gpu, i.gpus, i.cpu_memory_bytes, i.spot_per_hour) == ("H100-80GB", 4, 512 << 30, 8)
    assert book.currency == "EUR" and book.mean_hours_between_interruptions == 24


@pytest.mark.parametrize("path, value, named", [
    ("instances.gpus", 0, "instances[0].gpus"),
    ("instances.gpus", 9, "instances[0].gpus"),
    ("instances.gpus", "4", "instances[0].gpus"),
    ("instances.gpu", "Z80", "instances[0].gpu"),
    ("instances.on_demand_per_hour", -1, "instances[0].on_demand_per_hour"),
    ("instances.on_demand_per_hour", float("nan"), "instances[0].on_demand_per_hour"),
    ("instances.on_demand_per_hour", None, "instances[0].on_demand_per_hour"),
    ("instances.spot_per_hour", True, "instances[0].spot_per_hour"),
    ("instances.interconnect", "carrier pigeon", "instances[0].interconnect"),
    ("instances.cpu_memory", "lots", "instances[0].cpu_memory"),
    ("instances.colour", "red", "instances[0].colour"),
    ("schema", "gpuwatch.prices/2", "schema"),
    ("instances", [], "instances"),
    ("currency", "", "currency"),
])
def test_bad_fields_are_named(path, value, named):
    doc = with_field(path, value) if path != "instances" else {**GOOD, "instances": value}
    with pytest.raises(PlanError) as info:
        parse_prices(doc, "mine.toml")
    assert info.value.field == "--prices"
    assert f"mine.toml: {named} " in str(info.value)


def test_files_that_are_not_price_files(tmp_path):
    cases = {
        "utf16.toml": "schema = 1".encode("utf-16"),
        "latin1.toml": b'schema = "caf\xe9"',
        "broken.toml": b"schema = [",
        "big.toml": b"#" * (MAX_PRICE_FILE_BYTES + 1),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(PlanError, match=name):
            read_prices(tmp_path / name)
    with pytest.raises(PlanError, match="folder"):
        read_prices(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PlanError, match="not a regular file"):
        read_prices(fifo)  # no writer: must not block


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8)


@given(st.dictionaries(st.sampled_from(["name", "provider", "gpu", "gpus", "interconnect",
                                        "cpu_memory", "on_demand_per_hour",
                                        "spot_per_hour", "extra"]), values))
def test_any_instance_table_parses_or_is_refused_with_a_plan_error(fields):
    doc = {**GOOD, "instances": [{**GOOD["instances"][0], **fields}]}
    try:
        book = parse_prices(doc, "x.toml")
    except PlanError as exc:
        assert str(exc).startswith("x.toml: ")
    else:
        assert isinstance(book, PriceBook) and 1 <= book.instances[0].gpus <= 8


@given(st.binary(max_size=300))
def test_any_bytes_read_or_are_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("p") / "prices.toml"
    path.write_bytes(data)
    try:
        read_prices(path)
    except PlanError as exc:
        assert str(path) in str(exc)
