"""Multi-table transactions: ``POST /v1/{prefix}/transactions/commit``.

A ``CommitTransactionRequest`` holds one ``CommitTableRequest`` per table (identifier,
requirements, updates). Every change is parsed first (a bad one is a 400 naming
``table-changes[i]``), the caller must hold ``write`` on every table's namespace, then the
catalog's ``commit_tables`` checks every requirement, writes each new metadata file and swaps
all pointers in one atomic step: all tables change or none does (once per
``Idempotency-Key``: :mod:`.idempotency`). A requirement that no longer
holds, or a pointer that moved, is a 409 ``CommitFailedException`` naming the table; the
files written for the others are deleted. Answers 204 with no body, as the spec says.

Only catalogs that swap several pointers atomically (the SQL catalog: one database
transaction) advertise the endpoint; the others answer 406 ``UnsupportedOperationException``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from icepark.catalog.base import TableChange
from icepark.errors import BadRequestError
from icepark.rest.models import CommitTransactionRequest
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.errors import parse_each
from icepark.rest.server.idempotency import Outcome, once
from icepark.rest.server.names import check_name, check_namespace
from icepark.rest.server.security import WRITE, Principal
from icepark.spec.requirements import table_requirement_from_json
from icepark.spec.updates import table_update_from_json

__all__ = ["router", "ENDPOINTS"]

router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]

ENDPOINTS = ["POST /v1/{prefix}/transactions/commit"]


@router.post("/transactions/commit", name="commit_transaction")
def commit_transaction(
    request: Request, principal: Caller, body: CommitTransactionRequest
) -> Response:
    if not body.table_changes:
        raise BadRequestError("Invalid commit transaction: table-changes is empty")
    changes: list[TableChange] = []
    idents: list[tuple[str, ...]] = []
    for i, change in enumerate(body.table_changes):
        if change.identifier is None:
            raise BadRequestError(f"Invalid table-changes[{i}]: the table identifier is missing")
        ident = (
            *check_namespace(change.identifier.namespace),
            check_name(change.identifier.name),
        )
        where = f"table-changes[{i}]"
        requirements = parse_each(
            f"{where}.requirements", change.requirements, table_requirement_from_json
        )
        updates = parse_each(f"{where}.updates", change.updates, table_update_from_json)
        changes.append((ident, requirements, updates))
        idents.append(ident)
    for ident in idents:
        require(principal, ident[:-1], WRITE)

    def action() -> Outcome:
        state_of(request).catalog.commit_tables(changes)
        return Outcome(204)

    return once(request, principal, body, action)
