"""A small SQL-like filter language: ``parse_filter("ts >= '2024-01-01' and id in (1, 2)")``.

Grammar (keywords case-insensitive)::

    expr      := or
    or        := and ("or" and)*
    and       := not ("and" not)*
    not       := "not" not | primary
    primary   := "(" expr ")" | "true" | "false" | "starts_with" "(" column "," string ")"
               | column tail | literal cmp column
    tail      := cmp literal | "is" ["not"] ("null" | "nan")
               | ["not"] "in" "(" literal ("," literal)* ")"
               | ["not"] "like" string | ["not"] "between" literal "and" literal
    cmp       := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    column    := name ("." name)*     name: identifier, `back quoted` or "double quoted"
    literal   := integer | decimal | float | 'string' | X'hex' | true | false
               | date 'yyyy-mm-dd' | timestamp '...' | timestamptz '...'

Literals stay Python values (``1`` int, ``1.5`` Decimal, ``1e3`` float, strings str, ``X'0a'``
bytes) until binding converts them for the column's type, so ``ts >= '2024-01-01'`` works for
date, timestamp and timestamptz columns. ``like`` supports prefix patterns only (``'ab%'``,
``\\%`` and ``\\_`` escape the wildcards); ``x = null`` is refused in favour of ``is null``.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    Operation,
    and_,
    not_,
    or_,
)
from icepark.expressions.predicates import (
    LiteralPredicate,
    Reference,
    SetPredicate,
    UnaryPredicate,
)

__all__ = ["as_filter", "parse_filter"]


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, qident, str, num, bytes, op, (, ), ",", ".", eof
    value: Any
    pos: int
    text: str


_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("==", "!=", "<>", "<=", ">=", "=", "<", ">")
_COMPARISONS = {
    "=": Operation.EQ,
    "==": Operation.EQ,
    "!=": Operation.NOT_EQ,
    "<>": Operation.NOT_EQ,
    "<": Operation.LT,
    "<=": Operation.LT_EQ,
    ">": Operation.GT,
    ">=": Operation.GT_EQ,
}
_RESERVED = frozenset({"and", "or", "not", "in", "is", "like", "between"})


class _Error(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


def _quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """The content of a quoted token starting at ``start`` (doubled quotes escape)."""
    out = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise _Error(start, f"unterminated {quote}-quoted text")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c in "(),.":
            # a leading '.' of a number such as .5
            if c == "." and i + 1 < n and text[i + 1].isdigit() and not _after_name(tokens):
                m = _NUMBER.match(text, i)
                assert m is not None
                tokens.append(_number(m.group(), start))
                i = m.end()
                continue
            tokens.append(_Token(c, c, start, c))
            i += 1
            continue
        if c == "'":
            value, i = _quoted(text, i, "'")
            tokens.append(_Token("str", value, start, text[start:i]))
            continue
        if c in '`"':
            value, i = _quoted(text, i, c)
            if not value:
                raise _Error(start, "empty quoted column name")
            tokens.append(_Token("qident", value, start, text[start:i]))
            continue
        if c in "xX" and i + 1 < n and text[i + 1] == "'":
            value, i = _quoted(text, i + 1, "'")
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raise _Error(start, f"invalid hex in binary literal X'{value}'") from None
            tokens.append(_Token("bytes", raw, start, text[start:i]))
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op is not None:
            tokens.append(_Token("op", op, start, op))
            i += len(op)
            continue
        m = _NUMBER.match(text, i)
        if m is not None and (c != "-" or not _after_value(tokens)):
            tokens.append(_number(m.group(), start))
            i = m.end()
            continue
        m = _IDENT.match(text, i)
        if m is not None:
            tokens.append(_Token("ident", m.group(), start, m.group()))
            i = m.end()
            continue
        raise _Error(start, f"unexpected character {c!r}")
    tokens.append(_Token("eof", None, n, "end of input"))
    return tokens


def _after_name(tokens: list[_Token]) -> bool:
    return bool(tokens) and tokens[-1].kind in ("ident", "qident")


def _after_value(tokens: list[_Token]) -> bool:
    """Whether the last token ends a value, so that a '-' after it would be a minus sign
    between operands (a keyword such as ``between`` or ``and`` ends no value)."""
    if not tokens:
        return False
    last = tokens[-1]
    if last.kind == "ident" and str(last.value).lower() in _RESERVED:
        return False
    return last.kind in ("ident", "qident", "num", "str", ")")


def _number(text: str, pos: int) -> _Token:
    value: Any
    if "e" in text or "E" in text:
        value = float(text)
    elif "." in text:
        value = Decimal(text)
    else:
        value = int(text)
    return _Token("num", value, pos, text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # helpers -----------------------------------------------------------------------------------

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.tok
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    @staticmethod
    def is_kw(tok: _Token, *words: str) -> bool:
        return tok.kind == "ident" and tok.value.lower() in words

    def accept_kw(self, word: str) -> bool:
        if self.is_kw(self.tok, word):
            self.advance()
            return True
        return False

    def expect_kw(self, word: str) -> None:
        if not self.accept_kw(word):
            raise _Error(self.tok.pos, f"expected '{word}', got {self.tok.text!r}")

    def expect(self, kind: str) -> _Token:
        if self.tok.kind != kind:
            raise _Error(self.tok.pos, f"expected '{kind}', got {self.tok.text!r}")
        return self.advance()

    # grammar -----------------------------------------------------------------------------------

    def parse(self) -> Expression:
        if self.tok.kind == "eof":
            raise _Error(0, "empty filter")
        expr = self.parse_or()
        if self.tok.kind != "eof":
            raise _Error(self.tok.pos, f"unexpected {self.tok.text!r}")
        return expr

    def parse_or(self) -> Expression:
        parts = [self.parse_and()]
        while self.accept_kw("or"):
            parts.append(self.parse_and())
        return or_(*parts)

    def parse_and(self) -> Expression:
        parts = [self.parse_not()]
        while self.accept_kw("and"):
            parts.append(self.parse_not())
        return and_(*parts)

    def parse_not(self) -> Expression:
        if self.accept_kw("not"):
            return not_(self.parse_not())
        return self.parse_primary()

    def parse_primary(self) -> Expression:
        tok = self.tok
        if tok.kind == "(":
            self.advance()
            expr = self.parse_or()
            self.expect(")")
            return expr
        nxt = self.peek()
        if self.is_kw(tok, "true", "false") and nxt.kind not in ("op", "."):
            self.advance()
            return AlwaysTrue() if tok.value.lower() == "true" else AlwaysFalse()
        if self.is_kw(tok, "starts_with", "not_starts_with") and nxt.kind == "(":
            return self.parse_starts_with_call()
        if self.is_literal_start():
            return self.parse_literal_first()
        column = self.parse_column()
        return self.parse_tail(column)

    def parse_starts_with_call(self) -> Expression:
        negated = self.advance().value.lower() == "not_starts_with"
        self.expect("(")
        column = self.parse_column()
        self.expect(",")
        tok = self.expect("str")
        self.expect(")")
        op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
        return LiteralPredicate(op, column, tok.value)

    def is_literal_start(self) -> bool:
        tok = self.tok
        if tok.kind in ("str", "num", "bytes"):
            return True
        if self.is_kw(tok, "true", "false", "null"):
            return self.peek().kind != "."
        return self.is_kw(tok, "date", "timestamp", "timestamptz") and self.peek().kind == "str"

    def parse_literal_first(self) -> Expression:
        start = self.tok.pos
        value = self.parse_literal()
        op_tok = self.tok
        if op_tok.kind != "op":
            raise _Error(op_tok.pos, f"expected a comparison after the literal at {start}")
        self.advance()
        column = self.parse_column()
        return self.comparison(_COMPARISONS[op_tok.value].flip(), column, value, op_tok)

    def parse_column(self) -> Reference:
        parts = [self.parse_name()]
        while self.tok.kind == ".":
            self.advance()
            parts.append(self.parse_name())
        return Reference(".".join(parts))

    def parse_name(self) -> str:
        tok = self.tok
        if tok.kind == "qident":
            self.advance()
            return str(tok.value)
        if tok.kind == "ident" and tok.value.lower() not in _RESERVED:
            self.advance()
            return str(tok.value)
        what = "end of input" if tok.kind == "eof" else repr(tok.text)
        raise _Error(tok.pos, f"expected a column name, got {what}")

    def parse_tail(self, column: Reference) -> Expression:
        tok = self.tok
        if tok.kind == "op":
            self.advance()
            if not self.is_literal_start():
                raise _Error(
                    self.tok.pos,
                    f"expected a literal after {tok.value!r} (comparing two columns is not "
                    "supported)",
                )
            return self.comparison(_COMPARISONS[tok.value], column, self.parse_literal(), tok)
        if self.accept_kw("is"):
            negated = self.accept_kw("not")
            if self.accept_kw("null"):
                return UnaryPredicate(Operation.NOT_NULL if negated else Operation.IS_NULL, column)
            if self.accept_kw("nan"):
                return UnaryPredicate(Operation.NOT_NAN if negated else Operation.IS_NAN, column)
            raise _Error(self.tok.pos, f"expected 'null' or 'nan', got {self.tok.text!r}")
        negated = self.accept_kw("not")
        if self.accept_kw("in"):
            return SetPredicate(
                Operation.NOT_IN if negated else Operation.IN, column, self.parse_list()
            )
        if self.is_kw(self.tok, "like"):
            self.advance()
            pattern = self.expect("str")
            return _like(column, pattern, negated)
        if self.accept_kw("between"):
            low = self.parse_literal()
            self.expect_kw("and")
            high = self.parse_literal()
            expr = and_(
                LiteralPredicate(Operation.GT_EQ, column, low),
                LiteralPredicate(Operation.LT_EQ, column, high),
            )
            return not_(expr) if negated else expr
        expected = "'in', 'like' or 'between'" if negated else "an operator"
        raise _Error(self.tok.pos, f"expected {expected} after {column}, got {self.tok.text!r}")

    def comparison(self, op: Operation, column: Reference, value: Any, tok: _Token) -> Expression:
        if value is None:
            hint = "is not null" if op == Operation.NOT_EQ else "is null"
            raise _Error(tok.pos, f"cannot compare with null: use '{column} {hint}' instead")
        return LiteralPredicate(op, column, value)

    def parse_list(self) -> list[Any]:
        self.expect("(")
        values = [self.parse_list_item()]
        while self.tok.kind == ",":
            self.advance()
            values.append(self.parse_list_item())
        self.expect(")")
        return values

    def parse_list_item(self) -> Any:
        pos = self.tok.pos
        value = self.parse_literal()
        if value is None:
            raise _Error(pos, "null cannot be in a list: add 'or <column> is null' instead")
        return value

    def parse_literal(self) -> Any:
        tok = self.tok
        if tok.kind in ("str", "num", "bytes"):
            self.advance()
            return tok.value
        if self.is_kw(tok, "true", "false"):
            self.advance()
            return tok.value.lower() == "true"
        if self.is_kw(tok, "null"):
            self.advance()
            return None
        if self.is_kw(tok, "date", "timestamp", "timestamptz") and self.peek().kind == "str":
            self.advance()
            text = self.advance()
            return _typed_literal(tok.value.lower(), text)
        what = "end of input" if tok.kind == "eof" else repr(tok.text)
        raise _Error(tok.pos, f"expected a literal, got {what}")


def _typed_literal(kind: str, tok: _Token) -> Any:
    try:
        if kind == "date":
            return datetime.date.fromisoformat(tok.value.strip())
        value = datetime.datetime.fromisoformat(tok.value.strip())
    except ValueError:
        raise _Error(tok.pos, f"invalid {kind} literal {tok.text}") from None
    if kind == "timestamptz" and value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return value


def _like(column: Reference, tok: _Token, negated: bool) -> Expression:
    pattern: str = tok.value
    prefix: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            if i != len(pattern) - 1:
                raise _Error(tok.pos, "only prefix patterns are supported by like ('abc%')")
            op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
            return LiteralPredicate(op, column, "".join(prefix))
        if c == "_":
            raise _Error(tok.pos, "'_' wildcards are not supported by like (escape it as '\\_')")
        prefix.append(c)
        i += 1
    return LiteralPredicate(Operation.NOT_EQ if negated else Operation.EQ, column, "".join(prefix))


def as_filter(value: str | Expression | None) -> Expression:
    """What every API taking a filter accepts: a filter string (parsed), an expression (as
    it is) or None (every row)."""
    if value is None:
        return AlwaysTrue()
    return parse_filter(value) if isinstance(value, str) else value


def parse_filter(text: str) -> Expression:
    """Parse an icepark filter string into an unbound expression, the form
    ``table.scan(filter=...)``, ``icepark.spark.read`` and the command line take:
    ``"ts >= '2024-01-01' and id in (1, 2)"``, ``"name like 'ab%'"``,
    ``"x is not null or y between 1 and 5"`` (the module docstring has the grammar).
    Literals stay Python values until the expression is bound to a schema.

    Args:
        text: the filter.

    Returns:
        The expression (``AlwaysTrue`` for ``"true"``).

    Raises:
        ValidationError: the text does not parse, naming the position with a caret, or is
            not a string.
    """
    if not isinstance(text, str):
        raise ValidationError(f"A filter must be a string, got {type(text).__name__}")
    try:
        return _Parser(text).parse()
    except _Error as exc:
        shown = text if len(text) <= 200 else text[:200] + "..."
        caret = " " * min(exc.pos, 203) + "^"
        raise ValidationError(
            f"Invalid filter at position {exc.pos}: {exc.message}\n  {shown}\n  {caret}"
        ) from None
    except ValidationError as exc:
        raise ValidationError(f"Invalid filter: {exc}") from None
    except RecursionError:
        shown = text if len(text) <= 200 else text[:200] + "..."
        raise ValidationError(f"Invalid filter: nested too deeply\n  {shown}") from None
