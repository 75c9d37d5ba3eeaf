"""The parser of ``ALTER TABLE`` / ``CALL``: every form gives its typed statement whatever the
spelling (keyword case, quoting, spacing, comments, line breaks), other statements are left
to the front end (None), and a malformed statement is a SqlParseError pointing at the line
and column of the offending token."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.spark.sql import ext_ast as A
from icepark.spark.sql.errors import SqlParseError, UnsupportedSqlError
from icepark.spark.sql.ext_parser import parse_name
from icepark.spark.sql.extensions import parse_extension

T = ("db", "t")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "ALTER TABLE db.t ADD COLUMN p struct<x: double, y: array<int>> COMMENT 'c' AFTER id",
            A.AddColumns(
                table=T,
                columns=(
                    A.ColumnSpec(
                        ("p",), "struct<x: double, y: array<int>>", False, "c", A.Position(("id",))
                    ),
                ),
            ),
        ),
        (
            "alter table `db`.`t` add columns (a.b decimal(10, 2) first, m map<string, int>)",
            A.AddColumns(
                table=T,
                columns=(
                    A.ColumnSpec(("a", "b"), "decimal(10, 2)", position=A.Position()),
                    A.ColumnSpec(("m",), "map<string, int>"),
                ),
            ),
        ),
        (
            "ALTER TABLE db.t DROP COLUMNS IF EXISTS (a, b.c)",
            A.DropColumns(table=T, columns=(("a",), ("b", "c")), if_exists=True),
        ),
        (
            "ALTER TABLE db.t RENAME COLUMN a.b TO c",
            A.RenameColumn(table=T, column=("a", "b"), new_name="c"),
        ),
        (
            "ALTER TABLE db.t ALTER COLUMN q TYPE bigint",
            A.AlterColumn(table=T, column=("q",), type_sql="bigint"),
        ),
        (
            "ALTER TABLE db.t CHANGE q COMMENT 'it''s'",
            A.AlterColumn(table=T, column=("q",), comment="its"),
        ),
        (
            "ALTER TABLE db.t CHANGE COLUMN q `q` bigint COMMENT 'c' FIRST",
            A.AlterColumn(
                table=T,
                column=("q",),
                type_sql="bigint",
                comment="c",
                position=A.Position(),
            ),
        ),
        (
            "ALTER TABLE db.t ALTER COLUMN q AFTER r",
            A.AlterColumn(table=T, column=("q",), position=A.Position(("r",))),
        ),
        (
            "ALTER TABLE db.t ALTER COLUMN q DROP NOT NULL",
            A.AlterColumn(table=T, column=("q",), drop_not_null=True),
        ),
        (
            "ALTER TABLE db.t SET TBLPROPERTIES ('a' = 'b', c.d 1, 'e'=true, 'f'=-2)",
            A.SetProperties(
                table=T, properties=(("a", "b"), ("c.d", "1"), ("e", "true"), ("f", "-2"))
            ),
        ),
        (
            "ALTER TABLE db.t UNSET TBLPROPERTIES IF EXISTS ('a', b)",
            A.UnsetProperties(table=T, keys=("a", "b"), if_exists=True),
        ),
        ("ALTER TABLE db.t RENAME TO u", A.RenameTable(table=T, new_name=("u",))),
        (
            "ALTER TABLE cat.db.t ADD PARTITION FIELD bucket(16, id) AS shard",
            A.AddPartitionField(
                table=("cat", "db", "t"), term=A.Term("bucket", ("id",), 16), name="shard"
            ),
        ),
        (
            "ALTER TABLE db.t ADD PARTITION FIELD truncate(a.b, 4)",
            A.AddPartitionField(table=T, term=A.Term("truncate", ("a", "b"), 4)),
        ),
        (
            "ALTER TABLE db.t DROP PARTITION FIELD date_hour(ts)",
            A.DropPartitionField(table=T, term=A.Term("date_hour", ("ts",))),
        ),
        (
            "ALTER TABLE db.t REPLACE PARTITION FIELD ts_day WITH months(ts) AS m",
            A.ReplacePartitionField(
                table=T,
                old=A.Term("identity", ("ts_day",)),
                new=A.Term("months", ("ts",)),
                name="m",
            ),
        ),
        (
            "ALTER TABLE db.t WRITE ORDERED BY id DESC, name NULLS LAST",
            A.SetWriteOrder(
                table=T,
                distribution="range",
                order=(
                    A.SortTerm(A.Term("identity", ("id",)), True, False),
                    A.SortTerm(A.Term("identity", ("name",)), False, False),
                ),
            ),
        ),
        (
            "ALTER TABLE db.t WRITE LOCALLY ORDERED BY id",
            A.SetWriteOrder(
                table=T, distribution=None, order=(A.SortTerm(A.Term("identity", ("id",))),)
            ),
        ),
        (
            "ALTER TABLE db.t WRITE ORDERED BY id DISTRIBUTED BY PARTITION",
            A.SetWriteOrder(
                table=T, distribution="hash", order=(A.SortTerm(A.Term("identity", ("id",))),)
            ),
        ),
        ("ALTER TABLE db.t WRITE UNORDERED", A.SetWriteOrder(table=T, distribution="none")),
        (
            "ALTER TABLE db.t SET IDENTIFIER FIELDS id, a.b",
            A.SetIdentifierFields(table=T, fields=("id", "a.b")),
        ),
        (
            "ALTER TABLE db.t DROP IDENTIFIER FIELDS id",
            A.DropIdentifierFields(table=T, fields=("id",)),
        ),
        (
            "ALTER TABLE db.t CREATE OR REPLACE BRANCH b AS OF VERSION 12 RETAIN 2 HOURS "
            "WITH SNAPSHOT RETENTION 3 SNAPSHOTS 4 MINUTES",
            A.CreateOrReplaceRef(
                table=T,
                kind="branch",
                name="b",
                create=True,
                replace=True,
                snapshot_id=12,
                max_ref_age_ms=7_200_000,
                min_snapshots_to_keep=3,
                max_snapshot_age_ms=240_000,
            ),
        ),
        (
            "ALTER TABLE db.t CREATE BRANCH IF NOT EXISTS b WITH SNAPSHOT RETENTION 1 DAYS",
            A.CreateOrReplaceRef(
                table=T,
                kind="branch",
                name="b",
                create=True,
                replace=False,
                if_not_exists=True,
                max_snapshot_age_ms=86_400_000,
            ),
        ),
        (
            "ALTER TABLE db.t REPLACE TAG v1 AS OF VERSION 5",
            A.CreateOrReplaceRef(
                table=T, kind="tag", name="v1", create=False, replace=True, snapshot_id=5
            ),
        ),
        (
            "ALTER TABLE db.t DROP TAG IF EXISTS `v-1`",
            A.DropRef(table=T, kind="tag", name="v-1", if_exists=True),
        ),
        (
            "CALL cat.system.expire_snapshots(table => 'db.t', older_than => TIMESTAMP "
            "'2024-01-01 00:00:00', snapshot_ids => array(1L, 2), options => map('a', 1))",
            A.Call(
                procedure=("cat", "system", "expire_snapshots"),
                arguments=(
                    A.CallArgument("table", "db.t", 1, 34),
                    A.CallArgument(
                        "older_than", A.TypedLiteral("TIMESTAMP", "2024-01-01 00:00:00"), 1, 51
                    ),
                    A.CallArgument("snapshot_ids", [1, 2], 1, 98),
                    A.CallArgument("options", (("a", 1),), 1, 128),
                ),
            ),
        ),
        (
            "CALL system.x('a' 'b', -5, 1.5D, false, NULL)",
            A.Call(
                procedure=("system", "x"),
                arguments=(
                    A.CallArgument(None, "ab", 1, 15),
                    A.CallArgument(None, -5, 1, 24),
                    A.CallArgument(None, 1.5, 1, 28),
                    A.CallArgument(None, False, 1, 34),
                    A.CallArgument(None, None, 1, 41),
                ),
            ),
        ),
    ],
)
def test_forms(sql: str, expected: A.ExtensionStatement) -> None:
    assert parse_extension(sql) == expected
    assert parse_extension(sql + " ;") == expected


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM db.t",
        "ALTER VIEW db.v SET TBLPROPERTIES ('a'='b')",
        "ALTER DATABASE db SET DBPROPERTIES ('a'='b')",
        "INSERT INTO db.t VALUES ('unclosed",
        "",
        "  -- only a comment",
        "CALLx system.f()",
    ],
)
def test_other_statements_are_not_ours(sql: str) -> None:
    assert parse_extension(sql) is None


@pytest.mark.parametrize(
    ("sql", "line", "column", "says"),
    [
        ("ALTER TABLE db.t FROB x", 1, 18, "'FROB'"),
        ("ALTER TABLE db.t\n  ADD PARTITION FIELD frob(x)", 2, 23, "frob"),
        ("ALTER TABLE db.t ADD PARTITION FIELD bucket(x)", 1, 38, "bucket(N, column)"),
        ("ALTER TABLE db.t\nWRITE", 2, 6, "end of statement"),
        ("ALTER TABLE db.t WRITE UNORDERED UNORDERED", 1, 34, "one ordering"),
        ("CALL system.f(a => 1\n   b)", 2, 4, "','"),
        ("CALL system.f(1,)", 1, 17, "constant"),
        ("ALTER TABLE db.t ADD COLUMN x struct<a: int", 1, 44, "'>'"),
        ("ALTER TABLE db.t CREATE BRANCH b RETAIN 3 WEEKS", 1, 43, "DAYS"),
        ("ALTER TABLE\n\n    db.t SET TBLPROPERTIES ('a' 'b' 'c'", 3, 37, "','"),
        ("ALTER TABLE db.t SET TBLPROPERTIES ('a' = 'b') extra", 1, 48, "end of statement"),
        ("ALTER TABLE db.t RENAME COLUMN a b", 1, 34, "TO"),
        ("ALTER TABLE db.t ADD COLUMN 'x' int", 1, 29, "column name"),
        ("CALL system.f(map('a'))", 1, 15, "even number"),
        ("ALTER TABLE db.`t ADD COLUMN x int", 1, 16, "Unclosed"),
    ],
)
def test_syntax_errors_point_at_the_token(sql: str, line: int, column: int, says: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_extension(sql)
    assert (caught.value.line, caught.value.column) == (line, column), str(caught.value)
    assert says in str(caught.value)
    assert caught.value.statement == sql


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE db.t SET LOCATION '/x'",
        "ALTER TABLE db.t ADD PARTITION (p = 1)",
        "ALTER TABLE db.t DROP PARTITION (p = 1)",
        "ALTER TABLE db.t REPLACE COLUMNS (a int)",
        "ALTER TABLE db.t RECOVER PARTITIONS",
        "ALTER TABLE db.t ALTER COLUMN a SET NOT NULL",
        "ALTER TABLE db.t ADD COLUMN a int DEFAULT 1",
        "ALTER TABLE db.t CHANGE COLUMN a b int",
    ],
)
def test_spark_forms_iceberg_cannot_run(sql: str) -> None:
    with pytest.raises(UnsupportedSqlError) as caught:
        parse_extension(sql)
    assert caught.value.statement == sql


# -- property tests ----------------------------------------------------------------------------

_words = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_any_name = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8
)
_space = st.lists(
    st.sampled_from([" ", "  ", "\n", "\t", " /* c */ ", " -- c\n"]), min_size=1, max_size=3
).map("".join)


def _quote(name: str, quoted: bool) -> str:
    return "`" + name.replace("`", "``") + "`" if quoted else name


def _case(word: str, upper: bool) -> str:
    return word.upper() if upper else word.lower()


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(_any_name, min_size=1, max_size=3),
    column=st.lists(_words, min_size=1, max_size=2),
    transform=st.sampled_from(["bucket", "truncate", "years", "days", "hours", "identity"]),
    width=st.integers(1, 10_000),
    width_first=st.booleans(),
    name=st.none() | _words,
    upper=st.booleans(),
    space=_space,
    action=st.sampled_from(["ADD", "DROP"]),
)
def test_partition_fields_parse_however_spelled(
    parts: list[str],
    column: list[str],
    transform: str,
    width: int,
    width_first: bool,
    name: str | None,
    upper: bool,
    space: str,
    action: str,
) -> None:
    table = ".".join(_quote(p, True) for p in parts)
    col = ".".join(column)
    if transform == "identity":
        term = col
    elif transform in ("bucket", "truncate"):
        args = [str(width), col] if width_first else [col, str(width)]
        term = f"{transform}({space}{f',{space}'.join(args)})"
    else:
        term = f"{_case(transform, upper)}({col})"
    words = [_case(w, upper) for w in ("ALTER", "TABLE")]
    sql = f"{words[0]}{space}{words[1]} {table}{space}{_case(action, upper)} PARTITION{space}FIELD {term}"
    if action == "ADD" and name is not None:
        sql += f"{space}{_case('AS', upper)} {name}"
    parsed = parse_extension(sql)
    expected_term = A.Term(
        transform, tuple(column), width if transform in ("bucket", "truncate") else None
    )
    if action == "ADD":
        assert parsed == A.AddPartitionField(table=tuple(parts), term=expected_term, name=name)
    else:
        assert parsed == A.DropPartitionField(table=tuple(parts), term=expected_term)


@settings(max_examples=100, deadline=None)
@given(
    prefix=st.lists(_words, min_size=1, max_size=4),
    bad_line=st.integers(0, 3),
    indent=st.integers(0, 6),
)
def test_error_position_is_the_bad_token(prefix: list[str], bad_line: int, indent: int) -> None:
    """``ALTER TABLE <name>`` then, after some blank lines and indentation, a token no
    ALTER TABLE form starts with: the error points at exactly that token."""
    sql = "ALTER TABLE " + ".".join(prefix) + "\n" * bad_line + " " * indent + " ! rest"
    with pytest.raises(SqlParseError) as caught:
        parse_extension(sql)
    offset = sql.index("!")
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    assert (caught.value.line, caught.value.column) == (line, column)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(_any_name, min_size=1, max_size=4))
def test_names_round_trip_through_quoting(parts: list[str]) -> None:
    assert parse_name(A.quote_name(tuple(parts))) == tuple(parts)
    assert parse_name(".".join(_quote(p, True) for p in parts)) == tuple(parts)
