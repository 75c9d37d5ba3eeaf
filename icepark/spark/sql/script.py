"""A SQL script cut into statements, each with where it starts, and errors placed in the script.

:func:`split_statements` cuts at each ``;`` outside quotes (``'...'``, ``"..."``, back
quotes, with Spark's backslash escapes in strings) and comments (``-- ...`` to the end of the
line, ``/* ... */``); a piece holding only blanks and comments is no statement.
:func:`parse_error` turns sqlglot's parse error (line and end column of the offending token
within a statement) into a :class:`~icepark.spark.sql.errors.SqlParseError` with the line and
column of the token's first character in the whole script.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from icepark.spark.sql.errors import SqlParseError
from icepark.spark.sql.ext_lexer import line_column

__all__ = [
    "Statement",
    "split_statements",
    "parse_error",
    "parse_statement",
    "first_words",
]


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text (blanks and comments before it left out) and the
    1-based line and column of its first character in the script."""

    text: str
    line: int = 1
    column: int = 1

    def position(self, line: int, column: int) -> tuple[int, int]:
        """The script's line and column of ``line``/``column`` within this statement."""
        if line <= 1:
            return self.line, self.column + column - 1
        return self.line + line - 1, column

    def at_offset(self, offset: int) -> tuple[int, int]:
        """The script's line and column of character ``offset`` of the statement's text."""
        before = self.text[:offset]
        line = before.count("\n") + 1
        column = offset - (before.rfind("\n") + 1) + 1
        return self.position(line, column)

    def error(self, message: str, offset: int) -> SqlParseError:
        line, column = self.at_offset(offset)
        return SqlParseError(message, self.text, line, column)


def _skip_quoted(text: str, i: int, quote: str) -> int:
    """The index after the quoted run starting at ``text[i] == quote``."""
    n = len(text)
    i += 1
    while i < n:
        c = text[i]
        if c == "\\" and quote != "`":
            i += 2
            continue
        if c == quote:
            if quote == "`" and i + 1 < n and text[i + 1] == "`":
                i += 2
                continue
            return i + 1
        i += 1
    return n


def _skip_comment(text: str, i: int) -> int:
    """The index after the comment at ``i``, or ``i`` when none starts there."""
    if text.startswith("--", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end + 1
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return i


def split_statements(text: str) -> list[Statement]:
    """The statements of ``text``, cut at ``;`` outside quotes and comments."""
    out: list[Statement] = []
    start: int | None = None  # first character of the current statement that is no blank
    i, n = 0, len(text)

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            line, column = line_column(text, start)
            out.append(Statement(text[start:end].rstrip(), line, column))
        start = None

    while i < n:
        c = text[i]
        after = _skip_comment(text, i)
        if after != i:
            i = after
            continue
        if c == ";":
            close(i)
            i += 1
            continue
        if not c.isspace() and start is None:
            start = i
        i = _skip_quoted(text, i, c) if c in "'\"`" else i + 1
    close(n)
    return out


def first_words(text: str, count: int = 3) -> list[str]:
    """The first ``count`` words of a statement, upper-cased, comments skipped."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n and len(words) < count:
        after = _skip_comment(text, i)
        if after != i:
            i = after
            continue
        if text[i].isalpha() or text[i] == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            words.append(text[i:j].upper())
            i = j
            continue
        if not text[i].isspace():
            break
        i += 1
    return words


def parse_error(exc: Exception, statement: Statement) -> SqlParseError:
    """sqlglot's ``ParseError`` (or a tokenizer error) placed in the script."""
    errors = getattr(exc, "errors", None) or []
    first = errors[0] if errors else {}
    message = str(first.get("description") or exc).splitlines()[0]
    line = int(first.get("line") or 1)
    end_col = int(first.get("col") or 1)
    token = str(first.get("highlight") or "")
    column = max(1, end_col - len(token) + 1) if token else max(1, end_col)
    near = f" near {token!r}" if token else ""
    script_line, script_col = statement.position(line, column)
    return SqlParseError(f"{message}{near}", statement.text, script_line, script_col)


def _spark_synonyms(text: str) -> str:
    """``FOR SYSTEM_VERSION AS OF`` read as ``FOR VERSION AS OF`` (Spark's synonym, which
    sqlglot does not know; it reads ``FOR SYSTEM_TIME AS OF`` itself), the same length so
    that errors keep their places."""
    if "system_version" not in text.lower():
        return text
    try:
        tokens = sqlglot.tokenize(text, read="spark")
    except sqlglot.errors.TokenError:
        return text
    words = [t.text.upper() for t in tokens]
    for i, token in enumerate(tokens):
        if words[i] == "SYSTEM_VERSION" and words[i - 1 : i] == ["FOR"]:
            if words[i + 1 : i + 3] == ["AS", "OF"]:
                width = token.end - token.start + 1
                text = text[: token.start] + "VERSION".ljust(width) + text[token.end + 1 :]
    return text


def parse_statement(stmt: Statement) -> exp.Expr:
    """sqlglot's tree of one statement; a parse error placed in the script."""
    try:
        text = _spark_synonyms(stmt.text)
        trees = [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except sqlglot.errors.ParseError as exc:
        raise parse_error(exc, stmt) from None
    except sqlglot.errors.TokenError as exc:
        raise stmt.error(f"cannot read the statement: {exc}", 0) from None
    if len(trees) != 1:
        raise stmt.error("expected one statement", 0)
    return trees[0]
