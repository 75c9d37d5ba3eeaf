"""A recursive-descent parser for ``ALTER TABLE ...`` (Spark's forms and Iceberg's SQL
extensions) and ``CALL ...``, as Java's ``IcebergSqlExtensions.g4`` and Spark 3.5's grammar
spell them.

:func:`parse_extension` answers None for any other statement (``ALTER VIEW`` included), a
frozen statement value (:mod:`icepark.spark.sql.ext_ast`) for one it parses, and raises
:class:`SqlParseError` with the line and column of the first token it cannot take. Forms
Spark has but an Iceberg table cannot run (``SET LOCATION``, Hive partitions, ``REPLACE
COLUMNS``, ``SET SERDE``) raise :class:`UnsupportedSqlError`.
"""

from __future__ import annotations

from typing import Any

from icepark.spark.sql import ext_ast as A
from icepark.spark.sql.errors import SqlParseError, UnsupportedSqlError
from icepark.spark.sql.ext_lexer import Kind, TokenReader, tokens

__all__ = ["parse_extension", "parse_name"]

_TIME_UNITS = {"DAYS": 86_400_000, "HOURS": 3_600_000, "MINUTES": 60_000}
_TRANSFORMS = (
    "bucket",
    "truncate",
    "years",
    "year",
    "months",
    "month",
    "days",
    "day",
    "date",
    "hours",
    "hour",
    "date_hour",
    "identity",
)
_UNSUPPORTED = {
    "LOCATION": "ALTER TABLE ... SET LOCATION",
    "SERDE": "ALTER TABLE ... SET SERDE",
    "SERDEPROPERTIES": "ALTER TABLE ... SET SERDEPROPERTIES",
    "FILEFORMAT": "ALTER TABLE ... SET FILEFORMAT",
}


def parse_extension(statement: str) -> A.ExtensionStatement | None:
    """Recognise one of Iceberg's SQL extension statements: every ``ALTER TABLE ...`` form
    (partition fields, write order, branches and tags, identifier fields, columns,
    properties) and ``CALL <catalog>.system.<procedure>(...)``. The SQL front end calls it
    on each statement; anything else is left to Spark.

    Args:
        statement: one SQL statement's text.

    Returns:
        The typed statement (:mod:`icepark.spark.sql.ext_ast`) for :func:`run_extension`,
        or None when the statement is neither form (or does not tokenize: its own parser
        reports that).

    Raises:
        SqlParseError: an ``ALTER TABLE`` or ``CALL`` statement that does not parse, with
            the line and column of the token.
    """
    stream = tokens(statement)
    try:
        first = next(stream)
        second = next(stream) if first.kind is not Kind.END else first
    except SqlParseError:
        return None  # not ours to judge: its own parser reports it
    if not (first.is_word("CALL") or (first.is_word("ALTER") and second.is_word("TABLE"))):
        return None
    parser = _Parser(statement, [first, second, *stream])
    return parser.statement()


class _Parser(TokenReader):
    # -- statements ------------------------------------------------------------------------

    def statement(self) -> A.ExtensionStatement:
        if self.accept("CALL"):
            result: A.ExtensionStatement = self.call()
        else:
            self.expect("ALTER")
            self.expect("TABLE")
            table = self.name("a table name")
            result = self.alter(table)
        self.end()
        return result

    def call(self) -> A.Call:
        procedure = self.name("a procedure name")
        self.expect_punct("(")
        args: list[A.CallArgument] = []
        if not self.accept_punct(")"):
            while True:
                token = self.peek()
                name = None
                if token.kind in (Kind.WORD, Kind.QUOTED) and self.peek(1).text == "=>":
                    name = self.take().text
                    self.take()
                value = self.constant()
                args.append(A.CallArgument(name, value, token.line, token.column))
                if self.accept_punct(")"):
                    break
                if not self.accept_punct(","):
                    raise self.error("',' or ')'")
        return A.Call(procedure=procedure, arguments=tuple(args), sql=self.text)

    def constant(self) -> Any:
        token = self.peek()
        if token.kind is Kind.STRING:
            return self.string()
        if token.kind is Kind.NUMBER or (token.text == "-" and token.kind is Kind.PUNCT):
            return self.number()
        if token.is_word("TRUE", "FALSE"):
            return self.take().text.upper() == "TRUE"
        if token.is_word("NULL"):
            self.take()
            return None
        if token.is_word("MAP", "ARRAY") and self.peek(1).text == "(":
            kind = self.take().text.upper()
            self.take()
            items = []
            if not self.accept_punct(")"):
                items.append(self.constant())
                while self.accept_punct(","):
                    items.append(self.constant())
                self.expect_punct(")")
            if kind == "ARRAY":
                return list(items)
            if len(items) % 2:
                raise self.error("an even number of map arguments (key, value, ...)", token)
            return tuple(zip(items[::2], items[1::2], strict=True))
        if token.kind is Kind.WORD and self.peek(1).kind is Kind.STRING:
            self.take()
            return A.TypedLiteral(token.text.upper(), self.string())
        raise self.error("a constant (string, number, boolean, map(...) or array(...))")

    def number(self) -> Any:
        negative = self.accept_punct("-")
        token = self.peek()
        if token.kind is not Kind.NUMBER:
            raise self.error("a number")
        self.take()
        text = token.text.upper()
        sign = -1 if negative else 1
        for suffix in ("BD", "D", "F"):
            if text.endswith(suffix):
                return sign * float(text[: -len(suffix)])
        text = text.rstrip("LSY")
        if text.isdigit():
            return sign * int(text)
        return sign * float(text)

    # -- ALTER TABLE -----------------------------------------------------------------------

    def alter(self, table: A.Name) -> A.TableStatement:
        token = self.peek()
        word = token.text.upper() if token.kind is Kind.WORD else ""
        if word == "ADD":
            self.take()
            return self.add(table)
        if word == "DROP":
            self.take()
            return self.drop(table)
        if word == "RENAME":
            self.take()
            if self.accept("COLUMN"):
                column = self.name("a column name")
                self.expect("TO")
                return A.RenameColumn(
                    table=table, column=column, new_name=self.identifier(), sql=self.text
                )
            self.expect("TO")
            return A.RenameTable(table=table, new_name=self.name("a table name"), sql=self.text)
        if word in ("ALTER", "CHANGE"):
            self.take()
            self.accept("COLUMN")
            return self.alter_column(table, hive=word == "CHANGE")
        if word == "SET":
            self.take()
            return self.set(table)
        if word == "UNSET":
            self.take()
            self.expect("TBLPROPERTIES")
            if_exists = self.if_exists()
            keys = tuple(k for k, _ in self.properties(values=False))
            return A.UnsetProperties(table=table, keys=keys, if_exists=if_exists, sql=self.text)
        if word == "REPLACE":
            self.take()
            if self.accept("PARTITION"):
                self.expect("FIELD")
                old = self.term()
                self.expect("WITH")
                new = self.term()
                name = self.identifier() if self.accept("AS") else None
                return A.ReplacePartitionField(
                    table=table, old=old, new=new, name=name, sql=self.text
                )
            if self.peek().is_word("COLUMNS"):
                raise UnsupportedSqlError("ALTER TABLE ... REPLACE COLUMNS", self.text)
            return self.ref(table, create=False, replace=True)
        if word == "CREATE":
            self.take()
            replace = False
            if self.accept("OR"):
                self.expect("REPLACE")
                replace = True
            return self.ref(table, create=True, replace=replace)
        if word == "WRITE":
            self.take()
            return self.write(table)
        if word in ("RECOVER", "TOUCH", "COMPACT", "CLUSTER", "PARTITION"):
            raise UnsupportedSqlError(f"ALTER TABLE ... {word}", self.text)
        raise self.error(
            "ADD, DROP, RENAME, ALTER COLUMN, SET, UNSET, REPLACE, CREATE or WRITE", token
        )

    def if_exists(self) -> bool:
        if self.accept("IF"):
            self.expect("EXISTS")
            return True
        return False

    def partition_field(self, verb: str) -> bool:
        """``PARTITION FIELD`` after ``verb`` taken (True), or no ``PARTITION`` (False); a
        Hive ``PARTITION (...)`` is refused with Iceberg's form as the hint."""
        if not self.accept("PARTITION"):
            return False
        if not self.peek().is_word("FIELD"):
            raise UnsupportedSqlError(
                f"ALTER TABLE ... {verb} PARTITION (Hive partitions)",
                self.text,
                f"Iceberg partitions are fields: {verb} PARTITION FIELD <transform>",
            )
        self.take()
        return True

    def add(self, table: A.Name) -> A.TableStatement:
        if self.partition_field("ADD"):
            term = self.term()
            name = self.identifier() if self.accept("AS") else None
            return A.AddPartitionField(table=table, term=term, name=name, sql=self.text)
        self.expect("COLUMN", "COLUMNS")
        if self.accept_punct("("):
            columns = [self.column_spec()]
            while self.accept_punct(","):
                columns.append(self.column_spec())
            self.expect_punct(")")
        else:
            columns = [self.column_spec()]
            while self.accept_punct(","):
                columns.append(self.column_spec())
        return A.AddColumns(table=table, columns=tuple(columns), sql=self.text)

    def drop(self, table: A.Name) -> A.TableStatement:
        if self.partition_field("DROP"):
            return A.DropPartitionField(table=table, term=self.term(), sql=self.text)
        if self.accept("IDENTIFIER"):
            self.expect("FIELDS")
            fields = tuple(".".join(n) for n in self.name_list())
            return A.DropIdentifierFields(table=table, fields=fields, sql=self.text)
        if self.peek().is_word("BRANCH", "TAG"):
            kind = self.take().text.lower()
            if_exists = self.if_exists()
            name = self.identifier(f"a {kind} name")
            return A.DropRef(table=table, kind=kind, name=name, if_exists=if_exists, sql=self.text)
        self.expect("COLUMN", "COLUMNS")
        if_exists = self.if_exists()
        if self.accept_punct("("):
            columns = self.name_list()
            self.expect_punct(")")
        else:
            columns = self.name_list()
        return A.DropColumns(table=table, columns=columns, if_exists=if_exists, sql=self.text)

    def set(self, table: A.Name) -> A.TableStatement:
        if self.accept("TBLPROPERTIES"):
            props = tuple(self.properties(values=True))
            return A.SetProperties(table=table, properties=props, sql=self.text)
        if self.accept("IDENTIFIER"):
            self.expect("FIELDS")
            fields = tuple(".".join(n) for n in self.name_list())
            return A.SetIdentifierFields(table=table, fields=fields, sql=self.text)
        token = self.peek()
        if token.kind is Kind.WORD and token.text.upper() in _UNSUPPORTED:
            raise UnsupportedSqlError(_UNSUPPORTED[token.text.upper()], self.text)
        raise self.error("TBLPROPERTIES or IDENTIFIER FIELDS")

    def properties(self, values: bool) -> list[tuple[str, str]]:
        self.expect_punct("(")
        out: list[tuple[str, str]] = []
        while True:
            key = self.property_key()
            value = ""
            if values:
                self.accept_punct("=")
                value = self.property_value()
            out.append((key, value))
            if self.accept_punct(")"):
                return out
            if not self.accept_punct(","):
                raise self.error("',' or ')'")

    def property_key(self) -> str:
        if self.peek().kind is Kind.STRING:  # one literal: Spark does not join them here
            return self.take().text
        return ".".join(self.name("a property key"))

    def property_value(self) -> str:
        token = self.peek()
        if token.kind is Kind.STRING:
            return self.take().text
        if token.is_word("TRUE", "FALSE"):
            return self.take().text.lower()
        if token.kind is Kind.NUMBER or token.text == "-":
            negative = "-" if self.accept_punct("-") else ""
            if self.peek().kind is not Kind.NUMBER:
                raise self.error("a property value")
            return negative + self.take().text
        raise self.error("a property value (string, number or boolean)")

    # -- columns ---------------------------------------------------------------------------

    def column_spec(self) -> A.ColumnSpec:
        path = self.name("a column name")
        type_sql = self.type_sql()
        not_null = False
        comment = None
        position = None
        while True:
            if self.accept("NOT"):
                self.expect("NULL")
                not_null = True
            elif self.accept("COMMENT"):
                comment = self.string("a comment string")
            elif self.peek().is_word("FIRST", "AFTER"):
                position = self.position()
            elif self.peek().is_word("DEFAULT"):
                raise UnsupportedSqlError("column DEFAULT values in ALTER TABLE", self.text)
            else:
                break
        return A.ColumnSpec(path, type_sql, not_null, comment, position)

    def position(self) -> A.Position:
        if self.accept("FIRST"):
            return A.Position()
        self.expect("AFTER")
        return A.Position(self.name("a column name"))

    def type_sql(self) -> str:
        """The text of a Spark type (``int``, ``decimal(10, 2)``, ``struct<a: int, b:
        array<string>>``), checked for balance; Spark's type parser reads it when it runs."""
        first = self.peek()
        if first.kind is not Kind.WORD:
            raise self.error("a data type")
        self.take()
        if self.peek().text == "(" and self.peek().kind is Kind.PUNCT:
            self.take()
            self.integer("a type parameter")
            while self.accept_punct(","):
                self.integer("a type parameter")
            self.expect_punct(")")
        elif self.peek().text == "<" and self.peek().kind is Kind.PUNCT:
            self.take()
            depth = 1
            while depth:
                token = self.take()
                if token.kind is Kind.END:
                    raise self.error("'>' closing the type", token)
                if token.kind is Kind.PUNCT and token.text == "<":
                    depth += 1
                elif token.kind is Kind.PUNCT and token.text == ">":
                    depth -= 1
        last = self.toks[self.i - 1]
        return self.text[first.start : last.end]

    def alter_column(self, table: A.Name, hive: bool = False) -> A.AlterColumn:
        column = self.name("a column name")
        token = self.peek()
        keywords = ("TYPE", "COMMENT", "FIRST", "AFTER", "DROP", "SET")
        if hive and token.kind in (Kind.WORD, Kind.QUOTED) and not token.is_word(*keywords):
            return self.hive_change(table, column)
        if self.accept("TYPE"):
            return A.AlterColumn(
                table=table, column=column, type_sql=self.type_sql(), sql=self.text
            )
        if self.accept("COMMENT"):
            comment = self.string("a comment string")
            return A.AlterColumn(table=table, column=column, comment=comment, sql=self.text)
        if token.is_word("FIRST", "AFTER"):
            position = self.position()
            return A.AlterColumn(table=table, column=column, position=position, sql=self.text)
        if self.accept("DROP"):
            if self.accept("NOT"):
                self.expect("NULL")
                return A.AlterColumn(table=table, column=column, drop_not_null=True, sql=self.text)
            if self.peek().is_word("DEFAULT"):
                raise UnsupportedSqlError("ALTER COLUMN ... DROP DEFAULT", self.text)
            raise self.error("NOT NULL")
        if self.accept("SET"):
            if self.peek().is_word("NOT"):
                raise UnsupportedSqlError(
                    "ALTER COLUMN ... SET NOT NULL",
                    self.text,
                    "an optional column cannot become required, as in Java's Iceberg",
                )
            raise UnsupportedSqlError("ALTER COLUMN ... SET DEFAULT", self.text)
        raise self.error("TYPE, COMMENT, FIRST, AFTER or DROP NOT NULL")

    def hive_change(self, table: A.Name, column: A.Name) -> A.AlterColumn:
        """``CHANGE [COLUMN] old new type [COMMENT c] [FIRST|AFTER x]`` (Spark's Hive form:
        on an Iceberg table the name must stay the same)."""
        token = self.peek()
        new_name = self.identifier("a column name")
        if new_name != column[-1]:
            raise UnsupportedSqlError(
                f"renaming column {'.'.join(column)} to {new_name} in CHANGE COLUMN",
                self.text,
                f"line {token.line}, column {token.column}: use RENAME COLUMN",
            )
        type_sql = self.type_sql()
        comment = self.string("a comment string") if self.accept("COMMENT") else None
        position = self.position() if self.peek().is_word("FIRST", "AFTER") else None
        return A.AlterColumn(
            table=table,
            column=column,
            type_sql=type_sql,
            comment=comment,
            position=position,
            sql=self.text,
        )

    # -- Iceberg's forms -------------------------------------------------------------------

    def term(self) -> A.Term:
        """``col``, ``a.b`` or ``transform(args)`` with a column and, for bucket and
        truncate, a width in either order (as Java's ``Spark3Util.toIcebergTerm``)."""
        token = self.peek()
        if self.peek(1).text == "(" and self.peek(1).kind is Kind.PUNCT:
            name = self.identifier("a transform").lower()
            if name not in _TRANSFORMS:
                raise SqlParseError(
                    f"Unknown transform {name!r}: expected one of {', '.join(_TRANSFORMS)}",
                    self.text,
                    token.line,
                    token.column,
                )
            self.take()
            columns: list[A.Name] = []
            widths: list[int] = []
            while True:
                if self.peek().kind is Kind.NUMBER:
                    widths.append(self.integer())
                else:
                    columns.append(self.name("a column name or width"))
                if self.accept_punct(")"):
                    break
                if not self.accept_punct(","):
                    raise self.error("',' or ')'")
            wants_width = name in ("bucket", "truncate")
            if len(columns) != 1 or len(widths) != (1 if wants_width else 0):
                shape = f"{name}(N, column)" if wants_width else f"{name}(column)"
                raise SqlParseError(
                    f"Invalid transform arguments: expected {shape}",
                    self.text,
                    token.line,
                    token.column,
                )
            return A.Term(name, columns[0], widths[0] if widths else None)
        return A.Term("identity", self.name("a column or transform"))

    def write(self, table: A.Name) -> A.SetWriteOrder:
        distributed = False
        ordering: tuple[A.SortTerm, ...] | None = None
        locally = unordered = False
        start = self.peek()
        while True:
            token = self.peek()
            if self.accept("DISTRIBUTED"):
                if distributed:
                    raise self.error("one distribution clause", token)
                self.expect("BY")
                self.expect("PARTITION")
                distributed = True
            elif token.is_word("LOCALLY", "ORDERED", "UNORDERED"):
                if ordering is not None or unordered:
                    raise self.error("one ordering clause", token)
                if self.accept("UNORDERED"):
                    unordered = True
                    continue
                locally = self.accept("LOCALLY")
                self.expect("ORDERED")
                self.expect("BY")
                ordering = self.order()
            else:
                break
        if not distributed and ordering is None and not unordered:
            raise self.error("DISTRIBUTED BY PARTITION, [LOCALLY] ORDERED BY or UNORDERED", start)
        if distributed:
            mode: str | None = "hash"
        elif unordered:
            mode = "none"
        elif locally:
            mode = None
        else:
            mode = "range"
        return A.SetWriteOrder(table=table, distribution=mode, order=ordering or (), sql=self.text)

    def order(self) -> tuple[A.SortTerm, ...]:
        parenthesized = self.accept_punct("(")
        fields = [self.sort_term()]
        while self.accept_punct(","):
            fields.append(self.sort_term())
        if parenthesized:
            self.expect_punct(")")
        return tuple(fields)

    def sort_term(self) -> A.SortTerm:
        term = self.term()
        descending = False
        if self.accept("DESC"):
            descending = True
        else:
            self.accept("ASC")
        nulls_first = not descending
        if self.accept("NULLS"):
            nulls_first = self.expect("FIRST", "LAST").text.upper() == "FIRST"
        return A.SortTerm(term, descending, nulls_first)

    def ref(self, table: A.Name, create: bool, replace: bool) -> A.CreateOrReplaceRef:
        kind = self.expect("BRANCH", "TAG").text.lower()
        if_not_exists = False
        if create and not replace and self.accept("IF"):
            self.expect("NOT")
            self.expect("EXISTS")
            if_not_exists = True
        name = self.identifier(f"a {kind} name")
        snapshot_id = max_ref_age = min_snapshots = max_snapshot_age = None
        if self.accept("AS"):
            self.expect("OF")
            self.expect("VERSION")
            snapshot_id = self.integer("a snapshot id")
        if self.accept("RETAIN"):
            max_ref_age = self.duration()
        if kind == "branch" and self.accept("WITH"):
            self.expect("SNAPSHOT")
            self.expect("RETENTION")
            count = self.integer("a number of snapshots or an age")
            if self.accept("SNAPSHOTS"):
                min_snapshots = count
                if self.peek().kind is Kind.NUMBER:
                    max_snapshot_age = self.duration()
            else:
                max_snapshot_age = count * self.time_unit()
        return A.CreateOrReplaceRef(
            table=table,
            kind=kind,
            name=name,
            create=create,
            replace=replace,
            if_not_exists=if_not_exists,
            snapshot_id=snapshot_id,
            max_ref_age_ms=max_ref_age,
            min_snapshots_to_keep=min_snapshots,
            max_snapshot_age_ms=max_snapshot_age,
            sql=self.text,
        )

    def duration(self) -> int:
        count = self.integer("a number")
        return count * self.time_unit()

    def time_unit(self) -> int:
        return _TIME_UNITS[self.expect(*_TIME_UNITS).text.upper()]


def parse_name(text: str) -> A.Name:
    """A multi-part name given as a string (``db.t``, `` `db`.`t` ``, ``cat.db.t``), as Java
    reads a procedure's ``table`` argument; a malformed one raises :class:`SqlParseError`."""
    parser = _Parser(text, list(tokens(text)))
    name = parser.name("a table name")
    if parser.peek().kind is not Kind.END:
        raise parser.error("end of name")
    return name
