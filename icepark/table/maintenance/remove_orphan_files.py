"""Removing orphan files: files under a table's location that none of its metadata references
(Java's ``DeleteOrphanFilesSparkAction`` and the ``remove_orphan_files`` procedure).

How it flows:

1. **Check the arguments** (:func:`orphan_options`): ``older_than`` (default: 3 days ago)
   must not be in the future, and must be at least 24 hours ago unless ``allow_recent``
   (a write in flight has files no metadata references yet: they look orphaned); ``location``
   (default: the table's) must be inside the table location; ``gc.enabled`` must be true.
2. **List** the location recursively through the table's FileIO (:func:`list_candidates`):
   files last modified before ``older_than``, skipping hidden paths as Java's
   ``FileSystemWalker`` does (a file or folder below the location whose name starts with
   ``_`` or ``.``, unless it is a partition folder ``<field>=...`` of a partition field whose
   name starts so).
3. **Compare** with every file the table references
   (:func:`icepark.planning.reachable.referenced_locations` with the metadata files: metadata
   JSON files current and logged, the version hint, manifest lists, manifests, data and delete
   files of every snapshot, statistics files), matched against the listing
   (:class:`ListedFiles`, indexed by path) as they stream by, so that a million referenced
   files are never held at once. Paths are compared as Java's ``FileURI``: by
   path, with schemes and authorities mapped through ``equal_schemes`` (``s3a`` and ``s3n``
   are ``s3`` by default) and ``equal_authorities``; a local path without a scheme is
   ``file``. A listed file whose path is referenced only under another scheme or authority
   is a *prefix mismatch*: ``prefix_mismatch_mode="error"`` (the default) refuses to go on
   and names the conflicting schemes and authorities, ``"ignore"`` keeps the file,
   ``"delete"`` deletes it.
4. **Delete** the orphans in parallel (:mod:`icepark.table.maintenance.file_cleanup`; a failed
   delete is logged and reported, never raised), or, with ``dry_run``, only report them.

:mod:`icepark.spark.maintenance.remove_orphan_files` does steps 2 and 3 on Spark for tables
with millions of files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.io.fileio import FileEntry
from icepark.io.pyarrow_fileio import is_partial_write
from icepark.planning.reachable import referenced_locations
from icepark.spec import properties as P
from icepark.table.interface import TableLike
from icepark.table.maintenance.file_cleanup import delete_files
from icepark.table.scan import to_epoch_ms

__all__ = [
    "DEFAULT_OLDER_THAN_MS",
    "EQUAL_SCHEMES_DEFAULT",
    "MIN_OLDER_THAN_MS",
    "FileURI",
    "ListedFiles",
    "OrphanOptions",
    "PrefixMismatchError",
    "PrefixMismatchMode",
    "RemoveOrphanFilesResult",
    "find_orphans",
    "hidden_path_filter",
    "iter_candidates",
    "list_candidates",
    "orphan_options",
    "remove_orphan_files",
    "to_file_uri",
]

PrefixMismatchMode = Literal["error", "ignore", "delete"]
_MODES = ("error", "ignore", "delete")

EQUAL_SCHEMES_DEFAULT: Mapping[str, str] = {"s3n": "s3", "s3a": "s3"}
DEFAULT_OLDER_THAN_MS = 3 * 24 * 3600 * 1000
MIN_OLDER_THAN_MS = 24 * 3600 * 1000

Progress = Callable[[int, int], None]


class PrefixMismatchError(ValidationError):
    """Listed files match referenced ones except for their scheme or authority."""


# -- file URIs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileURI:
    """A location split as Java's ``FileURI``: scheme and authority (after the equivalences)
    and path; ``uri`` is the location as given."""

    scheme: str | None
    authority: str | None
    path: str
    uri: str


def _flatten(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """``{"s3a,s3n": "s3"}`` -> ``{"s3a": "s3", "s3n": "s3"}`` (as Java's ``flattenMap``)."""
    out: dict[str, str] = {}
    for keys, value in (mapping or {}).items():
        for key in keys.split(","):
            if key.strip():
                out[key.strip()] = value.strip()
    return out


def _collapse(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    return path


def to_file_uri(
    location: str,
    equal_schemes: Mapping[str, str] = EQUAL_SCHEMES_DEFAULT,
    equal_authorities: Mapping[str, str] | None = None,
) -> FileURI:
    """``location`` as a :class:`FileURI`; a path without a scheme is a local ``file``."""
    if location[:1] == "/" and "//" not in location:  # a plain local path (most listed ones)
        return FileURI(equal_schemes.get("file", "file"), None, location, location)
    head, sep, rest = location.partition(":")
    if sep and len(head) > 1 and head.replace("+", "").replace("-", "").replace(".", "").isalnum():
        scheme: str | None = head.lower()
    else:
        scheme, rest = "file", location
    authority: str | None = None
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        rest = slash + tail
    authority = authority or None
    if scheme is not None:
        scheme = equal_schemes.get(scheme, scheme)
    if authority is not None and equal_authorities:
        authority = equal_authorities.get(authority, authority)
    return FileURI(scheme, authority, _collapse(rest) or "/", location)


def _component_matches(valid: str | None, actual: str | None) -> bool:
    return not valid or (actual is not None and valid.lower() == actual.lower())


def _matches(valid: FileURI, actual: FileURI) -> bool:
    return _component_matches(valid.scheme, actual.scheme) and _component_matches(
        valid.authority, actual.authority
    )


# -- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrphanOptions:
    """The checked arguments of an orphan removal."""

    older_than_ms: int
    location: str
    equal_schemes: dict[str, str]
    equal_authorities: dict[str, str]
    prefix_mismatch_mode: PrefixMismatchMode
    partition_names: frozenset[str]


def _inside(location: str, root: str) -> bool:
    loc, top = to_file_uri(location), to_file_uri(root)
    if not _matches(top, loc) and not _matches(loc, top):
        return False
    parent = top.path.rstrip("/")
    return loc.path.rstrip("/") == parent or loc.path.startswith(parent + "/")


def orphan_options(
    table: TableLike,
    older_than: int | dt.datetime | dt.date | None = None,
    location: str | None = None,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    allow_recent: bool = False,
    now_ms: int | None = None,
) -> OrphanOptions:
    """Check the arguments of an orphan removal (see the module docstring)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if not P.GC_ENABLED.get(table.metadata.properties):
        raise ValidationError(
            f"Cannot delete orphan files of table {table.name}: GC is disabled "
            f"({P.GC_ENABLED.name}=false; deleting files may corrupt other tables)"
        )
    cutoff = now - DEFAULT_OLDER_THAN_MS if older_than is None else to_epoch_ms(older_than)
    shown = dt.datetime.fromtimestamp(cutoff / 1000, dt.UTC).isoformat()
    if cutoff > now:
        raise ValidationError(
            f"Cannot remove orphan files of table {table.name}: older_than {shown} is in the future"
        )
    if now - cutoff < MIN_OLDER_THAN_MS and not allow_recent:
        raise ValidationError(
            f"Cannot remove orphan files of table {table.name} with older_than {shown}, less "
            "than 24 hours ago: files of writes in progress would look orphaned (pass "
            "allow_recent=True if no write can be running)"
        )
    mode = str(prefix_mismatch_mode).lower()
    if mode not in _MODES:
        raise ValidationError(
            f"Invalid prefix_mismatch_mode {prefix_mismatch_mode!r}: use one of {', '.join(_MODES)}"
        )
    root = table.metadata.location
    where = root if location is None else location
    if not _inside(where, root):
        raise ValidationError(
            f"Cannot remove orphan files in {where}: it is outside the location of table "
            f"{table.name} ({root})"
        )
    names = frozenset(
        f"{f.name}="
        for spec in table.metadata.partition_specs
        for f in spec.fields
        if f.name.startswith(("_", "."))
    )
    return OrphanOptions(
        cutoff,
        where.rstrip("/"),
        {**EQUAL_SCHEMES_DEFAULT, **_flatten(equal_schemes)},
        _flatten(equal_authorities),
        mode,  # type: ignore[arg-type]
        names,
    )


# -- listing ---------------------------------------------------------------------------------


def hidden_path_filter(partition_names: Iterable[str]) -> Callable[[str], bool]:
    """A predicate on a path relative to the listed folder: True when hidden (a component
    starting with ``_`` or ``.`` that is not a partition folder of such a field). The
    temporary file of a local write that never finished (its writer was killed) is not
    hidden: it is an orphan like any other file nothing references."""
    names = tuple(partition_names)

    def hidden(relative: str) -> bool:
        parts = relative.split("/")
        for index, part in enumerate(parts):
            if part.startswith(("_", ".")) and not (names and part.startswith(names)):
                if index == len(parts) - 1 and is_partial_write(part):
                    continue
                return True
        return False

    return hidden


def iter_candidates(
    io: FileIO, location: str, older_than_ms: int, partition_names: Iterable[str] = ()
) -> Iterator[FileEntry]:
    """Files under ``location`` last modified before ``older_than_ms``, hidden ones left out,
    in no set order, as the listing goes (:meth:`~icepark.io.FileIO.iter_prefix`)."""
    hidden = hidden_path_filter(partition_names)
    prefix = location.rstrip("/") + "/"
    root = to_file_uri(prefix).path
    for entry in io.iter_prefix(location):
        path = to_file_uri(entry.location).path
        relative = path[len(root) :] if path.startswith(root) else path
        if hidden(relative):
            continue
        if entry.last_modified_ms is None or entry.last_modified_ms < older_than_ms:
            yield entry


def list_candidates(
    io: FileIO, location: str, older_than_ms: int, partition_names: Iterable[str] = ()
) -> list[FileEntry]:
    """:func:`iter_candidates` as a list, by location."""
    found = list(iter_candidates(io, location, older_than_ms, partition_names))
    return sorted(found, key=lambda e: e.location)


# -- comparing -------------------------------------------------------------------------------


def _plain(location: str) -> bool:
    """A local path without a scheme: its own path (nothing to parse)."""
    return location[:1] == "/" and "//" not in location


class ListedFiles:
    """Listed files (locations and sizes) indexed by path, matched against the referenced
    files as they stream by (:meth:`reference`), so that the comparison never holds the
    referenced files: a table of a million files keeps its listing in memory, not a second
    million paths. :meth:`orphans` then gives the listed files nothing matched, with the
    prefix mismatches of the module docstring handled as ``options`` says."""

    def __init__(self, options: OrphanOptions) -> None:
        self._options = options
        self.locations: list[str] = []
        self.sizes = array("q")
        self._by_path: dict[str, int | list[int]] = {}
        self._matched = bytearray()
        self._mismatched: dict[int, set[FileURI]] = {}

    def _uri(self, location: str) -> FileURI:
        o = self._options
        return to_file_uri(location, o.equal_schemes, o.equal_authorities)

    def add(self, location: str, size: int = 0) -> None:
        """A listed file."""
        index = len(self.locations)
        self.locations.append(location)
        self.sizes.append(size)
        self._matched.append(0)
        path = location if _plain(location) else self._uri(location).path
        held = self._by_path.get(path)
        if held is None:
            self._by_path[path] = index
        elif isinstance(held, list):
            held.append(index)
        else:
            self._by_path[path] = [held, index]

    def reference(self, location: str) -> None:
        """A referenced file: the listed files it matches are not orphans."""
        held = self._by_path.get(location) if _plain(location) else None
        if held is None:
            self.reference_uri(self._uri(location))
            return
        for index in held if isinstance(held, list) else (held,):
            if self.locations[index] == location:
                self._matched[index] = 1
                self._mismatched.pop(index, None)
            elif not self._matched[index]:
                self.reference_uri(self._uri(location))
                return

    def reference_uri(self, valid: FileURI) -> None:
        """:meth:`reference` for a location already parsed (``valid.uri``)."""
        held = self._by_path.get(valid.path)
        if held is None:
            return
        for index in held if isinstance(held, list) else (held,):
            if self._matched[index]:
                continue
            listed = self.locations[index]
            if listed == valid.uri or _matches(valid, self._uri(listed)):
                self._matched[index] = 1
                self._mismatched.pop(index, None)
            else:
                self._mismatched.setdefault(index, set()).add(valid)

    def orphans(self) -> list[str]:
        """The listed locations nothing matched, sorted; raises
        :class:`PrefixMismatchError` in ``error`` mode when a referenced file has the path
        of a listed one but not its scheme or authority."""
        mode = self._options.prefix_mismatch_mode
        orphans: list[str] = []
        conflicts: set[tuple[str, str]] = set()
        unmatched = self._matched.translate(_UNMATCHED)
        start = unmatched.find(1)
        while start >= 0:
            location = self.locations[start]
            candidates = self._mismatched.get(start)
            if not candidates or mode == "delete":
                orphans.append(location)
            else:
                uri = self._uri(location)
                for v in sorted(candidates, key=lambda c: c.uri):
                    if not _component_matches(v.scheme, uri.scheme):
                        conflicts.add((str(v.scheme), str(uri.scheme)))
                    if not _component_matches(v.authority, uri.authority):
                        conflicts.add((str(v.authority), str(uri.authority)))
            start = unmatched.find(1, start + 1)
        if conflicts and mode == "error":
            raise PrefixMismatchError(
                "Unable to determine whether certain files are orphan: metadata references "
                "files that match listed files except for authority/scheme. Say which are "
                "equal with equal_schemes and equal_authorities, or set prefix_mismatch_mode "
                "to 'ignore' (keep them) or 'delete' (only if they are certainly different). "
                "Conflicting (referenced, listed) authorities/schemes: "
                + ", ".join(f"({a}, {b})" for a, b in sorted(conflicts))
            )
        return sorted(orphans)

    def sizes_of(self, locations: Iterable[str]) -> dict[str, int]:
        """The listed sizes of ``locations`` (listed ones)."""
        wanted = set(locations)
        return {
            location: size
            for location, size in zip(self.locations, self.sizes, strict=True)
            if location in wanted
        }


_UNMATCHED = bytes([1] + [0] * 255)  # bytes.translate: 0 (unmatched) -> 1, else 0


def find_orphans(
    actual: Iterable[str],
    valid: Mapping[str, Sequence[FileURI]],
    options: OrphanOptions,
) -> list[str]:
    """The listed locations no valid file (by path) matches (see prefix mismatches in the
    module docstring); raises :class:`PrefixMismatchError` in ``error`` mode."""
    listed = ListedFiles(options)
    for location in actual:
        listed.add(location)
    for uris in valid.values():
        for uri in uris:
            listed.reference_uri(uri)
    return listed.orphans()


# -- the operation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoveOrphanFilesResult(Sequence[str]):
    """The orphans found; as a sequence, the paths deleted (on a dry run, the orphans)."""

    orphan_file_locations: tuple[str, ...]
    deleted: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)
    orphan_bytes: int = 0
    dry_run: bool = False

    @property
    def _paths(self) -> tuple[str, ...]:
        return self.orphan_file_locations if self.dry_run else self.deleted

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._paths[index]

    def __len__(self) -> int:
        return len(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def to_dict(self) -> dict[str, object]:
        return {
            "orphan_file_locations": list(self.orphan_file_locations),
            "deleted": list(self.deleted),
            "failed": dict(self.failed),
            "orphan_bytes": self.orphan_bytes,
            "dry_run": self.dry_run,
        }


def delete_orphans(
    table: TableLike,
    orphans: Sequence[str],
    sizes: Mapping[str, int],
    dry_run: bool,
    progress: Progress | None = None,
) -> RemoveOrphanFilesResult:
    """Delete ``orphans`` (unless ``dry_run``) and report."""
    total_bytes = sum(sizes.get(p, 0) for p in orphans)
    if dry_run or not orphans:
        return RemoveOrphanFilesResult(tuple(orphans), (), {}, total_bytes, dry_run)
    counter = itertools.count(1)
    lock = threading.Lock()

    def tick(path: str, ok: bool) -> None:
        if progress is not None:
            with lock:
                progress(next(counter), len(orphans))

    outcome = delete_files(table.io, orphans, kind="orphan", on_done=tick)
    deleted = set(outcome.deleted)
    return RemoveOrphanFilesResult(
        tuple(orphans),
        tuple(p for p in orphans if p in deleted),
        outcome.failed,
        total_bytes,
        False,
    )


def remove_orphan_files(
    table: TableLike,
    older_than: int | dt.datetime | dt.date | None = None,
    location: str | None = None,
    dry_run: bool = False,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    *,
    allow_recent: bool = False,
    progress: Progress | None = None,
) -> RemoveOrphanFilesResult:
    """Delete the files under the table's location (or ``location`` inside it) that no
    metadata file, snapshot, manifest or ref references and that are older than
    ``older_than`` (default: 3 days ago; less than 24 hours ago is refused unless
    ``allow_recent``, as an in-flight write's files look orphaned). ``equal_schemes`` and
    ``equal_authorities`` extend Java's equivalences (``s3a``/``s3n`` = ``s3``);
    ``prefix_mismatch_mode`` is ``error``, ``ignore`` or ``delete``. ``dry_run`` only lists
    them. On Spark, ``icepark.spark.remove_orphan_files`` lists in parallel. See the module
    docstring for how it flows."""
    options = orphan_options(
        table,
        older_than,
        location,
        equal_schemes,
        equal_authorities,
        prefix_mismatch_mode,
        allow_recent,
    )
    listed = ListedFiles(options)
    for entry in iter_candidates(
        table.io, options.location, options.older_than_ms, options.partition_names
    ):
        listed.add(entry.location, entry.size)
    # the metadata as it is after the listing (a commit in between may reference a listed
    # file), not as it was when the table was loaded
    table.refresh()
    md = table.metadata
    for location in referenced_locations(table.io, md, metadata_location=table.metadata_location):
        listed.reference(location)
    orphans = listed.orphans()
    sizes = listed.sizes_of(orphans)
    del listed
    return delete_orphans(table, orphans, sizes, dry_run, progress)
