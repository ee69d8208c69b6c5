"""The instance catalog and its prices: a user-editable TOML file (``gpuwatch.prices/1``).

The shipped default is ``resources/plan/prices.toml`` (its header documents every
field); ``gpuwatch plan --prices FILE`` reads another. The file is read the way
scenario files are: a regular file of at most 1 MiB (a FIFO or ``/dev/zero`` cannot
hang or fill memory), UTF-8, valid TOML, every field of the right type and within
bounds. Anything else is a :class:`PlanError` naming the file and the field.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.gpus import lookup_gpu
from gpuwatch.core.resources import resource_path
from gpuwatch.core.small_files import SmallFileError, path_text, read_small_file
from gpuwatch.core.units import MAX_SIZE_BYTES, MAX_SIZE_TEXT, UnitError, parse_size, shown
from gpuwatch.plan.errors import PlanError

PRICES_SCHEMA = "gpuwatch.prices/1"
MAX_PRICE_FILE_BYTES = 1 << 20
MAX_INSTANCES = 1000
MAX_PRICE_PER_HOUR = 1e6  # dollars (or any currency) per node-hour
MAX_GPUS_PER_NODE = 8
INTERCONNECTS = ("nvlink", "infinity-fabric", "pcie")


@dataclass(frozen=True)
class Instance:
    name: str
    provider: str
    gpu: str  # a budget-catalog GPU name
    gpus: int
    interconnect: str
    cpu_memory_bytes: int
    on_demand_per_hour: float
    spot_per_hour: float | None

    @property
    def fast_link(self) -> bool:
        return self.interconnect != "pcie"


@dataclass(frozen=True)
class PriceBook:
    instances: tuple[Instance, ...]
    currency: str
    as_of: str
    mean_hours_between_interruptions: float
    checkpoint_write_bytes_per_s: float
    source: str


def default_prices_path() -> Path:
    return resource_path("plan", "prices.toml")


class _Reader:
    """Typed reads that fail with the file and the field's path (``instances[2].gpus``)."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, why: str) -> PlanError:
        return PlanError("--prices", f"{self.source}: {where} {why}.")

    def text(self, table: dict[str, Any], key: str, where: str, default: str | None = None,
             limit: int = 200) -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise self.fail(where + key, "must be a string" if key in table else "is missing")
        if not value.strip() or len(value) > limit or not value.isprintable():
            raise self.fail(where + key, f"must be printable text of 1 to {limit} characters, "
                                         f"not {shown(value, 40)}")
        return value

    def number(self, table: dict[str, Any], key: str, where: str, low: float, high: float,
               default: float | None = None) -> float:
        value = table.get(key, default)
        if value is None:
            raise self.fail(where + key, "is missing")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where + key, f"must be a number, not {shown(str(value), 40)}")
        # compared before any conversion: an integer of hundreds of digits has no float
        if (isinstance(value, float) and not math.isfinite(value)) or \
                not low <= value <= high:
            raise self.fail(where + key, f"must be between {low:g} and {high:g}, not "
                                         f"{_number_text(value)}")
        return float(value)

    def integer(self, table: dict[str, Any], key: str, where: str, low: int, high: int) -> int:
        value = table.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where + key, "must be a whole number" if key in table else
                            "is missing")
        if not low <= value <= high:
            raise self.fail(where + key, f"must be between {low} and {high}, not "
                                         f"{_number_text(value)}")
        return value

    def size(self, table: dict[str, Any], key: str, where: str,
             default: str | None = None) -> int:
        value = table.get(key, default)
        if value is None:
            raise self.fail(where + key, "is missing")
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise self.fail(where + key, "must be a size such as \"64GiB\" or a byte count")
        try:
            size = value if isinstance(value, int) else parse_size(value)
        except UnitError as exc:
            raise self.fail(where + key, f"is not a size ({exc})") from None
        if size <= 0:
            raise self.fail(where + key, "must be more than 0 bytes")
        if size > MAX_SIZE_BYTES:
            raise self.fail(where + key, f"must be at most {MAX_SIZE_TEXT}, not "
                                         f"{_number_text(size)}")
        return size


def _number_text(value: int | float) -> str:
    """A number as a message shows it: a huge integer by its digit count, not in full."""
    text = repr(value)
    return text if len(text) <= 24 else f"a number of {len(text.lstrip('-'))} digits"


def _instance(r: _Reader, entry: Any, where: str) -> Instance:
    if not isinstance(entry, dict):
        raise r.fail(where.rstrip("."), "must be a table")
    unknown = sorted(set(entry) - {"name", "provider", "gpu", "gpus", "interconnect",
                                   "cpu_memory", "on_demand_per_hour", "spot_per_hour"})
    if unknown:
        raise r.fail(where + unknown[0], "is not a field of an instance")
    gpu_name = r.text(entry, "gpu", where)
    try:
        gpu = lookup_gpu(gpu_name).name
    except BudgetError as exc:
        raise r.fail(where + "gpu", str(exc).rstrip(".")) from None
    interconnect = r.text(entry, "interconnect", where, "pcie").lower()
    if interconnect not in INTERCONNECTS:
        raise r.fail(where + "interconnect", f"must be one of {', '.join(INTERCONNECTS)}, "
                                             f"not {shown(interconnect, 40)}")
    spot = None
    if "spot_per_hour" in entry:
        spot = r.number(entry, "spot_per_hour", where, 0, MAX_PRICE_PER_HOUR)
    return Instance(
        name=r.text(entry, "name", where),
        provider=r.text(entry, "provider", where, "unnamed"),
        gpu=gpu,
        gpus=r.integer(entry, "gpus", where, 1, MAX_GPUS_PER_NODE),
        interconnect=interconnect,
        cpu_memory_bytes=r.size(entry, "cpu_memory", where),
        on_demand_per_hour=r.number(entry, "on_demand_per_hour", where, 0, MAX_PRICE_PER_HOUR),
        spot_per_hour=spot,
    )


def parse_prices(data: Any, source: str) -> PriceBook:
    """A price book from parsed TOML (a dict), or a PlanError naming the field."""
    r = _Reader(source)
    if not isinstance(data, dict):
        raise r.fail("the file", "must be a TOML table")
    if data.get("schema") != PRICES_SCHEMA:
        raise r.fail("schema", f"must be \"{PRICES_SCHEMA}\"")
    unknown = sorted(set(data) - {"schema", "currency", "as_of", "spot", "instances"})
    if unknown:
        raise r.fail(unknown[0], "is not a field of a price file")
    spot = data.get("spot", {})
    if not isinstance(spot, dict):
        raise r.fail("spot", "must be a table")
    entries = data.get("instances")
    if not isinstance(entries, list) or not entries:
        raise r.fail("instances", "must be a list of [[instances]] tables, at least one")
    if len(entries) > MAX_INSTANCES:
        raise r.fail("instances", f"holds more than {MAX_INSTANCES} entries")
    instances = tuple(_instance(r, e, f"instances[{i}].") for i, e in enumerate(entries))
    names = [i.name for i in instances]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise r.fail(f"instances[{i}].name", f"repeats {shown(name, 40)}")
    rate = r.size(spot, "checkpoint_write_bytes_per_s", "spot.", "1GB")
    return PriceBook(
        instances=instances,
        currency=r.text(data, "currency", "", "USD", limit=12),
        as_of=r.text(data, "as_of", "", "unknown", limit=40),
        mean_hours_between_interruptions=r.number(
            spot, "mean_hours_between_interruptions", "spot.", 0.01, 100_000, 24),
        checkpoint_write_bytes_per_s=float(rate),
        source=source,
    )


def read_prices(path: str | Path | None = None) -> PriceBook:
    """The price book at ``path`` (default: the shipped file)."""
    target = Path(path) if path is not None else default_prices_path()
    source = path_text(target) if path is not None else "the default price file"
    try:
        data = read_small_file(target, MAX_PRICE_FILE_BYTES)
    except SmallFileError as exc:
        raise PlanError("--prices", f"{source} {exc.reason}.") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise PlanError("--prices", f"{source} is UTF-16 text; save it as UTF-8.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PlanError("--prices", f"{source} is not UTF-8 text (byte "
                                    f"0x{data[exc.start]:02x} at offset {exc.start}); "
                                    "save it as UTF-8.") from None
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError("--prices", f"{source} is not valid TOML ({exc}).") from None
    except RecursionError:
        raise PlanError("--prices", f"{source} nests arrays or tables too deeply.") from None
    return parse_prices(parsed, source)
