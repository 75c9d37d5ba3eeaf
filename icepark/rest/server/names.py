"""Namespaces and table names as the REST paths carry them, checked before they reach storage,
and the paging of list answers.

A namespace in a path or a ``parent`` query is its parts joined by the unit separator
(``0x1F``, ``%1F`` URL-encoded), as the OpenAPI document says. A part or a table name that is
empty, ``.`` or ``..``, longer than 255 characters, or holds ``/``, ``\\``, NUL or another
control character is refused with 400: it could leave the warehouse as a path. A namespace part
also may not hold ``.``, which the SQL catalog uses to join the parts.

Paging (``pageToken``/``pageSize``): names are listed in sorted order and the token is the last
name of the page (base64url JSON), so a page boundary survives creates and drops between pages.
Without ``pageSize`` the whole rest of the list is one page.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import TypeVar

from fastapi.responses import JSONResponse

from icepark.catalog.base import Catalog
from icepark.errors import BadRequestError, NoSuchNamespaceError
from icepark.rest.models import ListTablesResponse, TableIdentifier

__all__ = ["UNIT_SEPARATOR", "parse_namespace", "check_namespace", "check_name", "page"]

UNIT_SEPARATOR = "\x1f"
_MAX_NAME = 255
_MAX_PAGE = 10_000

T = TypeVar("T", bound=Sequence[str])


def check_name(name: str, what: str = "table name") -> str:
    if not name:
        raise BadRequestError(f"Invalid {what}: empty")
    if len(name) > _MAX_NAME:
        raise BadRequestError(f"Invalid {what}: longer than {_MAX_NAME} characters")
    if name in (".", ".."):
        raise BadRequestError(f"Invalid {what} {name!r}")
    for ch in name:
        if ch in "/\\" or ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise BadRequestError(f"Invalid {what} {name!r}: holds {ch!r}")
    return name


def check_namespace(parts: Sequence[str]) -> tuple[str, ...]:
    if not parts:
        raise BadRequestError("Invalid namespace: empty")
    for part in parts:
        if not isinstance(part, str):
            raise BadRequestError("Invalid namespace: parts must be strings")
        check_name(part, "namespace part")
        if "." in part:
            raise BadRequestError(f"Invalid namespace part {part!r}: holds '.'")
    return tuple(parts)


def parse_namespace(text: str) -> tuple[str, ...]:
    """The namespace a path segment or ``parent`` query names."""
    return check_namespace(text.split(UNIT_SEPARATOR))


def _token(last: Sequence[str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(last)).encode("utf-8")).decode("ascii")


def _untoken(token: str) -> list[str]:
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise BadRequestError("Invalid pageToken") from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequestError("Invalid pageToken")
    return value


def page(
    items: Sequence[T], page_token: str | None, page_size: int | None
) -> tuple[list[T], str | None]:
    """One page of ``items`` (sorted here) and the token of the next page, if any."""
    ordered = sorted(items, key=list)
    if page_token:
        after = _untoken(page_token)
        ordered = [i for i in ordered if list(i) > after]
    if page_size is None:
        return ordered, None
    if page_size < 1 or page_size > _MAX_PAGE:
        raise BadRequestError(f"Invalid pageSize {page_size}: must be 1 to {_MAX_PAGE}")
    if len(ordered) <= page_size:
        return ordered, None
    chunk = ordered[:page_size]
    return chunk, _token(chunk[-1])


def identifiers_page(
    items: Sequence[tuple[str, ...]], page_token: str | None, page_size: int | None
) -> JSONResponse:
    """A ``ListTablesResponse`` (tables and views alike) of one page of ``items``."""
    chosen, token = page(items, page_token, page_size)
    body = ListTablesResponse(
        identifiers=[TableIdentifier.of(i) for i in chosen], next_page_token=token
    )
    return JSONResponse(body.dump())


def check_namespace_exists(catalog: Catalog, ns: tuple[str, ...]) -> None:
    if not catalog.namespace_exists(ns):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")
