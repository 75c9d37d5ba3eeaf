"""The errors of the SQL front end: each names the statement and the construct it could not run.

A statement that does not parse is a :class:`SqlParseError` with the 1-based line and column of
the offending token; a statement that parses but names something icepark cannot run (an
unknown procedure or argument, a clause the front end does not support) is a
:class:`UnsupportedSqlError`; a script that stops part-way is a :class:`SqlScriptError` saying
which statements were committed before the failing one.
"""

from __future__ import annotations

from icepark.errors import IceparkError, UnsupportedOperationError, ValidationError

__all__ = [
    "SqlError",
    "SqlParseError",
    "SqlAnalysisError",
    "UnsupportedSqlError",
    "SqlScriptError",
    "UnknownProcedureError",
    "ProcedureArgumentError",
]


def _shorten(statement: str, limit: int = 120) -> str:
    flat = " ".join(statement.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class SqlError(IceparkError):
    """A SQL statement icepark could not run; ``statement`` is its text."""

    def __init__(self, message: str, statement: str = "") -> None:
        self.statement = statement
        self.message = message
        where = f" in statement: {_shorten(statement)}" if statement else ""
        super().__init__(f"{message}{where}")


class SqlParseError(SqlError, ValidationError):
    """A statement that does not parse; ``line`` and ``column`` (1-based) point at the token."""

    def __init__(self, message: str, statement: str = "", line: int = 1, column: int = 1) -> None:
        self.line = line
        self.column = column
        super().__init__(f"{message} (line {line}, column {column})", statement)


class SqlAnalysisError(SqlError, ValidationError):
    """A statement Spark's analyzer refused: an unknown column or function, a type mismatch
    (Spark's message, which names it, is kept; ``error_class`` is Spark's error class)."""

    def __init__(self, message: str, statement: str = "", error_class: str | None = None) -> None:
        self.error_class = error_class
        super().__init__(message, statement)


class UnsupportedSqlError(SqlError, UnsupportedOperationError):
    """A statement that parses but names a construct icepark cannot run (said by ``construct``)."""

    def __init__(self, construct: str, statement: str = "", hint: str = "") -> None:
        self.construct = construct
        message = f"unsupported: {construct}" + (f" ({hint})" if hint else "")
        super().__init__(message, statement)


class UnknownProcedureError(UnsupportedSqlError):
    """``CALL`` of a procedure icepark does not have; ``valid`` lists the ones it has."""

    def __init__(
        self, procedure: str, valid: list[str], statement: str = "", note: str = ""
    ) -> None:
        self.procedure = procedure
        self.valid = valid
        hint = f"{note}; " if note else ""
        super().__init__(
            f"procedure {procedure}", statement, f"{hint}the procedures are: {', '.join(valid)}"
        )


class ProcedureArgumentError(SqlError, ValidationError):
    """A ``CALL`` whose arguments do not fit the procedure (unknown, missing, repeated or of
    the wrong type); ``argument`` names it and ``valid`` lists the procedure's parameters."""

    def __init__(
        self, procedure: str, argument: str, problem: str, valid: list[str], statement: str = ""
    ) -> None:
        self.procedure = procedure
        self.argument = argument
        self.valid = valid
        super().__init__(
            f"{problem} for procedure {procedure}: {argument} (its parameters: {', '.join(valid)})",
            statement,
        )


class SqlScriptError(SqlError):
    """A statement of a script failed; ``committed`` statements before it ran and stay applied."""

    def __init__(self, index: int, committed: int, cause: BaseException, statement: str) -> None:
        self.index = index
        self.committed = committed
        self.__cause__ = cause
        super().__init__(
            f"statement {index + 1} failed ({type(cause).__name__}: {cause}); the "
            f"{committed} statement(s) before it ran and stay applied, none after it ran",
            statement,
        )
