import pytest

from gpuwatch.core.units import (
    MAX_SIZE_BYTES,
    UnitError,
    format_bytes,
    format_duration,
    format_rate,
    parse_size,
)


@pytest.mark.parametrize(("text", "expected"), [
    (0, 0),
    (123, 123),
    ("512MiB", 512 * 1024**2),
    ("80GiB", 80 * 1024**3),
    ("80gib", 80 * 1024**3),
    ("1.5 GB", 1_500_000_000),
    ("2TiB", 2 * 1024**4),
    ("7KB", 7000),
    ("64B", 64),
    ("0", 0),
    (" 0.0 ", 0),
    ("1e3MiB", 1000 * 1024**2),
    ("1024TiB", 1024**5),
    (2**60, 2**60),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "GiB", "-1GiB", "12 parsecs", "1..2GB", True, None, "inf",
                                 "24", "1.5", [1], -1, float("nan"), float("inf")])
def test_parse_size_rejects_with_reason(bad):
    with pytest.raises(UnitError) as info:
        parse_size(bad)
    assert str(info.value)


def test_a_unitless_string_says_how_to_write_the_unit():
    with pytest.raises(UnitError, match=r"'24' has no unit: write 24GiB or 24GB \(24B for bytes\)"):
        parse_size("24")


@pytest.mark.parametrize("huge", ["1e300TiB", "1e400B", "1048577TiB", 2**60 + 1, 10**400, 1e19,
                                  "9" * 400 + "GiB"])
def test_sizes_above_one_exbibyte_are_refused(huge):
    with pytest.raises(UnitError, match="more than 1 EiB") as info:
        parse_size(huge)
    assert len(str(info.value)) < 200      # the value is shown cut short


def test_the_bound_fits_sqlite_integers():
    assert MAX_SIZE_BYTES < 2**63 - 1


def test_one_billion_fp32_parameters_is_3_73_gib_and_4_00_gb():
    n = 1e9 * 4
    assert format_bytes(n, "iec", 2) == "3.73 GiB"
    assert format_bytes(n, "si", 2) == "4.00 GB"
    assert format_bytes(n, "iec", 1).endswith("GiB")


def test_format_bytes_small_unknown_and_negative():
    assert format_bytes(None) == "n/a"
    assert format_bytes(float("nan")) == "n/a"
    assert format_bytes(512) == "512 B"
    assert format_bytes(-2 * 1024**2) == "-2.0 MiB"
    assert format_bytes(812 * 1024**2) == "812 MiB"


def test_rates_default_to_si():
    assert format_rate(3.35e12) == "3.4 TB/s"
    assert format_rate(None) == "n/a"


@pytest.mark.parametrize(("s", "text"), [
    (5, "5 s"),
    (65, "1 min 05 s"),
    (120, "2 min"),
    (7200, "2 h"),
    (3 * 3600 + 7 * 60, "3 h 07 min"),
    (2 * 86400 + 4 * 3600, "2 d 04 h"),
])
def test_format_duration(s, text):
    assert format_duration(s) == text
