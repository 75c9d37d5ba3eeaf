"""Removing delete files that apply to no live data file (Java's
``RemoveDanglingDeletesSparkAction``, run by ``rewrite_data_files`` with
``remove-dangling-deletes``).

By the spec's rules, at the head of a branch:

* a position delete file (v2) applies to data files of its partition with a data sequence
  number at most its own: it dangles when the partition's oldest live data file is newer;
* an equality delete file applies to data files with a strictly smaller data sequence number,
  in its partition or, for an unpartitioned spec, everywhere: it dangles when no such file is
  left;
* a deletion vector dangles when the data file it references is not live.

A partition without live data files dangles all its delete files. The dangling files are
removed in one ``replace`` snapshot
(:class:`~icepark.table.write.rewrite_files.RewriteFilesAction`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icepark.manifest import DataFile, FileContent, ManifestContent
from icepark.planning.walk import live_entries
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.transaction import Transaction
from icepark.table.write.rewrite_files import RewriteFilesAction

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = ["dangling_delete_files", "remove_dangling_deletes"]

_Key = tuple[int, tuple[object, ...]]


def dangling_delete_files(table: TableLike, metadata: TableMetadata, branch: str) -> list[DataFile]:
    """The live delete files of ``branch``'s head that apply to no live data file."""
    head = metadata.snapshot_by_name(branch)
    if head is None or metadata.format_version < 2:
        return []
    io = table.io
    oldest: dict[_Key, int] = {}
    live_paths: set[str] = set()
    overall: int | None = None
    for _, entries in live_entries(io, metadata, head, None, ManifestContent.DATA):
        for e in entries:
            f, seq = e.data_file, e.sequence_number or 0
            key = (f.spec_id or 0, tuple(f.partition))
            oldest[key] = min(oldest.get(key, seq), seq)
            overall = seq if overall is None else min(overall, seq)
            live_paths.add(f.file_path)
    dangling: list[DataFile] = []
    for _, entries in live_entries(io, metadata, head, None, ManifestContent.DELETES):
        for e in entries:
            d, seq = e.data_file, e.sequence_number or 0
            if d.referenced_data_file is not None and d.content_offset is not None:
                if d.referenced_data_file not in live_paths:
                    dangling.append(d)
                continue
            spec = metadata.spec_by_id(d.spec_id or 0)
            everywhere = spec is None or spec.is_unpartitioned
            if d.content == FileContent.EQUALITY_DELETES and everywhere:
                low = overall
            else:
                low = oldest.get((d.spec_id or 0, tuple(d.partition)))
            if low is None:
                dangling.append(d)
            elif d.content == FileContent.POSITION_DELETES and seq < low:
                dangling.append(d)
            elif d.content == FileContent.EQUALITY_DELETES and seq <= low:
                dangling.append(d)
    return dangling


def remove_dangling_deletes(table: TableLike, *, branch: str = MAIN_BRANCH) -> list[DataFile]:
    """Remove the dangling delete files of ``branch`` in one ``replace`` commit; returns them
    (none: no commit)."""
    metadata = table.metadata
    dangling = dangling_delete_files(table, metadata, branch)
    if not dangling:
        return []
    head = metadata.snapshot_by_name(branch)
    action = RewriteFilesAction(
        table.io,
        replaced_delete_files=dangling,
        starting_snapshot_id=head.snapshot_id if head else None,
        branch=branch,
    )
    with Transaction(table) as tx:
        tx.add_action(action)
    return dangling
