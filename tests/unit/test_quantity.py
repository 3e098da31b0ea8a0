from decimal import Decimal

import pytest

from jupyter_dw.domain.quantity import QuantityError, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Decimal("0.5")),
        ("1.5", Decimal("1.5")),
        ("8Gi", Decimal(8 * 2**30)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2k", Decimal(2000)),
        ("512Mi", Decimal(512 * 2**20)),
        ("0.1m", Decimal("0.0001")),
        (".5", Decimal("0.5")),
        ("+3", Decimal(3)),
        (2, Decimal(2)),
        (1.5, Decimal("1.5")),
    ],
)
def test_parse_accepts_kubernetes_forms(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "1.2.3", "1Kii", "1ki", " 1", "1 Gi", "Gi", "1e", "2Gi\n", True, None]
)
def test_parse_rejects_non_quantities(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "binary", "expected"),
    [
        (Decimal("0.5"), None, "500m"),
        (Decimal(4), None, "4"),
        (Decimal(16 * 2**30), None, "16Gi"),
        (Decimal(1536 * 2**20), None, "1536Mi"),
        (Decimal(0), None, "0"),
        (Decimal("1.5"), None, "1500m"),
        (Decimal(2000), False, "2k"),
        (Decimal(1024), False, "1024"),
        (Decimal(-2 * 2**30), None, "-2Gi"),
        (Decimal("0.0000000001"), None, "1n"),
    ],
)
def test_format_is_canonical(value, binary, expected):
    assert format_quantity(value, binary) == expected


@pytest.mark.parametrize("text", ["500m", "8Gi", "3", "1500m", "100Mi", "250m"])
def test_format_round_trips(text):
    assert parse_quantity(format_quantity(parse_quantity(text))) == parse_quantity(text)
