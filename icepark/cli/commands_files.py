"""``icepark metadata`` and ``icepark avro``: look inside single files, without a catalog.

``avro`` prints every record of any Avro container file (manifest list, manifest, ...) as one
JSON object a line, with logical types off so values are what the file holds (timestamps as
longs, decimals and UUIDs as bytes). By default union values are given bare and ``bytes`` /
``fixed`` values as lowercase hex strings. ``--avro-json`` prints Avro's own JSON encoding
instead, exactly as ``avro-tools tojson`` does: union values wrapped as ``{"type": value}`` and
bytes as strings of code points U+0000-U+00FF (``\\u00XX`` escapes in the JSON).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click
import fastavro

from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import (
    emit_json,
    iso_utc,
    json_option,
    make_console,
    one_line,
    print_key_values,
)
from icepark.errors import (
    IceparkError,
    InvalidAvroFileError,
    InvalidMetadataError,
    NoSuchFileError,
)
from icepark.io import load_file_io
from icepark.spec.metadata import TableMetadata, table_metadata_from_json

__all__ = ["metadata_command", "avro_command", "metadata_summary", "strip_logical_types"]


def _fail(path: str, problem: str) -> click.ClickException:
    message = one_line(problem)
    if message.startswith(f"{path}: "):
        message = message[len(path) + 2 :]
    return click.ClickException(f"{path}: {message}")


def _read_bytes(cli: CliContext, path: str) -> bytes:
    try:
        return load_file_io(cli.io_properties(path), path).new_input(path).read_bytes()
    except NoSuchFileError as exc:
        detail = "not a file" if "not a file" in str(exc) else "no such file"
        raise _fail(path, detail) from exc
    except IceparkError as exc:
        raise _fail(path, f"cannot read the file: {exc}") from exc
    except OSError as exc:
        raise _fail(path, f"cannot read the file: {exc.strerror or exc}") from exc


# -- metadata ------------------------------------------------------------------------------------


def metadata_summary(md: TableMetadata) -> dict[str, Any]:
    """The headline facts of a table metadata file, as JSON-ready values."""
    schema = md.schema()
    spec = md.spec()
    order = md.sort_order()
    return {
        "format-version": md.format_version,
        "table-uuid": md.table_uuid,
        "location": md.location,
        "last-updated-ms": md.last_updated_ms,
        "last-updated": iso_utc(md.last_updated_ms),
        "last-sequence-number": md.last_sequence_number,
        "last-column-id": md.last_column_id,
        "current-schema-id": md.current_schema_id,
        "current-schema-fields": len(schema.fields),
        "schemas": len(md.schemas),
        "default-spec-id": md.default_spec_id,
        "default-spec": str(spec),
        "partition-specs": len(md.partition_specs),
        "last-partition-id": md.last_partition_id,
        "default-sort-order-id": md.default_sort_order_id,
        "default-sort-order": str(order),
        "sort-orders": len(md.sort_orders),
        "current-snapshot-id": md.current_snapshot_id,
        "snapshots": len(md.snapshots),
        "refs": {
            name: {"type": ref.type.value, "snapshot-id": ref.snapshot_id}
            for name, ref in md.refs.items()
        },
        "properties": len(md.properties),
        "snapshot-log": len(md.snapshot_log),
        "metadata-log": len(md.metadata_log),
        "statistics": len(md.statistics),
        "partition-statistics": len(md.partition_statistics),
        "next-row-id": md.next_row_id,
    }


@click.command("metadata")
@click.argument("path")
@json_option
@pass_cli
def metadata_command(cli: CliContext, path: str, json_output: bool) -> None:
    """Validate and summarise a table metadata file (a local path or s3://...).

    Exits with status 1 and a one-line message on stderr when the file is not valid; with
    --json a summary (``"valid": false`` and the ``error``) is printed on stdout as well.
    """
    as_json = cli.wants_json(json_output)
    try:
        md = table_metadata_from_json(_read_bytes(cli, path))
        summary = metadata_summary(md)
    except click.ClickException as exc:
        if as_json:
            emit_json({"path": path, "valid": False, "error": exc.message})
        raise
    except (IceparkError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # Anything the parser lets through is still a broken file, not a crash of the tool.
        problem = (
            str(exc) if isinstance(exc, InvalidMetadataError) else f"{type(exc).__name__}: {exc}"
        )
        failure = _fail(path, f"invalid table metadata: {problem}")
        if as_json:
            emit_json({"path": path, "valid": False, "error": failure.message})
        raise failure from exc
    if as_json:
        emit_json({"path": path, "valid": True, **summary})
        return
    console = make_console()
    console.print(f"{path}: valid table metadata (format version {md.format_version})")
    print_key_values(console, [(k, v) for k, v in summary.items() if k != "refs"])
    for name, ref in sorted(md.refs.items()):
        console.print(f"  ref {name}: {ref.type.value} -> {ref.snapshot_id}")


# -- avro ----------------------------------------------------------------------------------------

_AVRO_MAGIC = b"Obj\x01"
# The container file header, from the Avro specification.
_HEADER_SCHEMA = {
    "type": "record",
    "name": "org.apache.avro.file.Header",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
    ],
}


def strip_logical_types(schema: Any) -> Any:
    """The Avro schema with every ``logicalType`` removed, so values read as their raw type."""
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _without_logical_types(data: bytes) -> tuple[bytes, dict[str, bytes]]:
    """The same container file with ``logicalType`` stripped from the schema in its header.

    fastavro converts logical types by the writer's schema whatever the reader's schema says,
    so the header is rewritten instead; the data blocks are untouched. Also returns the header
    metadata as it was.
    """
    if data[:4] != _AVRO_MAGIC:
        raise InvalidAvroFileError("not an Avro container file (no 'Obj\\x01' magic at the start)")
    source = io.BytesIO(data)
    header: Any = fastavro.schemaless_reader(source, _HEADER_SCHEMA, None)
    meta: dict[str, bytes] = dict(header["meta"])
    schema = strip_logical_types(json.loads(meta["avro.schema"]))
    new_meta = {**meta, "avro.schema": json.dumps(schema).encode("utf-8")}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _HEADER_SCHEMA, {**header, "meta": new_meta})
    return out.getvalue() + data[source.tell() :], meta


def _header_to_dict(meta: dict[str, bytes]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in meta.items():
        text = raw.decode("utf-8", "replace")
        if text[:1] in ("{", "["):
            try:
                out[key] = json.loads(text)
                continue
            except ValueError:
                pass
        out[key] = text
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _Counted:
    """Iterates over records and counts them, to say where a broken file broke."""

    def __init__(self, records: Iterable[Any]) -> None:
        self._records = records
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for record in self._records:
            yield record
            self.count += 1


@click.command("avro")
@click.argument("path")
@click.option(
    "--avro-json", is_flag=True, help="Avro's JSON encoding, as avro-tools tojson prints it."
)
@click.option("--header", is_flag=True, help="Print the header metadata (schema, ...) instead.")
@json_option
@pass_cli
def avro_command(
    cli: CliContext, path: str, avro_json: bool, header: bool, json_output: bool
) -> None:
    """Print the records of an Avro file (manifest list, manifest, ...) as JSON lines.

    Logical types are off: values are the raw Avro values. Bytes and fixed values are
    lowercase hex strings, unless --avro-json asks for Avro's own JSON encoding (unions
    tagged, bytes as \\u00XX strings). The output is JSON with or without --json.
    """
    data = _read_bytes(cli, path)
    records = _Counted(())
    try:
        raw, meta = _without_logical_types(data)
        if header:
            emit_json(_header_to_dict(meta))
            return
        reader = fastavro.reader(io.BytesIO(raw))
        records = _Counted(reader)
        if avro_json:
            # json_writer puts a newline between records, none after the last one.
            out = sys.stdout
            fastavro.json_writer(out, reader.writer_schema, records)
            if records.count:
                out.write("\n")
        else:
            for record in records:
                click.echo(json.dumps(_plain(record)))
    except Exception as exc:  # fastavro raises many types for a broken file
        where = f" after {records.count} records" if records.count else ""
        reason = one_line(str(exc)) or type(exc).__name__
        raise _fail(path, f"not a valid Avro file{where}: {reason}") from exc
