"""The files :mod:`~icepark.table.maintenance.rewrite_table_path` writes: each one a copy of a
table's file with every path under a source prefix moved under a target prefix, written into
a staging folder (Java's ``RewriteTablePathUtil``).

:class:`PathMover` says where a path goes: ``new_path`` replaces the prefix (a path that does
not start with it is a :class:`~icepark.errors.ValidationError` naming it, as Java's ``Path
... does not start with ...``), ``staging_path`` is where its rewritten copy is staged (the
path relative to the source prefix, under the staging folder, so that files of the same name
in different folders stay apart). Then, one file each:

* :meth:`PathMover.rewrite_position_deletes`: a position delete file with its ``file_path``
  column moved (Parquet keeps every column as read; Avro and ORC are read as ``file_path``,
  ``pos`` and, when any row has one, ``row``), in its own format; a deletion vector's Puffin
  file with each blob's ``referenced-data-file`` property moved (blob bytes unchanged). The
  new size, and for a Puffin file where each blob now starts, go into the manifests;
* :meth:`PathMover.rewrite_manifest`: a manifest whose entries keep everything (status,
  snapshot id, sequence numbers as stored, metrics, partition, first row id) but the paths:
  the file's, a position delete file's ``referenced_data_file``, its ``file_path`` bounds
  (replaced when lower and upper are one path, dropped otherwise, as Java's
  ``ContentFileUtil.replacePathBounds``), and the new size and blob offsets of the delete
  files rewritten here (a rewritten position delete file's split offsets are dropped, as
  Java does). The manifest keeps its format version, schema, spec and codec;
* :meth:`PathMover.rewrite_manifest_list`: a snapshot's manifest list naming the moved
  manifests, each with the length of its rewritten file (Java keeps the old lengths).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icepark.arrow.reader import read_file_table
from icepark.arrow.rows_file import write_rows
from icepark.errors import IceparkError, ValidationError
from icepark.io import FileIO
from icepark.manifest import (
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestFile,
    read_manifest,
    read_manifest_list,
    read_manifest_metadata,
    write_manifest,
    write_manifest_list,
)
from icepark.puffin.file import PuffinWriter, parse_footer, read_puffin_blob
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import (
    DELETE_FILE_PATH_FIELD_ID,
    DELETE_FILE_POS_FIELD_ID,
    DELETE_FILE_ROW_FIELD_ID,
)
from icepark.spec.partitioning import PartitionSpec, partition_spec_from_json
from icepark.spec.schema import Schema, schema_from_json
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import LongType, NestedField, StringType

__all__ = ["MovedDeletes", "PathMover", "file_name"]

SEPARATOR = "/"
_REFERENCED_DATA_FILE = "referenced-data-file"


def file_name(path: str) -> str:
    """The last part of ``path`` (Java's ``RewriteTablePathUtil.fileName``)."""
    return path.rsplit(SEPARATOR, 1)[-1]


def _with_separator(path: str) -> str:
    return path if path.endswith(SEPARATOR) else path + SEPARATOR


def _combine(base: str, relative: str) -> str:
    return base if not relative else _with_separator(base) + relative


_LOCAL = "file:///"


def _canonical(path: str) -> str:
    """A local path as ``file:/p``, however spelled: ``file:///p``, ``file:/p`` or ``/p``
    name one file (Java's Hadoop catalog writes the first as a table's location and the
    second in the paths of its files; a catalog over a bare folder gives the third)."""
    if path.startswith(_LOCAL):
        return "file:/" + path[len(_LOCAL) :]
    return "file:" + path if path.startswith("/") else path


@dataclass(frozen=True)
class MovedDeletes:
    """A rewritten position delete file: its size, and (Puffin) where each blob that started
    at an old offset now starts and how long it is."""

    size: int
    blobs: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class PathMover:
    """Moves paths from ``source`` to ``target`` and writes rewritten copies of files into
    ``staging`` (a folder ending in ``/``) through ``io``. ``metadata`` (the end version's)
    gives a manifest's spec and schema when its own metadata lacks them, and the table
    properties the delete file writers take."""

    io: FileIO
    source: str
    target: str
    staging: str
    metadata: TableMetadata
    written: list[str] = field(default_factory=list)
    """Every staged file written (or being written), to remove them after a failure."""

    # -- paths -------------------------------------------------------------------------------

    def relative(self, path: str, what: str = "") -> str:
        """``path`` relative to the source prefix ("" for the prefix itself); ``file:/`` and
        ``file:///`` are one."""
        base = _with_separator(_canonical(self.source))
        canonical = _canonical(path)
        if canonical.startswith(base):
            return canonical[len(base) :]
        if _with_separator(canonical) == base:
            return ""
        where = f" ({what})" if what else ""
        raise ValidationError(
            f"Path {path} does not start with {_with_separator(self.source)}{where}"
        )

    def new_path(self, path: str, what: str = "") -> str:
        """``path`` under the target prefix."""
        return _combine(self.target, self.relative(path, what))

    def staging_path(self, path: str, what: str = "") -> str:
        """Where the rewritten copy of ``path`` is staged."""
        return _combine(self.staging, self.relative(path, what))

    def _new_paths(self, paths: pa.ChunkedArray, what: str) -> pa.Array:
        """A column of paths moved: each distinct path once (a position delete file names a
        few data files many times)."""
        encoded = pc.dictionary_encode(paths.combine_chunks())
        moved = [self.new_path(p, what) for p in encoded.dictionary.to_pylist()]
        return pc.take(pa.array(moved, paths.type), encoded.indices)

    # -- position delete files -----------------------------------------------------------------

    def rewrite_position_deletes(self, delete_file: Any) -> MovedDeletes:
        """Stage a copy of a position delete file (a ``DataFile``) with its paths moved."""
        what = f"a row of position delete file {delete_file.file_path}"
        staged = self.staging_path(delete_file.file_path, "a position delete file")
        if delete_file.file_format == FileFormat.PUFFIN:
            return self._rewrite_vectors(delete_file.file_path, staged)
        rows, schema = self._position_rows(delete_file)
        index = _column_index(rows, DELETE_FILE_PATH_FIELD_ID, "file_path", delete_file.file_path)
        moved = self._new_paths(rows.column(index), what)
        rows = rows.set_column(index, rows.schema.field(index), moved)
        self.written.append(staged)
        self.io.delete_quietly(staged)  # a staging folder given again holds an older copy
        size = write_rows(
            self.io, staged, delete_file.file_format, rows, schema, self.metadata.properties
        )
        return MovedDeletes(size)

    def _position_rows(self, delete_file: Any) -> tuple[pa.Table, Schema]:
        """The rows of a position delete file and the Iceberg schema they are written with."""
        if delete_file.file_format == FileFormat.PARQUET:
            with self.io.new_input(delete_file.file_path).open() as stream:
                rows = pq.read_table(stream)
            return rows, _POSITIONS  # (Parquet keeps the Arrow schema's field ids)
        row_type = self.metadata.schema().as_struct()
        schema = Schema(*_POSITIONS.fields, NestedField(DELETE_FILE_ROW_FIELD_ID, "row", row_type))
        rows = read_file_table(self.io, delete_file, schema)
        if rows.column("row").null_count == rows.num_rows:
            return rows.drop_columns(["row"]), _POSITIONS
        return rows, schema

    def _rewrite_vectors(self, location: str, staged: str) -> MovedDeletes:
        """A Puffin file of deletion vectors with each blob's ``referenced-data-file`` moved."""
        data = self.io.new_input(location).read_bytes()
        footer = parse_footer(data, location)
        writer = PuffinWriter(footer.properties)
        blobs: dict[int, tuple[int, int]] = {}
        for blob in footer.blobs:
            if blob.compression_codec is None:
                if blob.offset < 0 or blob.offset + blob.length > len(data):
                    raise ValidationError(
                        f"Invalid Puffin blob in {location}: {blob.length} bytes at "
                        f"{blob.offset} lie outside the file"
                    )
                content = data[blob.offset : blob.offset + blob.length]
            else:
                content = read_puffin_blob(
                    self.io.new_input(location), blob.offset, blob.length, blob.compression_codec
                )
            properties = dict(blob.properties)
            referenced = properties.get(_REFERENCED_DATA_FILE)
            if referenced is not None:
                properties[_REFERENCED_DATA_FILE] = self.new_path(
                    referenced, f"a blob's referenced data file in {location}"
                )
            new = writer.add(
                blob.type,
                content,
                fields=blob.fields,
                snapshot_id=blob.snapshot_id,
                sequence_number=blob.sequence_number,
                compression_codec=blob.compression_codec,
                properties=properties,
            )
            blobs[blob.offset] = (new.offset, new.length)
        out = writer.to_bytes()
        self.written.append(staged)
        self.io.new_output(staged).write_bytes(out, overwrite=True)
        return MovedDeletes(len(out), blobs)

    # -- manifests ---------------------------------------------------------------------------

    def read_entries(self, manifest: ManifestFile) -> list[ManifestEntry]:
        """A manifest's entries as stored (nothing inherited from the manifest list)."""
        return read_manifest(self.io.new_input(manifest.manifest_path))

    def rewrite_manifest(
        self,
        manifest: ManifestFile,
        entries: Sequence[ManifestEntry] | None = None,
        moved_deletes: Mapping[str, MovedDeletes] | None = None,
    ) -> ManifestFile:
        """Stage a copy of ``manifest`` with its entries' paths moved (``entries``: as
        :meth:`read_entries` gives them, read here when None); its manifest-list entry
        with the new path and length, everything else kept."""
        path = manifest.manifest_path
        staged = self.staging_path(path, "a manifest")
        file_metadata = read_manifest_metadata(self.io.new_input(path))
        spec, schema = self._layout(manifest, file_metadata)
        if entries is None:
            entries = self.read_entries(manifest)
        version = int(file_metadata.get("format-version", self.metadata.format_version))
        self.written.append(staged)
        writer = write_manifest(
            self.io.new_output(staged),
            spec,
            schema,
            format_version=version,
            snapshot_id=manifest.added_snapshot_id,
            content=manifest.content,
            codec=file_metadata.get("avro.codec", "deflate"),
            overwrite=True,
        )
        with writer:
            for entry in entries:
                writer.write_entry(self._moved_entry(entry, path, moved_deletes or {}))
        length = writer.to_manifest_file().manifest_length
        return manifest.replace(
            manifest_path=self.new_path(path, "a manifest"), manifest_length=length
        )

    def _layout(
        self, manifest: ManifestFile, file_metadata: Mapping[str, str]
    ) -> tuple[PartitionSpec, Schema]:
        """The spec and schema a manifest was written with (its own metadata's, else the
        table's spec of its id and current schema)."""
        try:
            schema = schema_from_json(json.loads(file_metadata["schema"]))
            parsed = partition_spec_from_json(json.loads(file_metadata["partition-spec"]))
            spec = PartitionSpec(manifest.partition_spec_id, parsed.fields)
            spec.partition_type(schema)
            return spec, schema
        except (IceparkError, KeyError, ValueError, TypeError, RecursionError):
            pass
        found = self.metadata.spec_by_id(manifest.partition_spec_id)
        if found is None:
            raise ValidationError(
                f"Cannot find partition spec {manifest.partition_spec_id} of manifest "
                f"{manifest.manifest_path}"
            )
        return found, self.metadata.schema()

    def _moved_entry(
        self, entry: ManifestEntry, manifest: str, moved_deletes: Mapping[str, MovedDeletes]
    ) -> ManifestEntry:
        f = entry.data_file
        what = f"a file of manifest {manifest}"
        changes: dict[str, Any] = {"file_path": self.new_path(f.file_path, what)}
        if f.content == FileContent.POSITION_DELETES:
            if f.referenced_data_file is not None:
                changes["referenced_data_file"] = self.new_path(f.referenced_data_file, what)
            changes["lower_bounds"], changes["upper_bounds"] = self._path_bounds(f, what)
            moved = moved_deletes.get(f.file_path)
            if moved is not None:  # (a deleted entry's file is not rewritten: kept as it was)
                changes["file_size_in_bytes"] = moved.size
                if f.file_format != FileFormat.PUFFIN:
                    changes["split_offsets"] = None  # the new file's row groups lie elsewhere
                if f.content_offset is not None and moved.blobs:
                    blob = moved.blobs.get(f.content_offset)
                    if blob is None:
                        raise ValidationError(
                            f"No blob at offset {f.content_offset} of {f.file_path} "
                            f"(a deletion vector of manifest {manifest})"
                        )
                    changes["content_offset"], changes["content_size_in_bytes"] = blob
        return entry.replace(data_file=f.replace(**changes))

    def _path_bounds(
        self, f: Any, what: str
    ) -> tuple[dict[int, bytes] | None, dict[int, bytes] | None]:
        """A position delete file's bounds with the ``file_path`` ones moved when they are
        one path, else dropped (Java's ``ContentFileUtil.replacePathBounds``)."""
        lower = None if f.lower_bounds is None else dict(f.lower_bounds)
        upper = None if f.upper_bounds is None else dict(f.upper_bounds)
        low = None if lower is None else lower.pop(DELETE_FILE_PATH_FIELD_ID, None)
        high = None if upper is None else upper.pop(DELETE_FILE_PATH_FIELD_ID, None)
        if low is not None and low == high:
            bound = self.new_path(low.decode("utf-8"), what).encode("utf-8")
            assert lower is not None and upper is not None
            lower[DELETE_FILE_PATH_FIELD_ID] = upper[DELETE_FILE_PATH_FIELD_ID] = bound
        return lower, upper

    # -- manifest lists ----------------------------------------------------------------------

    def read_manifest_list(self, snapshot: Snapshot) -> list[ManifestFile]:
        """The manifests of ``snapshot``, each checked to be under the source prefix."""
        assert snapshot.manifest_list is not None
        manifests = read_manifest_list(self.io.new_input(snapshot.manifest_list))
        what = f"a manifest of snapshot {snapshot.snapshot_id}"
        for manifest in manifests:
            self.relative(manifest.manifest_path, what)
        return manifests

    def rewrite_manifest_list(
        self, snapshot: Snapshot, manifests: Sequence[ManifestFile]
    ) -> tuple[str, str]:
        """Stage ``snapshot``'s manifest list naming ``manifests`` (already moved); its
        staged and target paths."""
        path = snapshot.manifest_list
        assert path is not None
        what = f"the manifest list of snapshot {snapshot.snapshot_id}"
        staged = self.staging_path(path, what)
        file_metadata = read_manifest_metadata(self.io.new_input(path))
        version = int(file_metadata.get("format-version", self.metadata.format_version))
        first_row_id = snapshot.first_row_id
        if first_row_id is None and "first-row-id" in file_metadata:
            first_row_id = int(file_metadata["first-row-id"])
        self.written.append(staged)
        write_manifest_list(
            self.io.new_output(staged),
            manifests,
            format_version=version,
            snapshot_id=snapshot.snapshot_id,
            parent_snapshot_id=snapshot.parent_snapshot_id,
            sequence_number=snapshot.sequence_number,
            first_row_id=first_row_id if version >= 3 else None,
            codec=file_metadata.get("avro.codec", "deflate"),
            overwrite=True,
        )
        return staged, self.new_path(path, what)


_POSITIONS = Schema(
    NestedField(DELETE_FILE_PATH_FIELD_ID, "file_path", StringType(), required=True),
    NestedField(DELETE_FILE_POS_FIELD_ID, "pos", LongType(), required=True),
)


def _column_index(rows: pa.Table, field_id: int, name: str, location: str) -> int:
    """The column of ``rows`` with Iceberg field id ``field_id`` (else named ``name``)."""
    wanted = str(field_id).encode()
    for i, f in enumerate(rows.schema):
        if (f.metadata or {}).get(b"PARQUET:field_id") == wanted:
            return i
    if name in rows.column_names:
        return rows.column_names.index(name)
    raise ValidationError(f"Position delete file {location} has no {name!r} column")
