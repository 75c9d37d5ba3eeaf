"""The tokens of Iceberg's SQL extensions (``ALTER TABLE ...``, ``CALL ...``), each with the
1-based line and column where it starts, so a parse error can point at it.

Spark's lexical rules, as far as these statements need them: words (letters, digits and
``_``), back-quoted identifiers (a doubled back quote is one), string literals in single or
double quotes with backslash escapes (adjacent strings are joined by the parser), numbers
with an optional type suffix (``10L``, ``1.5D``, ``2BD``), the punctuation ``( ) , . ; = =>
< > : -`` and ``--`` / ``/* */`` comments. :class:`TokenReader` is what a recursive-descent
parser needs over them (look-ahead, expected words, names, literals, errors at a token).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from icepark.spark.sql.errors import SqlParseError

__all__ = ["Kind", "Token", "TokenReader", "tokens", "line_column"]


class Kind(Enum):
    WORD = "word"  # an unquoted identifier or keyword
    QUOTED = "quoted"  # a back-quoted identifier
    STRING = "string"
    NUMBER = "number"
    PUNCT = "punct"
    END = "end"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # the value: unquoted identifier or string, the number's digits, the punctuation
    start: int  # offset of the token's first character in the statement
    end: int  # offset after its last character
    line: int
    column: int

    def is_word(self, *words: str) -> bool:
        """An unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind is Kind.WORD and self.text.upper() in words

    def describe(self) -> str:
        if self.kind is Kind.END:
            return "end of statement"
        if self.kind is Kind.STRING:
            return f"string {self.text!r}"
        return f"'{self.text}'"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a"}
_PUNCT = ("=>", "(", ")", ",", ".", ";", "=", "<", ">", ":", "-", "*", "+", "/", "[", "]")
_SUFFIXES = ("BD", "L", "S", "Y", "D", "F")


def line_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _error(text: str, offset: int, message: str) -> SqlParseError:
    line, column = line_column(text, offset)
    return SqlParseError(message, text, line, column)


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise _error(text, i, "Unclosed comment")
            i = close + 2
        else:
            break
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    quote, out, j, n = text[i], [], i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\\" and j + 1 < n:
            out.append(_ESCAPES.get(text[j + 1], text[j + 1]))
            j += 2
        elif c == quote:
            return "".join(out), j + 1
        else:
            out.append(c)
            j += 1
    raise _error(text, i, "Unclosed string literal")


def _quoted(text: str, i: int) -> tuple[str, int]:
    out, j, n = [], i + 1, len(text)
    while j < n:
        if text[j] == "`":
            if text.startswith("``", j):
                out.append("`")
                j += 2
                continue
            if not out:
                raise _error(text, i, "Empty quoted identifier")
            return "".join(out), j + 1
        out.append(text[j])
        j += 1
    raise _error(text, i, "Unclosed quoted identifier")


def _number(text: str, i: int) -> int:
    n, j = len(text), i
    while j < n and text[j].isdigit():
        j += 1
    if j < n and text[j] == "." and j + 1 < n and text[j + 1].isdigit():
        j += 1
        while j < n and text[j].isdigit():
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1 + (j + 1 < n and text[j + 1] in "+-")
        if k < n and text[k].isdigit():
            j = k
            while j < n and text[j].isdigit():
                j += 1
    for suffix in _SUFFIXES:
        if text[j : j + len(suffix)].upper() == suffix:
            end = j + len(suffix)
            if end >= n or not (text[end].isalnum() or text[end] == "_"):
                return end
    return j


def tokens(text: str) -> Iterator[Token]:
    """The statement's tokens, ending with one :attr:`Kind.END` token."""
    i, n = 0, len(text)
    while True:
        i = _skip_space(text, i)
        line, column = line_column(text, i)
        if i >= n:
            yield Token(Kind.END, "", n, n, line, column)
            return
        c = text[i]
        if c in "'\"":
            value, end = _string(text, i)
            token = Token(Kind.STRING, value, i, end, line, column)
        elif c == "`":
            value, end = _quoted(text, i)
            token = Token(Kind.QUOTED, value, i, end, line, column)
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            end = _number(text, i)
            kind = Kind.NUMBER
            if end < n and (text[end].isalpha() or text[end] == "_"):  # 1a: a word, as Spark
                kind = Kind.WORD
                while end < n and (text[end].isalnum() or text[end] == "_"):
                    end += 1
            token = Token(kind, text[i:end], i, end, line, column)
        elif c.isalpha() or c == "_":
            end = i + 1
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            token = Token(Kind.WORD, text[i:end], i, end, line, column)
        else:
            punct = next((p for p in _PUNCT if text.startswith(p, i)), c)
            token = Token(Kind.PUNCT, punct, i, i + len(punct), line, column)
        yield token
        i = token.end


class TokenReader:
    """Recursive-descent helpers over a statement's tokens; errors carry line and column."""

    def __init__(self, text: str, toks: list[Token]) -> None:
        self.text = text
        self.toks = toks
        self.i = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> Token:
        token = self.peek()
        self.i = min(self.i + 1, len(self.toks) - 1)
        return token

    def error(self, expected: str, token: Token | None = None) -> SqlParseError:
        token = token or self.peek()
        return SqlParseError(
            f"Syntax error at {token.describe()}: expected {expected}",
            self.text,
            token.line,
            token.column,
        )

    def accept(self, *words: str) -> bool:
        if self.peek().is_word(*words):
            self.take()
            return True
        return False

    def expect(self, *words: str) -> Token:
        if not self.peek().is_word(*words):
            raise self.error(" or ".join(words))
        return self.take()

    def accept_punct(self, punct: str) -> bool:
        if self.peek().kind is Kind.PUNCT and self.peek().text == punct:
            self.take()
            return True
        return False

    def expect_punct(self, punct: str) -> Token:
        if not (self.peek().kind is Kind.PUNCT and self.peek().text == punct):
            raise self.error(f"'{punct}'")
        return self.take()

    def identifier(self, what: str = "an identifier") -> str:
        token = self.peek()
        if token.kind not in (Kind.WORD, Kind.QUOTED):
            raise self.error(what)
        return self.take().text

    def name(self, what: str = "a name") -> tuple[str, ...]:
        parts = [self.identifier(what)]
        while self.accept_punct("."):
            parts.append(self.identifier(what))
        return tuple(parts)

    def name_list(self) -> tuple[tuple[str, ...], ...]:
        names = [self.name("a column name")]
        while self.accept_punct(","):
            names.append(self.name("a column name"))
        return tuple(names)

    def string(self, what: str = "a string") -> str:
        if self.peek().kind is not Kind.STRING:
            raise self.error(what)
        parts = [self.take().text]
        while self.peek().kind is Kind.STRING:
            parts.append(self.take().text)
        return "".join(parts)

    def integer(self, what: str = "a number") -> int:
        negative = self.accept_punct("-")
        token = self.peek()
        text = token.text.rstrip("LlSsYy")
        if token.kind is not Kind.NUMBER or not text.isdigit():
            raise self.error(what)
        self.take()
        return -int(text) if negative else int(text)

    def end(self) -> None:
        self.accept_punct(";")
        if self.peek().kind is not Kind.END:
            raise self.error("end of statement")
