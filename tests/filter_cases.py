"""Random rows and random filters (icepark's filter text and the same in Spark SQL) over a
table of every primitive type, nulls and NaNs: shared by the filter interop test and the
planner tests."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),  # holds NaN
        ("d", pa.float64()),  # no NaN
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("b", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("tz", pa.timestamp("us", tz="UTC")),
    ]
)
WORDS = ["apple", "apricot", "banana", "blue", "cherry", "", "ap", "b"]


def rows(rng: random.Random, start: int, n: int) -> pa.Table:
    def maybe(v: object) -> object:
        return None if rng.random() < 0.12 else v

    cols: dict[str, list[object]] = {name: [] for name in SCHEMA.names}
    for k in range(start, start + n):
        cols["id"].append(k)
        cols["i"].append(maybe(rng.randint(-5000, 5000)))
        cols["l"].append(maybe(rng.randint(-(2**40), 2**40)))
        cols["f"].append(maybe(float("nan") if rng.random() < 0.1 else rng.uniform(-100, 100)))
        cols["d"].append(maybe(rng.choice([-0.0, 0.0, rng.uniform(-1e6, 1e6)])))
        cols["dec"].append(maybe(Decimal(rng.randint(-99999, 99999)) / 100))
        cols["s"].append(maybe(rng.choice(WORDS) + str(rng.randint(0, 9))))
        cols["b"].append(maybe(rng.random() < 0.5))
        cols["day"].append(maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 40))))
        cols["ts"].append(
            maybe(dt.datetime(2024, 1, 1) + dt.timedelta(minutes=rng.randint(0, 60000)))
        )
        cols["tz"].append(
            maybe(
                dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=rng.randint(0, 60000))
            )
        )
    return pa.table(cols, schema=SCHEMA)


def _literal(rng: random.Random, col: str) -> tuple[str, str]:
    """(icepark text, Spark SQL text) of a literal for column ``col``."""
    if col in ("i", "l", "id"):
        v = rng.choice([rng.randint(-6000, 6000), -2400, 0, 4643, -(2**39)])
        return str(v), str(v)
    if col in ("f", "d"):
        v = round(rng.uniform(-120, 120), 2)
        return repr(v), f"CAST({v!r} AS {'FLOAT' if col == 'f' else 'DOUBLE'})"
    if col == "dec":
        v = Decimal(rng.randint(-100000, 100000)) / 100
        return str(v), str(v)
    if col == "s":
        v = rng.choice(WORDS) + str(rng.randint(0, 9))
        return f"'{v}'", f"'{v}'"
    if col == "b":
        v = rng.choice(["true", "false"])
        return v, v
    if col == "day":
        d = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-2, 42))
        return f"'{d}'", f"DATE '{d}'"
    if col == "ts":
        t = dt.datetime(2024, 1, 1) + dt.timedelta(minutes=rng.randint(-10, 60010))
        return f"'{t.isoformat(' ')}'", f"TIMESTAMP_NTZ '{t.isoformat(' ')}'"
    t = dt.datetime(2024, 1, 1) + dt.timedelta(minutes=rng.randint(-10, 60010))
    return f"'{t.isoformat()}+00:00'", f"TIMESTAMP '{t.isoformat()}+00:00'"


_ORDERED = ["i", "l", "d", "dec", "s", "day", "ts", "tz", "id"]


def _predicate(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["cmp", "cmp", "cmp", "in", "notin", "between", "like", "null", "nan"])
    if kind == "null":
        col = rng.choice(SCHEMA.names[1:])
        neg = rng.random() < 0.5
        text = f"{col} is {'not ' if neg else ''}null"
        return text, text
    if kind == "nan":
        neg = rng.random() < 0.5
        return f"f is {'not ' if neg else ''}nan", f"{'NOT ' if neg else ''}isnan(f)"
    if kind == "like":
        prefix = rng.choice(["ap", "b", "apr", "c", "blue"])
        neg = rng.random() < 0.3
        text = f"s {'not ' if neg else ''}like '{prefix}%'"
        return text, text
    if kind in ("in", "notin"):
        col = rng.choice([*_ORDERED, "f", "b"])
        values = [_literal(rng, col) for _ in range(rng.randint(1, 4))]
        op = "not in" if kind == "notin" else "in"
        return (
            f"{col} {op} ({', '.join(v[0] for v in values)})",
            f"{col} {op.upper()} ({', '.join(v[1] for v in values)})",
        )
    if kind == "between":
        col = rng.choice(_ORDERED)
        (a, sa), (b, sb) = _literal(rng, col), _literal(rng, col)
        return f"{col} between {a} and {b}", f"{col} BETWEEN {sa} AND {sb}"
    col = rng.choice([*_ORDERED, "f", "b"])
    ops = ["=", "!="] if col in ("f", "b") else ["=", "!=", "<", "<=", ">", ">="]
    op = rng.choice(ops)
    lit, sql = _literal(rng, col)
    return f"{col} {op} {lit}", f"{col} {op} {sql}"


def random_filter(rng: random.Random, depth: int = 0) -> tuple[str, str]:
    r = rng.random()
    if depth < 2 and r < 0.25:
        (a, sa), (b, sb) = random_filter(rng, depth + 1), random_filter(rng, depth + 1)
        op = rng.choice(["and", "or"])
        return f"({a}) {op} ({b})", f"({sa}) {op.upper()} ({sb})"
    if depth < 2 and r < 0.35:
        a, sa = random_filter(rng, depth + 1)
        return f"not ({a})", f"NOT ({sa})"
    return _predicate(rng)
