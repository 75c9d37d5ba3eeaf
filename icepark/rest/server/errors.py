"""icepark's errors as the REST protocol's ``ErrorResponse``: status and Java exception name.

The table follows Java's ``RESTCatalogAdapter`` (the reference server): a missing table or
namespace is 404, anything that exists already and a failed commit 409, a malformed request
400, and an unknown commit state 500 (a Java client treats 500, 502 and 504 on a commit as
"state unknown" and keeps its files). Unexpected failures answer 500 with a generic message and
the request id; the details go to the server's log only, with credentials in URIs masked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from icepark.errors import (
    BadRequestError,
    CommitFailedError,
    CommitStateUnknownError,
    ForbiddenError,
    IceparkError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchPlanError,
    NoSuchTableError,
    NoSuchViewError,
    NotAuthorizedError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icepark.rest.models import ErrorModel, ErrorResponse

__all__ = [
    "error_response",
    "status_and_type",
    "install_error_handlers",
    "mask_secrets",
    "parse_each",
]

_log = logging.getLogger("icepark.rest.server")

# most specific first: the first class the error is an instance of decides
_TABLE: tuple[tuple[type[BaseException], int, str], ...] = (
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (NoSuchPlanError, 404, "NoSuchPlanIdException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (ViewAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitFailedError, 409, "CommitFailedException"),
    (CommitStateUnknownError, 500, "CommitStateUnknownException"),
    (NotAuthorizedError, 401, "NotAuthorizedException"),
    (ForbiddenError, 403, "ForbiddenException"),
    (UnsupportedOperationError, 406, "UnsupportedOperationException"),
    (BadRequestError, 400, "BadRequestException"),
    (ValidationError, 400, "BadRequestException"),
)

T = TypeVar("T")


def parse_each(what: str, items: Sequence[Any], parse: Callable[[Any], T]) -> list[T]:
    """``parse`` every item of a request's list; one that fails is a ``BadRequestError`` (400)
    naming ``what[i]``."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item))
        except (IceparkError, ValueError, TypeError, KeyError) as exc:
            raise BadRequestError(f"Invalid {what}[{i}]: {exc}") from exc
    return out


_URI_CREDENTIALS = re.compile(r"(\w+://)[^/\s:@]+:[^/\s@]+@")


def mask_secrets(text: str) -> str:
    """``scheme://user:password@host`` -> ``scheme://***@host``."""
    return _URI_CREDENTIALS.sub(r"\1***@", text)


def status_and_type(exc: BaseException) -> tuple[int, str] | None:
    for cls, status, name in _TABLE:
        if isinstance(exc, cls):
            return status, name
    return None


def error_response(status: int, error_type: str, message: str) -> JSONResponse:
    body = ErrorResponse(error=ErrorModel(message=message, type=error_type, code=status))
    return JSONResponse(body.dump(), status_code=status)


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "-"))


async def _icepark_error(request: Request, exc: Exception) -> JSONResponse:
    known = status_and_type(exc)
    if known is None or known[0] >= 500:
        _log.error(
            "request %s failed: %s: %s",
            _request_id(request),
            type(exc).__name__,
            mask_secrets(str(exc)),
        )
    if known is None:
        return error_response(
            500,
            "ServiceFailureException",
            f"Internal server error ({type(exc).__name__}; request {_request_id(request)})",
        )
    status, name = known
    return error_response(status, name, mask_secrets(str(exc)) or name)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return error_response(400, "BadRequestException", "Malformed request: " + "; ".join(parts))


# the framework's own refusals (no such route, method not allowed, a body that is not JSON)
_HTTP_TYPES = {
    400: "BadRequestException",
    401: "NotAuthorizedException",
    403: "ForbiddenException",
    404: "NotFoundException",
    405: "UnsupportedOperationException",
    406: "UnsupportedOperationException",
}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's ``HTTPException`` (raised by the framework before a route runs: 404 for a
    path no route serves, 405, 400 for a body that is not JSON) as an ``ErrorResponse``, like
    every other error, instead of FastAPI's ``{"detail": ...}``."""
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    default = "BadRequestException" if status < 500 else "ServiceFailureException"
    response = error_response(status, _HTTP_TYPES.get(status, default), str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    return await _icepark_error(request, exc)


def install_error_handlers(app: Any) -> None:
    app.add_exception_handler(IceparkError, _icepark_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
