"""``icepark metadata`` and ``icepark avro``: look inside single files, without a catalog.

``avro`` prints every record of any Avro container file (manifest list, manifest, data or
delete file) as one JSON object a line, with logical types off so values are what the file
holds (timestamps as longs, decimals and UUIDs as bytes). The file is read block by block with
:mod:`icepark.avro.blocks` (any codec icepark reads, memory bounded by a block; a corrupt block
is named by its offset) and each record decoded by fastavro with the writer schema's logical
types stripped (:func:`icepark.avro.schema.strip_logical_types`). By default union values
are given bare and ``bytes`` / ``fixed`` values as lowercase hex strings. ``--avro-json``
prints Avro's own JSON encoding instead, exactly as ``avro-tools tojson`` does: union values
wrapped as ``{"type": value}`` and bytes as strings of code points U+0000-U+00FF
(``\\u00XX`` escapes in the JSON).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click
import fastavro

from icepark.avro.blocks import AvroHeader, iter_avro_blocks, read_avro_header
from icepark.avro.schema import strip_logical_types
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import (
    emit_json,
    iso_utc,
    json_option,
    make_console,
    one_line,
    print_key_values,
)
from icepark.errors import IceparkError, InvalidMetadataError, NoSuchFileError
from icepark.io import load_file_io
from icepark.spec.metadata import TableMetadata, table_metadata_from_json

__all__ = ["metadata_command", "avro_command", "metadata_summary"]


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


def _open(cli: CliContext, path: str) -> Any:
    try:
        return load_file_io(cli.io_properties(path), path).new_input(path).open()
    except NoSuchFileError as exc:
        detail = "not a file" if "not a file" in str(exc) else "no such file"
        raise _fail(path, detail) from exc
    except IceparkError as exc:
        raise _fail(path, f"cannot read the file: {exc}") from exc
    except OSError as exc:
        raise _fail(path, f"cannot read the file: {exc.strerror or exc}") from exc


def _header_to_dict(meta: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, text in meta.items():
        if text[:1] in ("{", "["):
            try:
                out[key] = json.loads(text)
                continue
            except ValueError:
                pass
        out[key] = text
    return out


def _records(header: AvroHeader, stream: Any) -> Iterator[Any]:
    """The records of an Avro file, block by block, with logical types left raw."""
    schema = fastavro.parse_schema(strip_logical_types(header.writer_schema))
    for _, block in iter_avro_blocks(header, stream):
        data = io.BytesIO(block.data)
        for _ in range(block.count):
            yield fastavro.schemaless_reader(data, schema, None)


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
    """Print the records of an Avro file (manifest list, manifest, data file) as JSON lines.

    Logical types are off: values are the raw Avro values. Bytes and fixed values are
    lowercase hex strings, unless --avro-json asks for Avro's own JSON encoding (unions
    tagged, bytes as \\u00XX strings). The output is JSON with or without --json.
    """
    stream = _open(cli, path)
    records = _Counted(())
    try:
        avro_header = read_avro_header(path, stream)
        if header:
            emit_json(_header_to_dict(avro_header.metadata))
            return
        records = _Counted(_records(avro_header, stream))
        if avro_json:
            # json_writer puts a newline between records, none after the last one.
            out = sys.stdout
            schema = strip_logical_types(avro_header.writer_schema)
            fastavro.json_writer(out, schema, records)
            if records.count:
                out.write("\n")
        else:
            for record in records:
                click.echo(json.dumps(_plain(record)))
    except Exception as exc:  # fastavro raises many types for a broken file
        where = f" after {records.count} records" if records.count else ""
        reason = one_line(str(exc)) or type(exc).__name__
        reason = reason.removeprefix(f"Cannot read Avro file {path}: ")
        raise _fail(path, f"not a valid Avro file{where}: {reason}") from exc
    finally:
        stream.close()
