"""Iceberg's expression JSON (the REST spec's ``Expression``; Java's ``ExpressionParser``).

The forms, as Java 1.10 writes them and as :func:`expression_to_json` writes them:

* ``true`` / ``false``: JSON booleans (read also: ``{"type": "true"}``, ``{"type": "literal",
  "value": true}``);
* ``{"type": "and"|"or", "left": e, "right": e}``, ``{"type": "not", "child": e}``;
* predicates ``{"type": op, "term": t, ...}`` with ``op`` the operation in kebab case
  (``lt-eq``, ``not-in``, ``starts-with``, ``is-nan``, ...): unary ones carry nothing else,
  comparisons a ``value``, ``in``/``not-in`` a ``values`` array. ``t`` is a column name (read
  also: ``{"type": "reference", "term": name}``; transform terms are refused, icepark's
  filters name columns only).

Literal values: an unbound predicate's Python value is written as Java writes the value its
``Literals.from`` would hold: ints and floats as numbers, strings, booleans, bytes as upper-case
hex, decimals as plain strings, UUIDs, dates, times and datetimes as ISO strings. A bound
predicate's value is written by the spec's single-value serialization for the column's type
(:mod:`icepark.spec.values`), so ``date '2024-01-01'`` is ``"2024-01-01"`` either way.

Reading: with a ``schema``, each value is read as the single-value JSON of its column's type
(a hex string becomes bytes for a binary column, ``"1.50"`` a Decimal for a decimal one) and
kept as it is when it is not of that form (binding then converts or refuses it, as for any
filter); without a schema values stay JSON values (ints, floats, strings, booleans), as Java's
``ExpressionParser.fromJson(json)``.
"""

from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from icepark.errors import IceparkError, ValidationError
from icepark.expressions.binding import bind_reference
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Not,
    Operation,
    Or,
    and_,
    not_,
    or_,
)
from icepark.expressions.predicates import (
    BoundLiteralPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
    LiteralPredicate,
    Reference,
    SetPredicate,
    UnaryPredicate,
    predicate,
)
from icepark.spec import values
from icepark.spec.schema import Schema
from icepark.spec.types import BinaryType, FixedType, IcebergType, StructType

__all__ = ["expression_to_json", "expression_from_json"]

_OPS = {op: op.value.replace("_", "-") for op in Operation}
_OPS_BY_NAME = {name: op for op, name in _OPS.items()}


# -- writing ------------------------------------------------------------------------------------


def expression_to_json(expr: Expression) -> Any:
    """``expr`` (bound or unbound) as Iceberg expression JSON (a JSON-compatible object)."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        kind = "and" if isinstance(expr, And) else "or"
        left, right = expression_to_json(expr.left), expression_to_json(expr.right)
        return {"type": kind, "left": left, "right": right}
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    if isinstance(expr, UnaryPredicate | BoundUnaryPredicate):
        return {"type": _OPS[expr.op], "term": expr.term.name}
    if isinstance(expr, LiteralPredicate):
        value = _python_to_json(expr.literal)
        return {"type": _OPS[expr.op], "term": expr.term.name, "value": value}
    if isinstance(expr, SetPredicate):
        items = [_python_to_json(v) for v in _ordered(expr.literals)]
        return {"type": _OPS[expr.op], "term": expr.term.name, "values": items}
    if isinstance(expr, BoundLiteralPredicate):
        ref = expr.term
        value = _typed_to_json(expr.literal, ref)
        return {"type": _OPS[expr.op], "term": ref.name, "value": value}
    if isinstance(expr, BoundSetPredicate):
        ref = expr.term
        items = [_typed_to_json(v, ref) for v in _ordered(expr.literals)]
        return {"type": _OPS[expr.op], "term": ref.name, "values": items}
    raise ValidationError(f"Cannot write expression as JSON: {expr!r}"[:300])


def _ordered(items: Any) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


def _python_to_json(value: Any) -> Any:
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"Cannot write a non-finite number as JSON: {value!r}")
        return value
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, Decimal):
        # BigDecimal's form: plain for scale >= 0, scientific for a negative scale
        exponent = value.as_tuple().exponent
        return format(value, "f") if isinstance(exponent, int) and exponent <= 0 else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    raise ValidationError(f"Cannot write literal {value!r} as JSON"[:300])


def _typed_to_json(value: Any, ref: BoundReference) -> Any:
    out = values.to_json(value, ref.type)
    if isinstance(ref.type, BinaryType | FixedType) and isinstance(out, str):
        return out.upper()  # Java writes base16 in upper case
    return out


# -- reading ------------------------------------------------------------------------------------


def expression_from_json(
    obj: Any, schema: Schema | StructType | None = None, case_sensitive: bool = True
) -> Expression:
    """The unbound icepark expression of Iceberg expression JSON ``obj`` (parsed JSON);
    ``schema`` types the literal values (see the module docstring). A malformed expression
    raises :class:`~icepark.errors.ValidationError` naming what is wrong."""
    if isinstance(obj, bool):
        return AlwaysTrue() if obj else AlwaysFalse()
    if not isinstance(obj, Mapping):
        raise ValidationError(f"Cannot read an expression from {obj!r}"[:300])
    kind = _string(obj, "type").lower()
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    if kind == "literal":
        flag = obj.get("value")
        if not isinstance(flag, bool):
            raise ValidationError(f"A literal expression needs a boolean value: {obj!r}"[:300])
        return AlwaysTrue() if flag else AlwaysFalse()
    if kind in ("and", "or"):
        left = expression_from_json(_field(obj, "left"), schema, case_sensitive)
        right = expression_from_json(_field(obj, "right"), schema, case_sensitive)
        return and_(left, right) if kind == "and" else or_(left, right)
    if kind == "not":
        return not_(expression_from_json(_field(obj, "child"), schema, case_sensitive))
    op = _OPS_BY_NAME.get(kind)
    if op is None:
        raise ValidationError(f"Unknown expression type {kind!r}")
    return _predicate(op, obj, schema, case_sensitive)


def _field(obj: Mapping[str, Any], name: str) -> Any:
    if name not in obj:
        raise ValidationError(f"Expression {obj.get('type')!r} is missing {name!r}")
    return obj[name]


def _string(obj: Mapping[str, Any], name: str) -> str:
    value = _field(obj, name)
    if not isinstance(value, str):
        raise ValidationError(f"Expression field {name!r} must be a string: {value!r}"[:300])
    return value


def _term(obj: Any) -> str:
    if isinstance(obj, str) and obj:
        return obj
    if isinstance(obj, Mapping):
        kind = obj.get("type")
        if kind == "reference":
            return _term(obj.get("term"))
        if kind == "transform":
            raise ValidationError(
                f"Transform terms are not supported in filters: {obj.get('transform')!r}"
            )
    raise ValidationError(f"Cannot read a term from {obj!r}"[:300])


def _predicate(
    op: Operation, obj: Mapping[str, Any], schema: Schema | StructType | None, cs: bool
) -> Expression:
    name = _term(_field(obj, "term"))
    if op.is_unary:
        return predicate(op, Reference(name))
    column = _column_type(schema, name, cs)
    if op.is_set:
        items = _field(obj, "values")
        if not isinstance(items, list):
            raise ValidationError(f"{_OPS[op]} needs a values array: {items!r}"[:300])
        return predicate(op, Reference(name), [_value(v, column) for v in items])
    if "values" in obj and "value" not in obj:
        raise ValidationError(f"{_OPS[op]} takes one value, not a values array")
    return predicate(op, Reference(name), _value(_field(obj, "value"), column))


def _column_type(schema: Schema | StructType | None, name: str, cs: bool) -> IcebergType | None:
    if schema is None:
        return None
    try:
        return bind_reference(schema, name, cs).type
    except IceparkError:
        return None  # binding names the unknown column later


def _value(obj: Any, column: IcebergType | None) -> Any:
    if isinstance(obj, Mapping) and "type" in obj:  # a wrapped literal
        if str(obj["type"]).lower() != "literal":
            raise ValidationError(f"Cannot read a literal from {obj!r}"[:300])
        obj = obj.get("value")
    if obj is None or isinstance(obj, list | Mapping):
        raise ValidationError(f"Cannot read a literal from {obj!r}"[:300])
    if column is not None:
        try:
            return values.from_json(obj, column)
        except IceparkError:
            pass  # not the single-value form of the type: binding converts or refuses it
    return obj
