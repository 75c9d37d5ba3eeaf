"""Bound icepark expressions as ``pyarrow.compute`` expressions, and values as Arrow scalars.

:func:`to_arrow_expression` translates a bound row filter into a ``pc.Expression`` for
``RecordBatch.filter``, ``Dataset``/``Fragment`` scans and row group pruning. The caller says
how to reach each column (``column_for_field_id``), which lets the same filter run against a
data file's own columns (found by field id, cast after type promotion) or against constants
(columns the file lacks).

Null semantics are SQL's, as Spark returns for the same filter (Iceberg's Java ``Evaluator`` is
not SQL: it compares nulls as the smallest values, so it calls ``null != 5`` and ``null < 5``
true; Spark re-checks such filters with SQL semantics):

* a null value matches no comparison: ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``,
  ``not in``, ``starts with`` and ``not starts with`` are all unknown for null, so a null row
  is not selected whatever the operator (``x != 5`` and ``x not in (1, 2)`` exclude nulls).
  Only ``is null`` and ``is not nan`` select nulls (a null is not NaN; Spark's
  ``isnan(null)`` is false). ``not`` is pushed down to the predicates first
  (:func:`~icepark.expressions.rewrite_not`), exact for nulls under these rules, so
  ``not (x = 5)`` excludes nulls too. To select the rows a filter does *not* select
  (copy-on-write deletes), use ``~fill_null(expr, False)`` on the result of the filter.
* NaN follows icepark's expression model (and Java's metrics evaluators, which prune files
  and row groups that way): NaN matches ``!=``, ``not in``, ``is nan`` and nothing else, so
  ``x > 5`` does not select NaN (Spark, which orders NaN above all values, would).

Arrow's row group statistics ignore NaN, and a row group whose values are all ``v`` besides
NaN gets the guarantee ``x == v``, under which Arrow folds any expression on ``x`` (``x != v``
and ``is_nan(x)`` become false). With ``for_pruning=True`` the float predicates that can
select NaN (``!=``, ``not in``, ``is nan``) become ``true`` so that pruning never drops such
row groups, as do predicates on uuid columns (Arrow cannot compare the ``pa.uuid()``
statistics); the result is then a superset filter, good for pruning only.

UUID columns are compared through their 16-byte storage (``pa.uuid()`` has no compute
kernels): references to uuid fields are cast to ``binary(16)``, which works for ``pa.uuid()``
and ``fixed_size_binary(16)`` columns alike.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.schema import primitive_to_arrow, type_to_arrow
from icepark.errors import InvalidValueError, ValidationError
from icepark.expressions import (
    BoundPredicate,
    BoundPredicateVisitor,
    BoundReference,
    Expression,
    rewrite_not,
    visit,
)
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UUIDType,
)

__all__ = [
    "to_arrow_expression",
    "to_arrow_scalar",
    "to_arrow_array",
    "storage_type",
    "to_arrow_python",
]

_UUID_STORAGE = pa.binary(16)


# -- values ----------------------------------------------------------------------------------


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every extension type (``pa.uuid()``) replaced by its storage type."""
    if isinstance(t, pa.BaseExtensionType):
        return storage_type(t.storage_type)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(storage_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(storage_type(t.key_type)),
            t.item_field.with_type(storage_type(t.item_type)),
        )
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)))
    return t


def to_arrow_python(value: Any, t: IcebergType) -> Any:
    """An internal value (see :mod:`icepark.spec.types`) as the Python value pyarrow builds
    an array of ``storage_type(type_to_arrow(t))`` from: ints stay ints (days, micros, nanos
    are accepted as such), UUIDs become their 16 bytes, structs (tuple by position or dict by
    field id) dicts by name, maps lists of pairs. A struct value missing a field takes the
    field's ``initial_default``."""
    if value is None:
        return None
    if isinstance(t, StructType):
        return {
            f.name: to_arrow_python(_struct_item(value, f, i), f.field_type)
            for i, f in enumerate(t.fields)
        }
    if isinstance(t, ListType):
        return [to_arrow_python(v, t.element_type) for v in value]
    if isinstance(t, MapType):
        items = value.items() if isinstance(value, dict) else value
        return [
            (to_arrow_python(k, t.key_type), to_arrow_python(v, t.value_type)) for k, v in items
        ]
    if isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value.bytes
        return bytes(value)
    if isinstance(value, Decimal | bool | int | float | str | bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def _struct_item(value: Any, f: NestedField, position: int) -> Any:
    if isinstance(value, dict):
        return value.get(f.field_id, f.initial_default)
    if position < len(value):
        return value[position]
    return f.initial_default


def to_arrow_scalar(value: Any, t: IcebergType, arrow_type: pa.DataType | None = None) -> pa.Scalar:
    """An internal value as an Arrow scalar of ``storage_type(arrow_type)`` (default: the
    Arrow type of ``t``), e.g. a date's int days as ``date32``, a uuid as ``binary(16)``."""
    target = storage_type(arrow_type if arrow_type is not None else type_to_arrow(t))
    try:
        return pa.scalar(to_arrow_python(value, t), type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise InvalidValueError(f"Cannot convert {value!r} to Arrow type {target}: {e}") from e


def to_arrow_array(
    value: Any, t: IcebergType, length: int, arrow_type: pa.DataType | None = None
) -> pa.Array:
    """An array repeating an internal value ``length`` times, of ``arrow_type`` exactly
    (default: the Arrow type of ``t``; extension and nested field metadata included)."""
    target = arrow_type if arrow_type is not None else type_to_arrow(t)
    storage = storage_type(target)
    if value is None:
        array = pa.nulls(length, storage)
    else:
        array = pa.repeat(to_arrow_scalar(value, t, storage), length)
    return array if array.type.equals(target, check_metadata=True) else array.cast(target)


# -- expressions -----------------------------------------------------------------------------


def to_arrow_expression(
    bound_expr: Expression,
    column_for_field_id: Callable[[int], pc.Expression],
    *,
    for_pruning: bool = False,
) -> pc.Expression:
    """The Arrow compute expression of a bound icepark expression.

    ``column_for_field_id(field_id)`` gives the expression of a referenced column: a field
    reference (``pc.field("a", "b")``), a cast of one, or a constant (``pc.scalar``). Its
    values must be of the Arrow type icepark uses for the field's Iceberg type (uuid columns
    may also be plain ``fixed_size_binary(16)``). Literals become scalars of that type. See
    the module docstring for null and NaN semantics, and for ``for_pruning``.
    """
    return visit(rewrite_not(bound_expr), _ToArrow(column_for_field_id, for_pruning))


def _literal_type(ref: BoundReference) -> pa.DataType:
    t = ref.type
    if isinstance(t, UUIDType):
        return _UUID_STORAGE
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"Cannot compare column {ref.name!r} of type {t} with a literal")
    return primitive_to_arrow(t)


def _literal(ref: BoundReference, value: Any) -> pa.Scalar:
    return to_arrow_scalar(value, ref.type, _literal_type(ref))


def _literals(ref: BoundReference, values: Iterable[Any]) -> pa.Array:
    target = _literal_type(ref)
    items = [to_arrow_python(v, ref.type) for v in values]
    if isinstance(ref.type, FloatType | DoubleType) and any(v == 0.0 for v in items):
        # is_in hashes bit patterns, but -0.0 = 0.0 (as for eq, and in Spark)
        items = [v for v in items if v != 0.0] + [0.0, -0.0]
    try:
        return pa.array(items, type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise InvalidValueError(f"Cannot convert {items!r} to Arrow type {target}: {e}") from e


class _ToArrow(BoundPredicateVisitor[pc.Expression]):
    def __init__(
        self, column_for_field_id: Callable[[int], pc.Expression], for_pruning: bool
    ) -> None:
        self._column_for = column_for_field_id
        self._for_pruning = for_pruning

    def _col(self, ref: BoundReference) -> pc.Expression:
        expr = self._column_for(ref.field_id)
        if isinstance(ref.type, UUIDType):
            return expr.cast(_UUID_STORAGE)
        return expr

    @staticmethod
    def _is_float(ref: BoundReference) -> bool:
        return isinstance(ref.type, FloatType | DoubleType)

    def _nan_safe(self, ref: BoundReference, expr: pc.Expression) -> pc.Expression:
        """``expr``, or ``true`` when pruning on a float predicate that may select NaN."""
        if self._for_pruning and self._is_float(ref):
            return pc.scalar(True)
        return expr

    def visit_bound_predicate(self, pred: BoundPredicate) -> pc.Expression:
        if self._for_pruning and isinstance(pred.term.type, UUIDType):
            # Arrow's statistics guarantees on uuid columns compare extension values, which
            # has no kernel: do not prune on uuid predicates
            return pc.scalar(True)
        return super().visit_bound_predicate(pred)

    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_not(self, child: pc.Expression) -> pc.Expression:
        # unreachable after rewrite_not; kept for completeness (Kleene logic)
        return ~child

    def visit_and(self, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left & right

    def visit_or(self, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left | right

    def is_null(self, ref: BoundReference) -> pc.Expression:
        return self._col(ref).is_null()

    def not_null(self, ref: BoundReference) -> pc.Expression:
        return self._col(ref).is_valid()

    def is_nan(self, ref: BoundReference) -> pc.Expression:
        if not self._is_float(ref):
            return pc.scalar(False)
        # is_nan(null) is null: not selected, as Spark's isnan(null) is false
        return self._nan_safe(ref, pc.is_nan(self._col(ref)))

    def not_nan(self, ref: BoundReference) -> pc.Expression:
        if not self._is_float(ref):
            return pc.scalar(True)
        col = self._col(ref)
        # a null is not NaN: Spark's isnan(null) is false, so NOT isnan(null) is true
        return col.is_null() | ~pc.is_nan(col)

    def lt(self, ref: BoundReference, literal: Any) -> pc.Expression:
        return self._col(ref) < _literal(ref, literal)

    def lt_eq(self, ref: BoundReference, literal: Any) -> pc.Expression:
        return self._col(ref) <= _literal(ref, literal)

    def gt(self, ref: BoundReference, literal: Any) -> pc.Expression:
        return self._col(ref) > _literal(ref, literal)

    def gt_eq(self, ref: BoundReference, literal: Any) -> pc.Expression:
        return self._col(ref) >= _literal(ref, literal)

    def eq(self, ref: BoundReference, literal: Any) -> pc.Expression:
        return self._col(ref) == _literal(ref, literal)

    def not_eq(self, ref: BoundReference, literal: Any) -> pc.Expression:
        # IEEE: NaN != x is true
        return self._nan_safe(ref, self._col(ref) != _literal(ref, literal))

    def in_(self, ref: BoundReference, literals: frozenset[Any]) -> pc.Expression:
        if not literals:
            return pc.scalar(False)
        # is_in gives false (not null) for null values: fine, a null row is not selected
        return self._col(ref).isin(_literals(ref, literals))

    def not_in(self, ref: BoundReference, literals: frozenset[Any]) -> pc.Expression:
        col = self._col(ref)
        if not literals:
            return col.is_valid()
        # is_in is false for nulls, so its negation must exclude them explicitly
        return self._nan_safe(ref, ~col.isin(_literals(ref, literals)) & col.is_valid())

    def starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        return pc.starts_with(self._col(ref), pattern=str(prefix))

    def not_starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        return ~pc.starts_with(self._col(ref), pattern=str(prefix))
