"""Iceberg expression JSON in icepark alone: the forms the REST spec and Java accept are read,
what is malformed is refused by name (Java's own reading is judged in
tests/rest/test_scan_planning_java.py)."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
from icepark.expressions import AlwaysFalse, AlwaysTrue, bind, col, parse_filter
from icepark.expressions.json import expression_from_json, expression_to_json
from icepark.spec.schema import Schema
from icepark.spec.types import BinaryType, DateType, DecimalType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "dec", DecimalType(9, 2)),
    NestedField(5, "bin", BinaryType()),
    schema_id=0,
)


@pytest.mark.parametrize(
    "text",
    [
        "id = 5 and s != 'x'",
        "not (d < date '2024-01-01') or dec in (1.25, 2.50)",
        "bin = X'0aff' and s like 'p%'",
        "s is null or id not in (1, 2)",
    ],
)
def test_round_trip_binds_to_the_same_expression(text: str) -> None:
    expr = parse_filter(text)
    for form in (expression_to_json(expr), expression_to_json(bind(SCHEMA, expr))):
        assert bind(SCHEMA, expression_from_json(form, SCHEMA)) == bind(SCHEMA, expr)


def test_written_forms() -> None:
    assert expression_to_json(AlwaysTrue()) is True
    assert expression_to_json(col("id").is_null()) == {"type": "is-null", "term": "id"}
    bound = bind(SCHEMA, parse_filter("d = date '2024-02-29' and bin = X'0aff'"))
    assert expression_to_json(bound) == {
        "type": "and",
        "left": {"type": "eq", "term": "d", "value": "2024-02-29"},
        "right": {"type": "eq", "term": "bin", "value": "0AFF"},
    }


def test_other_accepted_forms() -> None:
    assert expression_from_json({"type": "true"}) == AlwaysTrue()
    assert expression_from_json({"type": "literal", "value": False}) == AlwaysFalse()
    ref = {"type": "lt", "term": {"type": "reference", "term": "id"}, "value": 3}
    assert expression_from_json(ref) == (col("id") < 3)
    wrapped = {"type": "eq", "term": "id", "value": {"type": "literal", "value": 3}}
    assert expression_from_json(wrapped) == (col("id") == 3)
    # the document's unary form carries a value; it is ignored
    assert (
        expression_from_json({"type": "not-null", "term": "s", "value": {}}) == col("s").not_null()
    )


@pytest.mark.parametrize(
    "obj, words",
    [
        ({"type": "lt", "term": "id"}, "missing 'value'"),
        ({"type": "in", "term": "id", "values": 3}, "values array"),
        ({"type": "sometimes", "term": "id"}, "Unknown expression type"),
        (
            {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "d"}},
            "Transform",
        ),
        ({"type": "and", "left": True}, "missing 'right'"),
        ([1], "Cannot read an expression"),
        ({"type": "eq", "term": "id", "value": None}, "literal"),
    ],
)
def test_malformed_expressions_are_refused(obj: object, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        expression_from_json(obj)
