"""The table's one-call writes: ``table.append``, ``overwrite``, ``overwrite_partitions``,
``delete``, ``upsert``, ``apply_changes`` and ``set_properties``.

Each opens a :class:`~icepark.table.transaction.Transaction` on the table, stages one action
and commits when the block exits cleanly (a failure commits nothing); the transaction
retries a lost race by re-running the action on the fresh metadata. Several writes in one
commit: ``with table.transaction() as tx:`` and the same methods on ``tx``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from icepark.expressions import BooleanExpression
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.transaction import Transaction

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = [
    "append",
    "apply_changes",
    "delete",
    "overwrite",
    "overwrite_partitions",
    "set_properties",
    "upsert",
]

_T = TypeVar("_T", bound="TableLike")


def append(
    table: _T,
    data: Any,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    merge: bool = True,
    wap_id: str | None = None,
    file_format: str | None = None,
) -> _T:
    """Append rows as one snapshot: a pyarrow Table, RecordBatch, RecordBatchReader or
    any iterable of batches (streamed with bounded memory).

    ``branch`` commits to a branch other than main; ``snapshot_properties`` go into the
    snapshot summary; ``merge=False`` makes a fast append (no manifest merging, as Java's
    ``newFastAppend``); ``wap_id`` stages the snapshot without making it current (with
    ``write.wap.enabled=true``; see ``publish_changes``); ``file_format`` (parquet, avro or
    orc) overrides ``write.format.default`` for this write. Appends never conflict: a
    commit that loses a race is retried until ``commit.retry.total-timeout-ms``.

    >>> table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))  # doctest: +SKIP
    """
    with Transaction(table) as tx:
        tx.append(
            data,
            branch=branch,
            snapshot_properties=snapshot_properties,
            merge=merge,
            wap_id=wap_id,
            file_format=file_format,
        )
    return table


def overwrite(
    table: _T,
    data: Any,
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
    wap_id: str | None = None,
) -> _T:
    """Replace the rows matching ``filter`` (every row when None) with ``data``, as one
    snapshot. Files whose rows all match are dropped; files where some match are rewritten
    without them (their deletes applied). Every new row must match ``filter``. Under
    ``write.delete.isolation-level=serializable`` (the default) a concurrent commit that
    added matching rows fails this one with :class:`~icepark.errors.ValidationError`.

    >>> table.overwrite(new_rows, "day = '2024-05-01'")  # doctest: +SKIP
    """
    with Transaction(table) as tx:
        tx.overwrite(
            data,
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            wap_id=wap_id,
        )
    return table


def overwrite_partitions(
    table: _T,
    data: Any,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    wap_id: str | None = None,
) -> _T:
    """Dynamic overwrite: replace every partition that ``data`` touches with ``data``
    (the whole table when it is unpartitioned), as one snapshot."""
    with Transaction(table) as tx:
        tx.overwrite_partitions(
            data, branch=branch, snapshot_properties=snapshot_properties, wap_id=wap_id
        )
    return table


def delete(
    table: _T,
    filter: str | BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> _T:
    """Delete the rows matching ``filter`` as one snapshot, per ``write.delete.mode``:
    copy-on-write (rewrite the files, the default) or merge-on-read (position deletes on
    v2, deletion vectors on v3). Files whose rows all match are dropped without reading.

    >>> table.delete("ts < '2024-01-01' and status = 'test'")  # doctest: +SKIP
    """
    with Transaction(table) as tx:
        tx.delete(
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )
    return table


def upsert(
    table: _T,
    data: Any,
    on: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> _T:
    """Update the rows whose key (``on``, else the schema's identifier fields) matches a
    row of ``data`` and insert the others, as one snapshot (per ``write.merge.mode``).

    >>> table.upsert(changed_rows, on=["id"])  # doctest: +SKIP
    """
    with Transaction(table) as tx:
        tx.upsert(
            data,
            list(on) if on is not None else None,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )
    return table


def apply_changes(
    table: _T,
    data: Any,
    on: Sequence[str] | None = None,
    op_column: str = "_op",
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> _T:
    """Apply change-data-capture rows as one snapshot: ``op_column`` says ``I`` (insert),
    ``U`` (update) or ``D`` (delete) for each row, keyed by ``on`` (else the identifier
    fields); written as equality deletes plus data files."""
    with Transaction(table) as tx:
        tx.apply_changes(
            data,
            list(on) if on is not None else None,
            op_column,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )
    return table


def set_properties(table: _T, properties: dict[str, str] | None = None, **kw: str) -> _T:
    """Set table properties (``properties`` and keyword arguments), committed at once."""
    with Transaction(table) as tx:
        tx.set_properties(properties, **kw)
    return table
