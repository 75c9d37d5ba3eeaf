"""``icepark files TABLE``: the live data and delete files of a snapshot, with their format.

One row per file of the current snapshot (or ``--snapshot`` / ``--ref``): content (data,
position deletes, equality deletes), file format (PARQUET, AVRO, ORC, PUFFIN), partition,
record count, size and path, as the reference engine's ``files`` metadata table lists them.
``--json`` prints the list of files as JSON objects.
"""

from __future__ import annotations

from typing import Any

import click

from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, emit_json, json_option, make_console, new_table
from icepark.errors import ValidationError
from icepark.planning.walk import live_entries
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.metadata import TableMetadata

__all__ = ["files_command", "file_rows"]

_CONTENT = {
    FileContent.DATA: "data",
    FileContent.POSITION_DELETES: "position deletes",
    FileContent.EQUALITY_DELETES: "equality deletes",
}


def _partition(metadata: TableMetadata, f: DataFile) -> str:
    spec = metadata.spec_by_id(f.spec_id)
    if spec is None or spec.is_unpartitioned:
        return ""
    return spec.partition_to_path(f.partition, metadata.schema())


def file_rows(
    metadata: TableMetadata, io: Any, snapshot_id: int | None = None, ref: str | None = None
) -> list[dict[str, Any]]:
    """The live files of a snapshot (the current one by default) as JSON-ready rows."""
    if snapshot_id is not None and ref is not None:
        raise ValidationError("Give a snapshot id or a ref, not both")
    if ref is not None:
        snapshot = metadata.snapshot_by_name(ref)
        if snapshot is None:
            raise ValidationError(f"No such ref: {ref!r}")
    elif snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise ValidationError(f"No such snapshot: {snapshot_id}")
    else:
        snapshot = metadata.current_snapshot()
    rows = []
    for _, entries in live_entries(io, metadata, snapshot):
        for e in entries:
            f = e.data_file
            rows.append(
                {
                    "content": _CONTENT.get(f.content, str(f.content)),
                    "file_format": f.file_format.value,
                    "spec_id": f.spec_id,
                    "partition": _partition(metadata, f),
                    "record_count": f.record_count,
                    "file_size_in_bytes": f.file_size_in_bytes,
                    "file_path": f.file_path,
                }
            )
    return rows


@click.command("files")
@click.argument("table_name", metavar="TABLE")
@click.option("--snapshot", "snapshot_id", type=int, help="A snapshot id (default: current).")
@click.option("--ref", help="A branch or tag name.")
@json_option
@pass_cli
def files_command(
    cli: CliContext,
    table_name: str,
    snapshot_id: int | None,
    ref: str | None,
    json_output: bool,
) -> None:
    """List a table's live data and delete files with their format (PARQUET, AVRO, ORC,
    PUFFIN), partition, record count and size.

    TABLE is a catalog identifier such as db.t, or the path of a *.metadata.json file.
    """
    table = open_table(cli, table_name)
    rows = file_rows(table.metadata, table.io, snapshot_id, ref)
    if cli.wants_json(json_output):
        emit_json(rows)
        return
    console = make_console()
    if not rows:
        console.print(f"{table_name}: no files")
        return
    grid = new_table("content", "format", "partition", "records", "bytes", "path")
    for r in rows:
        add_row(
            grid,
            r["content"],
            r["file_format"],
            r["partition"],
            r["record_count"],
            r["file_size_in_bytes"],
            r["file_path"],
        )
    console.print(grid)
