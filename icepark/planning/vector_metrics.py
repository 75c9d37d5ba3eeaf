"""Skipping data files by their column metrics, for every entry of a manifest at once.

:func:`metrics_might_match` gives, for entries decoded into arrays
(:class:`~icepark.manifest.entry_columns.EntryColumns`), the answer the inclusive metrics
evaluator (:class:`~icepark.expressions.InclusiveMetricsEvaluator`, Java's
``InclusiveMetricsEvaluator``) gives for each entry's data file, computed with numpy and
pyarrow over whole columns instead of entry by entry: a point query on a table of a million
files judges a million files in a few array operations.

The rules are the evaluator's, one for one (its module says why each holds): an empty file
cannot match and one with an unknown (negative) record count might; a column whose values are
all null, or all NaN, cannot match a comparison; a bound rules a file out only when it decodes
(a bound of the wrong length, a string bound that is not UTF-8 and a NaN bound are ignored,
as ``from_bytes`` refuses them); ``in`` over more than ``IN_PREDICATE_LIMIT`` values is not
judged by bounds. Comparisons run on the bounds' typed values: ints, longs, dates, times and
timestamps as int64 (a long's bound may be the 4 bytes of an int it was promoted from),
floats and doubles as float64, strings, binaries, fixed and UUIDs as bytes in unsigned
lexicographic order (the order of their Python values). A predicate on another type (a
decimal, a prefix match) is judged per entry by the evaluator itself, on the entry's decoded
file, so the answer never depends on what is vectorized.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from icepark.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Or
from icepark.expressions.manifest_evaluator import IN_PREDICATE_LIMIT
from icepark.expressions.metrics_evaluator import inclusive_metrics_match, strict_metrics_match
from icepark.expressions.model import Operation
from icepark.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
)
from icepark.manifest.entry_columns import EntryColumns

if TYPE_CHECKING:
    import pyarrow as pa

from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["metrics_must_match", "metrics_might_match"]

_VALUES, _NULLS, _NANS, _LOWER, _UPPER = 109, 110, 137, 125, 128
_COMPARISONS = (Operation.LT, Operation.LT_EQ, Operation.GT, Operation.GT_EQ, Operation.EQ)


def metrics_might_match(
    expr: BooleanExpression,
    columns: EntryColumns,
    rows: np.ndarray,
    include_empty_files: bool = False,
) -> np.ndarray:
    """For each entry of ``rows`` (indexes into ``columns``), might its data file hold rows
    matching ``expr`` (bound, with ``not`` rewritten away, as the inclusive metrics
    evaluator holds it)?"""
    counts = columns.record_count[rows]
    judge = _Judge(columns, rows)
    matches = judge.eval(expr)
    matches = np.where(counts < 0, True, matches)
    return np.where(counts == 0, include_empty_files, matches)


def metrics_must_match(
    expr: BooleanExpression, columns: EntryColumns, rows: np.ndarray
) -> np.ndarray:
    """For each entry of ``rows`` (indexes into ``columns``), do all rows of its data file
    match ``expr`` (bound, with ``not`` rewritten away, as the strict metrics evaluator holds
    it) by its metrics? The answer of :class:`~icepark.expressions.StrictMetricsEvaluator`
    for each entry's data file: comparisons and null and NaN tests judged a column at a time,
    any other predicate by the evaluator's own rules, entry by entry."""
    counts = columns.record_count[rows]
    matches = _StrictJudge(columns, rows).eval(expr)
    return np.where(counts == 0, True, matches)


class _Judge:
    def __init__(self, columns: EntryColumns, rows: np.ndarray) -> None:
        self.columns = columns
        self.rows = rows
        self._counts: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def eval(self, expr: BooleanExpression) -> np.ndarray:
        n = len(self.rows)
        if isinstance(expr, AlwaysTrue):
            return np.ones(n, dtype=bool)
        if isinstance(expr, AlwaysFalse):
            return np.zeros(n, dtype=bool)
        if isinstance(expr, And):
            return self.eval(expr.left) & self.eval(expr.right)
        if isinstance(expr, Or):
            return self.eval(expr.left) | self.eval(expr.right)
        if isinstance(expr, BoundPredicate) and isinstance(expr.term, BoundReference):
            found = self._predicate(expr, expr.term)
            if found is not None:
                return found
        return self._per_entry(expr)

    def _per_entry(self, expr: BooleanExpression) -> np.ndarray:
        """The evaluator's own answer for each entry (its data file decoded)."""
        out = np.empty(len(self.rows), dtype=bool)
        for i, row in enumerate(self.rows.tolist()):
            out[i] = inclusive_metrics_match(expr, self.columns.entry(row).data_file)
        return out

    # -- counts ---------------------------------------------------------------------------------

    def counts(self, which: int, fid: int) -> tuple[np.ndarray, np.ndarray]:
        """(counts, which entries have one) of map ``which`` for column ``fid``."""
        key = (which, fid)
        if key not in self._counts:
            values, has = self.columns.metric_counts(which, fid)
            self._counts[key] = (values[self.rows], has[self.rows])
        return self._counts[key]

    def nulls_only(self, fid: int) -> np.ndarray:
        (values, has_values), (nulls, has_nulls) = (
            self.counts(_VALUES, fid),
            self.counts(_NULLS, fid),
        )
        return has_values & has_nulls & (values - nulls == 0)

    def nans_only(self, fid: int) -> np.ndarray:
        (values, has_values), (nans, has_nans) = self.counts(_VALUES, fid), self.counts(_NANS, fid)
        return has_values & has_nans & (nans == values)

    # -- predicates -----------------------------------------------------------------------------

    def _predicate(self, pred: BoundPredicate, ref: BoundReference) -> np.ndarray | None:
        fid = ref.field_id
        op = pred.op
        if isinstance(pred, BoundUnaryPredicate):
            if op == Operation.IS_NULL:
                nulls, has = self.counts(_NULLS, fid)
                return ~has | (nulls != 0)
            if op == Operation.NOT_NULL:
                return ~self.nulls_only(fid)
            if op == Operation.IS_NAN:
                nans, has = self.counts(_NANS, fid)
                return (~has | (nans != 0)) & ~self.nulls_only(fid)
            if op == Operation.NOT_NAN:
                return ~self.nans_only(fid)
            return None
        if op in (Operation.NOT_EQ, Operation.NOT_IN):
            return ~self.nulls_only(fid)
        bounds = _Bounds.of(self.columns, self.rows, ref)
        if bounds is None:
            return None
        comparable = ~(self.nulls_only(fid) | self.nans_only(fid))
        if isinstance(pred, BoundSetPredicate) and op == Operation.IN:
            literals = pred.literals
            if len(literals) > IN_PREDICATE_LIMIT:
                return comparable
            hit = np.zeros(len(self.rows), dtype=bool)
            for v in literals:
                hit |= bounds.hold(_MIGHT[Operation.EQ], v, missing=True)
            return comparable & hit
        if not isinstance(pred, BoundLiteralPredicate) or op not in _COMPARISONS:
            return None
        return comparable & bounds.hold(_MIGHT[op], pred.literal, missing=True)


class _StrictJudge(_Judge):
    """The strict metrics evaluator's rules (:class:`~icepark.expressions.metrics_evaluator.
    StrictMetricsEvaluator`): a comparison holds for every row only when the column has no
    null and no NaN and its bound, which must decode, lies inside the range; ``is_null`` /
    ``is_nan`` when every value is one."""

    def _per_entry(self, expr: BooleanExpression) -> np.ndarray:
        """The evaluator's own answer for each entry (its data file decoded)."""
        out = np.empty(len(self.rows), dtype=bool)
        for i, row in enumerate(self.rows.tolist()):
            out[i] = strict_metrics_match(expr, self.columns.entry(row).data_file)
        return out

    def none_of(self, which: int, fid: int) -> np.ndarray:
        """Entries whose count of ``which`` (nulls, NaNs) for ``fid`` is known to be 0."""
        counts, has = self.counts(which, fid)
        return has & (counts == 0)

    def no_nulls(self, ref: BoundReference) -> np.ndarray:
        if not ref.produces_null:
            return np.ones(len(self.rows), dtype=bool)
        return self.none_of(_NULLS, ref.field_id)

    def no_nans(self, ref: BoundReference) -> np.ndarray:
        if not isinstance(ref.type, FloatType | DoubleType):
            return np.ones(len(self.rows), dtype=bool)
        return self.none_of(_NANS, ref.field_id)

    def _predicate(self, pred: BoundPredicate, ref: BoundReference) -> np.ndarray | None:
        fid = ref.field_id
        op = pred.op
        if isinstance(pred, BoundUnaryPredicate):
            if op == Operation.IS_NULL:
                return self.nulls_only(fid)
            if op == Operation.NOT_NULL:
                return self.no_nulls(ref)
            if op == Operation.IS_NAN:
                return self.nans_only(fid)
            if op == Operation.NOT_NAN:
                return self.no_nans(ref) | self.nulls_only(fid)
            return None
        if not isinstance(pred, BoundLiteralPredicate) or op not in _COMPARISONS:
            return None
        bounds = _Bounds.of(self.columns, self.rows, ref)
        if bounds is None:
            return None
        comparable = self.no_nulls(ref) & self.no_nans(ref)
        return comparable & bounds.hold(_MUST[op], pred.literal, missing=False)


# -- bounds ---------------------------------------------------------------------------------------

_INT32 = (IntegerType, DateType)
_INT64 = (TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


class _Bounds:
    """One column's lower and upper bounds for the entries judged, decoded: ``ok`` says
    which entries have a usable bound, and the comparisons are true where the bound is
    missing (a missing bound rules nothing out)."""

    def __init__(
        self,
        lower: tuple[np.ndarray, Any],
        upper: tuple[np.ndarray, Any],
        literal: Callable[[Any], Any],
    ) -> None:
        self.lower_ok, self.lower = lower
        self.upper_ok, self.upper = upper
        self.literal = literal

    @classmethod
    def of(cls, columns: EntryColumns, rows: np.ndarray, ref: BoundReference) -> _Bounds | None:
        t = ref.type
        decode: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, Any]]
        literal: Callable[[Any], Any] = _same
        if isinstance(t, _INT32):
            decode = _fixed_width({4: "<i4"})
        elif isinstance(t, LongType):
            decode = _fixed_width({8: "<i8", 4: "<i4"})
        elif isinstance(t, _INT64):
            decode = _fixed_width({8: "<i8"})
        elif isinstance(t, FloatType):
            decode = _fixed_width({4: "<f4"})
        elif isinstance(t, DoubleType):
            decode = _fixed_width({8: "<f8", 4: "<f4"})
        elif isinstance(t, BooleanType):
            decode = _fixed_width({1: "?"})
            literal = int
        elif isinstance(t, StringType):
            decode = _binary(None, utf8=True)
            literal = _utf8
        elif isinstance(t, BinaryType):
            decode = _binary(None)
            literal = bytes
        elif isinstance(t, FixedType):
            decode = _binary(t.length)
            literal = bytes
        elif isinstance(t, UUIDType):
            decode = _binary(16)
            literal = _uuid_bytes
        else:
            return None
        raw = np.frombuffer(columns.raw, dtype=np.uint8)
        found = []
        for which in (_LOWER, _UPPER):
            at, lengths = columns.metric_bounds(which, ref.field_id)
            found.append(decode(raw, at[rows], lengths[rows]))
        return cls(found[0], found[1], literal)

    def _passed(self, values: Any, op: Callable[[Any, Any], Any], v: Any) -> np.ndarray:
        """``op(bound, v)`` for each entry (meaningless where the bound is not usable)."""
        if isinstance(values, np.ndarray):
            return np.asarray(op(values, self.literal(v)))
        import pyarrow as pa  # an Arrow binary array

        scalar = pa.scalar(self.literal(v), type=pa.binary())
        return np.asarray(op(values, scalar).to_numpy(zero_copy_only=False), dtype=bool)

    def hold(self, rule: _Rule, v: Any, *, missing: bool) -> np.ndarray:
        """For each entry, does every test of ``rule`` (a bound, ``"lower"`` or
        ``"upper"``, compared with ``v``) hold? A bound that is missing or unusable passes
        with ``missing`` (it rules nothing out, as the inclusive evaluator holds) and fails
        without (it proves nothing, as the strict one holds)."""
        out: np.ndarray | None = None
        for side, op in rule:
            ok, values = (
                (self.lower_ok, self.lower) if side == "lower" else (self.upper_ok, self.upper)
            )
            passed = self._passed(values, op, v)
            held = (~ok | passed) if missing else (ok & passed)
            out = held if out is None else out & held
        assert out is not None
        return out


def _lt(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a < b
    import pyarrow.compute as pc

    return pc.less(a, b)


def _le(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a <= b
    import pyarrow.compute as pc

    return pc.less_equal(a, b)


def _gt(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a > b
    import pyarrow.compute as pc

    return pc.greater(a, b)


def _ge(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a >= b
    import pyarrow.compute as pc

    return pc.greater_equal(a, b)


def _eq(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a == b
    import pyarrow.compute as pc

    return pc.equal(a, b)


_Rule = tuple[tuple[str, Callable[[Any, Any], Any]], ...]
"""Tests of a comparison on a column's bounds: (which bound, its comparison with the
literal), all of which must hold."""

_MIGHT: dict[Operation, _Rule] = {
    Operation.LT: (("lower", _lt),),
    Operation.LT_EQ: (("lower", _le),),
    Operation.GT: (("upper", _gt),),
    Operation.GT_EQ: (("upper", _ge),),
    Operation.EQ: (("lower", _le), ("upper", _ge)),
}
"""When a file may hold rows ``x op literal`` (the inclusive evaluator's rules)."""

_MUST: dict[Operation, _Rule] = {
    Operation.LT: (("upper", _lt),),
    Operation.LT_EQ: (("upper", _le),),
    Operation.GT: (("lower", _gt),),
    Operation.GT_EQ: (("lower", _ge),),
    Operation.EQ: (("lower", _eq), ("upper", _eq)),
}
"""When every row of a file has ``x op literal`` (the strict evaluator's rules)."""


def _same(v: Any) -> Any:
    return v


def _utf8(v: Any) -> bytes:
    return str(v).encode("utf-8")


def _uuid_bytes(v: Any) -> bytes:
    return bytes(v.bytes)


def _fixed_width(
    widths: dict[int, str],
) -> Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Bounds stored as little-endian numbers of the given byte widths (others unusable),
    as int64 or float64; a NaN bound is unusable. A boolean (``"?"``) is 1 for any byte but
    zero, as the spec's single-value serialization reads it."""
    floating = any(code.endswith(("f4", "f8")) for code in widths.values())

    def decode(
        raw: np.ndarray, at: np.ndarray, lengths: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros(len(at), dtype=np.float64 if floating else np.int64)
        ok = np.zeros(len(at), dtype=bool)
        for width, code in widths.items():
            mine = np.flatnonzero(lengths == width)
            if len(mine) == 0:
                continue
            picked = raw[at[mine, None] + np.arange(width)]
            if code == "?":
                out[mine] = picked.reshape(-1) != 0
            else:
                out[mine] = np.ascontiguousarray(picked).view(code).reshape(-1)
            ok[mine] = True
        if floating:
            ok &= ~np.isnan(out)
        return ok, out

    return decode


def _binary(
    length: int | None, utf8: bool = False
) -> Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, pa.Array]]:
    """Bounds as bytes (of exactly ``length`` bytes when given; valid UTF-8 with ``utf8``),
    as an Arrow binary array."""

    def decode(raw: np.ndarray, at: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, pa.Array]:
        import pyarrow as pa

        ok = lengths >= 0 if length is None else lengths == length
        sizes = np.where(ok, lengths, 0)
        offsets = np.zeros(len(at) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        starts = np.repeat(at - offsets[:-1], sizes)
        data = raw[starts + np.arange(offsets[-1])]
        array = pa.Array.from_buffers(
            pa.large_binary(), len(at), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        if utf8:
            ok &= _valid_utf8(array)
        return ok, array.cast(pa.binary()) if offsets[-1] < 2**31 else array

    return decode


def _valid_utf8(array: pa.Array) -> np.ndarray:
    import pyarrow as pa

    try:
        array.cast(pa.large_string()).validate(full=True)
        return np.ones(len(array), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowException):
        out = np.empty(len(array), dtype=bool)
        for i, v in enumerate(array.to_pylist()):
            try:
                v.decode("utf-8")
                out[i] = True
            except UnicodeDecodeError:
                out[i] = False
        return out
