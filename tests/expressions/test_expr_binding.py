"""bind(): name resolution, accessors, literal conversion and simplifications."""

from __future__ import annotations

from decimal import Decimal

import pytest

from icepark.errors import ValidationError
from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BoundLiteralPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
    Operation,
    bind,
    bind_reference,
    col,
    parse_filter,
    referenced_field_ids,
    referenced_names,
    unbind,
)
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "name", StringType()),
    NestedField(
        4,
        "location",
        StructType(
            NestedField(5, "lat", DoubleType(), required=True),
            NestedField(6, "lon", DoubleType()),
        ),
    ),
    NestedField(7, "tags", ListType(8, StringType())),
    NestedField(
        9, "props", MapType(10, StringType(), 11, StructType(NestedField(12, "v", IntegerType())))
    ),
    NestedField(13, "d", DateType()),
    NestedField(14, "ts", TimestampType()),
    NestedField(15, "tstz", TimestamptzType()),
    NestedField(16, "price", DecimalType(9, 2)),
    NestedField(17, "MixedCase", IntegerType()),
    NestedField(
        18,
        "inner",
        StructType(NestedField(19, "deep", StructType(NestedField(20, "x", IntegerType(), True)))),
        required=True,
    ),
)


def test_bind_reference_and_accessor() -> None:
    ref = bind_reference(SCHEMA, "location.lat")
    assert isinstance(ref, BoundReference)
    assert ref.field_id == 5 and ref.name == "location.lat"
    assert ref.accessor.positions == (3, 0)
    row = (1, None, "a", (45.5, 7.0), None, None, None, None, None, None, None, None)
    assert ref.eval(row) == 45.5
    assert ref.eval((1, None, "a", None)) is None  # null struct
    assert ref.produces_null  # required inside an optional struct
    assert ref.eval({4: {5: 1.5}}) == 1.5  # dict rows keyed by field id
    deep = bind_reference(SCHEMA, "inner.deep.x")
    assert deep.accessor.positions == (11, 0, 0)
    assert deep.produces_null  # required, but inside the optional 'deep'
    assert not bind_reference(SCHEMA, "inner").produces_null


def test_case_insensitive() -> None:
    bound = bind(SCHEMA, col("mixedcase") == 1, case_sensitive=False)
    assert isinstance(bound, BoundLiteralPredicate)
    assert bound.term.name == "MixedCase"
    with pytest.raises(ValidationError, match="mixedcase"):
        bind(SCHEMA, col("mixedcase") == 1)
    bound = bind(SCHEMA, col("LOCATION.LAT") > 1, case_sensitive=False)
    assert isinstance(bound, BoundLiteralPredicate) and bound.term.field_id == 5


def test_unknown_and_unbindable_columns() -> None:
    with pytest.raises(ValidationError, match=r"Cannot find column 'nmae'.*'name'"):
        bind(SCHEMA, col("nmae") == "x")
    with pytest.raises(ValidationError, match="inside a list or map"):
        bind(SCHEMA, col("tags.element") == "x")
    with pytest.raises(ValidationError, match="inside a list or map"):
        bind(SCHEMA, col("props.value.v") == 1)
    with pytest.raises(ValidationError, match="Cannot compare column 'location'"):
        bind(SCHEMA, col("location") == 1)


def test_unary_simplification() -> None:
    assert bind(SCHEMA, col("id").is_null()) == AlwaysFalse()
    assert bind(SCHEMA, col("id").not_null()) == AlwaysTrue()
    assert isinstance(bind(SCHEMA, col("i").is_null()), BoundUnaryPredicate)
    assert isinstance(bind(SCHEMA, col("location").is_null()), BoundUnaryPredicate)
    assert isinstance(bind(SCHEMA, col("location.lat").is_null()), BoundUnaryPredicate)
    assert isinstance(bind(SCHEMA, col("location.lat").is_nan()), BoundUnaryPredicate)
    with pytest.raises(ValidationError, match=r"is nan.*'i'"):
        bind(SCHEMA, col("i").is_nan())
    with pytest.raises(ValidationError, match="starts_with"):
        bind(SCHEMA, col("i").starts_with("a"))


def test_literal_conversion_and_errors() -> None:
    bound = bind(SCHEMA, col("ts") >= "2024-01-01")
    assert isinstance(bound, BoundLiteralPredicate) and bound.literal == 1704067200000000
    assert str(bound) == "ts >= 1704067200000000"
    bound = bind(SCHEMA, col("d") >= "2024-01-01")
    assert isinstance(bound, BoundLiteralPredicate) and bound.literal == 19723
    bound = bind(SCHEMA, col("tstz") >= "2024-01-01 10:00:00+02:00")
    assert isinstance(bound, BoundLiteralPredicate)
    assert bound.literal == 1704067200000000 + 8 * 3600 * 1_000_000
    with pytest.raises(ValidationError, match=r"'abc'.*'id'"):
        bind(SCHEMA, col("id") == "abc")
    with pytest.raises(ValidationError, match="'i'"):
        bind(SCHEMA, col("i").isin([1, "x"]))


def test_out_of_range_literals() -> None:
    i = bind_reference(SCHEMA, "i")
    not_null = BoundUnaryPredicate(Operation.NOT_NULL, i)
    assert bind(SCHEMA, col("i") < 2**40) == not_null  # optional: nulls still do not match
    assert bind(SCHEMA, col("i") <= 2**40) == not_null
    assert bind(SCHEMA, col("i") > 2**40) == AlwaysFalse()
    assert bind(SCHEMA, col("i") == 2**40) == AlwaysFalse()
    assert bind(SCHEMA, col("i") != 2**40) == not_null  # a null matches no comparison
    assert bind(SCHEMA, col("i") > -(2**40)) == not_null
    assert bind(SCHEMA, col("i") < -(2**40)) == AlwaysFalse()
    required = Schema(NestedField(1, "i", IntegerType(), required=True))
    assert bind(required, col("i") < 2**40) == AlwaysTrue()
    assert bind(SCHEMA, col("id") < 2**70) == AlwaysTrue()
    assert bind(SCHEMA, col("price") < Decimal("1e10")) == BoundUnaryPredicate(
        Operation.NOT_NULL, bind_reference(SCHEMA, "price")
    )


def test_inexact_literals_are_rewritten_exactly() -> None:
    price = bind_reference(SCHEMA, "price")
    assert bind(SCHEMA, col("price") == Decimal("1.005")) == AlwaysFalse()
    assert bind(SCHEMA, col("price") != Decimal("1.005")) == BoundUnaryPredicate(
        Operation.NOT_NULL, price
    )
    assert bind(SCHEMA, col("price") < Decimal("1.005")) == BoundLiteralPredicate(
        Operation.LT_EQ, price, Decimal("1.00")
    )
    assert bind(SCHEMA, col("price") >= Decimal("1.005")) == BoundLiteralPredicate(
        Operation.GT, price, Decimal("1.00")
    )
    assert bind(SCHEMA, col("price") > Decimal("-1.005")) == BoundLiteralPredicate(
        Operation.GT, price, Decimal("-1.01")
    )
    i = bind_reference(SCHEMA, "i")
    assert bind(SCHEMA, col("i") < 2.5) == BoundLiteralPredicate(Operation.LT_EQ, i, 2)
    d = bind_reference(SCHEMA, "d")
    assert bind(SCHEMA, col("d") > "2024-01-01T10:00:00") == BoundLiteralPredicate(
        Operation.GT, d, 19723
    )
    assert bind(SCHEMA, col("d") == "2024-01-01T00:00:00") == BoundLiteralPredicate(
        Operation.EQ, d, 19723
    )


def test_set_binding() -> None:
    i = bind_reference(SCHEMA, "i")
    assert bind(SCHEMA, col("i").isin([5])) == BoundLiteralPredicate(Operation.EQ, i, 5)
    assert bind(SCHEMA, col("i").not_in([5])) == BoundLiteralPredicate(Operation.NOT_EQ, i, 5)
    assert bind(SCHEMA, col("i").isin([5, 2**40])) == BoundLiteralPredicate(Operation.EQ, i, 5)
    assert bind(SCHEMA, col("i").isin([2**40, 2.5])) == AlwaysFalse()
    not_null = BoundUnaryPredicate(Operation.NOT_NULL, i)
    assert bind(SCHEMA, col("i").not_in([2**40])) == not_null  # nulls match no "not in"
    bound = bind(SCHEMA, col("i").isin(["1", 2, 3.0]))
    assert isinstance(bound, BoundSetPredicate) and bound.literals == {1, 2, 3}


def test_referenced_ids_names_and_unbind() -> None:
    expr = parse_filter("id = 1 and (location.lat > 0e0 or not name = 'a')")
    assert referenced_names(expr) == {"id", "location.lat", "name"}
    assert referenced_field_ids(expr, SCHEMA) == {1, 5, 3}
    bound = bind(SCHEMA, expr)
    assert referenced_field_ids(bound) == {1, 5, 3}
    assert unbind(bound) == expr
    with pytest.raises(ValidationError, match="not bound"):
        referenced_field_ids(expr)
    # binding a bound expression again (by name) is idempotent
    assert bind(SCHEMA, bound) == bound


def test_bind_to_struct_type() -> None:
    struct = StructType(
        NestedField(1000, "ts_day", DateType()), NestedField(1001, "b", IntegerType())
    )
    bound = bind(struct, parse_filter("ts_day >= '2024-01-01' and b in (1, 2)"))
    assert bound.is_bound
    assert referenced_field_ids(bound) == {1000, 1001}
