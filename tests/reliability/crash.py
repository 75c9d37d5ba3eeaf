"""The crash campaign's harness: run one operation on a table in a child process, SIGKILL the
child at a random instant or at a named step, then judge what is left.

A child is forked from a forkserver that has icepark and pyarrow imported already (a fork of
this process could inherit thread pools without their threads), opens the catalog afresh and
runs the operation. Named steps are kill points installed in the child around the real code
path (nothing else changes):

* ``files-written``: the data files are written, the first manifest is about to be published;
* ``manifest-list``: a manifest list was just published;
* ``metadata-write``: a metadata file is written to its temporary name, not yet published;
* ``catalog-swap``: the catalog pointer was just swapped (the commit landed; nothing after it
  ran: no cleanup, no old-metadata deletion);
* ``deletes``: the first file deletion was done, the second is about to be.

After the kill, :func:`judge` checks what a crash must leave: the table loads; its rows are
exactly the rows before or after the operation; every file a snapshot, manifest or metadata
file references exists; ``diagnose`` (the doctor) sees the killed run's leftovers as orphan
candidates only, and ``remove_orphan_files`` removes exactly them and nothing the table
needs; running the operation again succeeds.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq

from icepark.catalog import Catalog, SqlCatalog, load_catalog
from icepark.planning.reachable import referenced_files
from icepark.table import Table

STEPS = ("files-written", "manifest-list", "metadata-write", "catalog-swap", "deletes")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("v", pa.float64()),
    ]
)
KINDS = ("a", "b", "c", "d")


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "kind": [KINDS[i % len(KINDS)] for i in ids],
            "v": [i * 0.5 for i in ids],
        },
        schema=SCHEMA,
    )


# -- catalogs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogSpec:
    """How a child opens the same catalog: ``kind`` is sqlite, filesystem or postgres."""

    kind: str
    warehouse: str
    uri: str = ""

    def open(self) -> Catalog:
        if self.kind == "filesystem":
            return load_catalog("crash", type="filesystem", warehouse=self.warehouse)
        return SqlCatalog("crash", uri=self.uri, warehouse=self.warehouse)


# -- operations --------------------------------------------------------------------------------


def _state(table: Table) -> list[tuple[Any, ...]]:
    """The rows by their first three columns (``v`` may be renamed; added columns are null)."""
    out = table.scan().to_arrow()
    cols = [out.column(i).to_pylist() for i in range(3)]
    return sorted(zip(*cols, strict=True))


@dataclass(frozen=True)
class Op:
    """One operation: ``prepare`` builds the table state before it (in the parent), ``run``
    does it (in the child), ``after`` gives the rows it must leave from the rows before (the
    same rows for maintenance and metadata-only changes)."""

    name: str
    run: Callable[[Table], Any]
    after: Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]] = lambda before: before
    properties: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Table, Path], None] | None = None
    steps: tuple[str, ...] = STEPS
    # False when running it again after it landed must be refused (add_files of the same
    # files): the re-run then checks the refusal instead
    rerun_after_landing: bool = True
    # True when running it again must leave exactly the rows after it (idempotent operations,
    # and the streaming sink's exactly-once batches)
    exact_rerun: bool = False


def _append(table: Table) -> None:
    table.append(rows(1000, 40))


def _new_a_rows() -> pa.Table:
    batch = rows(2000, 40)
    return batch.filter(pa.compute.equal(batch.column("kind"), "a"))


def _overwrite(table: Table) -> None:
    table.overwrite(_new_a_rows(), "kind = 'a'")


_DELETED_IDS = (3, 7, 21, 22, 38)


def _delete(table: Table) -> None:
    table.delete(f"id in {_DELETED_IDS} or kind = 'b'")


def _expire(table: Table) -> None:
    now = int(time.time() * 1000) + 1
    table.expire_snapshots(older_than=now, retain_last=1)


def _remove_orphans(table: Table) -> None:
    table.remove_orphan_files(older_than=int(time.time() * 1000), allow_recent=True)


def _rewrite_manifests(table: Table) -> None:
    table.rewrite_manifests()


def _incoming_folder(table: Table) -> Path:
    """Outside the table's location, as a Hive table's folder would be (orphan removal
    rightly deletes unreferenced files under the location)."""
    return Path(table.location).parent / f"{Path(table.location).name}-incoming"


def _add_files(table: Table) -> None:
    folder = _incoming_folder(table)
    table.add_files([str(p) for p in sorted(folder.glob("*.parquet"))])


def _evolve_schema(table: Table) -> None:
    names = {f.name for f in table.schema().fields}
    if "extra" in names and "value" in names:
        return  # a re-run after the change landed: nothing left to do
    with table.update_schema() as update:
        update.add_column("extra", "string")
        update.rename_column("v", "value")


def _evolve_spec(table: Table) -> None:
    if any(f.name == "id_bucket_4" for f in table.spec().fields):
        return  # a re-run after the change landed
    with table.update_spec() as update:
        update.add_field("bucket(4, id)")


def _history_with_rewrites(table: Table, _: Path) -> None:
    """Overwrites make files only old snapshots reference (what expiry deletes)."""
    for i in range(3):
        table.overwrite(rows(i * 10, 30), f"id >= {i * 10}")


def _planted_orphans(table: Table, _: Path) -> None:
    data = Path(table.location) / "data"
    data.mkdir(parents=True, exist_ok=True)
    for i in range(4):
        pq.write_table(rows(5000 + i, 1), data / f"orphan-{i}.parquet")
    past = time.time() - 10
    for p in data.glob("orphan-*.parquet"):
        os.utime(p, (past, past))


def _incoming_rows(i: int) -> pa.Table:
    """One partition's rows per file (add_files takes files of one partition)."""
    batch = rows(3000 + i * 40, 40)
    return batch.filter(pa.compute.equal(batch.column("kind"), KINDS[i]))


def _incoming(table: Table, _: Path) -> None:
    folder = _incoming_folder(table)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(3):
        pq.write_table(_incoming_rows(i), folder / f"part-{i}.parquet")


def _deleted(before: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [r for r in before if not (r[0] in _DELETED_IDS or r[1] == "b")]


def _overwritten(before: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    new = [(r["id"], r["kind"], r["v"]) for r in _new_a_rows().to_pylist()]
    return sorted([r for r in before if r[1] != "a"] + new)


def _appended(start: int, n: int) -> Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    new = [(r["id"], r["kind"], r["v"]) for r in rows(start, n).to_pylist()]
    return lambda before: sorted(before + new)


def _added(before: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    new = [(r["id"], r["kind"], r["v"]) for i in range(3) for r in _incoming_rows(i).to_pylist()]
    return sorted(before + new)


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("append", _append, _appended(1000, 40)),
        Op("overwrite", _overwrite, _overwritten),
        Op(
            "delete-copy-on-write",
            _delete,
            _deleted,
            {"write.delete.mode": "copy-on-write"},
        ),
        Op(
            "delete-merge-on-read",
            _delete,
            _deleted,
            {"write.delete.mode": "merge-on-read"},
        ),
        Op("expire-snapshots", _expire, prepare=_history_with_rewrites),
        Op("remove-orphan-files", _remove_orphans, prepare=_planted_orphans),
        Op("rewrite-manifests", _rewrite_manifests),
        Op("add-files", _add_files, _added, prepare=_incoming, rerun_after_landing=False),
        Op("evolve-schema", _evolve_schema, steps=("metadata-write", "catalog-swap")),
        Op("evolve-spec", _evolve_spec, steps=("metadata-write", "catalog-swap")),
    )
}


def make_table(spec: CatalogSpec, name: str, op: Op) -> Table:
    """A partitioned v2 table with a few appends (four data manifests), then ``op.prepare``."""
    catalog = spec.open()
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    props = {"format-version": "2", **op.properties}
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_by=["kind"], properties=props)
    for start in range(0, 40, 10):
        table.append(rows(start, 10))
    if op.prepare is not None:
        op.prepare(table, Path(table.location))
    return table.refresh()


# -- the child ---------------------------------------------------------------------------------


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install(step: str, catalog: Catalog) -> None:
    """Kill this process at ``step`` of the real code path."""
    from icepark.io import pyarrow_fileio

    stream = pyarrow_fileio._LocalAtomicStream
    publish = stream._publish

    def publishing(self: Any) -> None:
        target = os.path.basename(self._target)
        is_manifest_list = target.startswith("snap-") and target.endswith(".avro")
        is_manifest = target.endswith(".avro") and not is_manifest_list
        if step == "files-written" and is_manifest:
            _kill()
        if step == "metadata-write" and target.endswith(".metadata.json"):
            _kill()  # written under its temporary name, never published
        publish(self)
        if step == "manifest-list" and is_manifest_list:
            _kill()

    if step in ("files-written", "manifest-list", "metadata-write"):
        stream._publish = publishing  # type: ignore[method-assign]
    if step == "catalog-swap":
        swap = catalog._swap_metadata_location

        def swapping(*args: Any, **kwargs: Any) -> None:
            swap(*args, **kwargs)
            _kill()

        catalog._swap_metadata_location = swapping  # type: ignore[method-assign]
    if step == "deletes":
        delete = pyarrow_fileio.PyArrowFileIO.delete
        done = [0]

        def deleting(self: Any, location: str) -> None:
            if done[0] >= 1:
                _kill()
            delete(self, location)
            done[0] += 1

        pyarrow_fileio.PyArrowFileIO.delete = deleting  # type: ignore[method-assign]


def _child(spec: CatalogSpec, name: str, op_name: str, step: str | None) -> None:
    if op_name.startswith("spark-"):
        import tests.reliability.spark_ops  # noqa: F401  (registers the Spark operations)
    catalog = spec.open()
    table = catalog.load_table(f"db.{name}")
    if step is not None:
        _install(step, catalog)
    OPS[op_name].run(table)


_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["pyarrow", "pyarrow.parquet", "icepark.catalog", __name__])
        _CONTEXT = ctx
    return _CONTEXT


@dataclass
class Outcome:
    killed: bool
    seconds: float


def run_child(
    spec: CatalogSpec, name: str, op: Op, step: str | None = None, kill_after: float | None = None
) -> Outcome:
    """Run ``op`` in a child: killed at ``step`` when it gets there, or by this process after
    ``kill_after`` seconds; a child that finishes first is not killed."""
    proc = _context().Process(target=_child, args=(spec, name, op.name, step))
    start = time.monotonic()
    proc.start()
    proc.join(kill_after)
    if proc.is_alive():
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
    seconds = time.monotonic() - start
    code = proc.exitcode
    assert code in (0, -signal.SIGKILL), f"{op.name} at {step}: the child failed ({code})"
    return Outcome(code == -signal.SIGKILL, seconds)


# -- the judge ---------------------------------------------------------------------------------


def _files_under(location: str) -> set[str]:
    root = Path(location)
    return {str(p) for p in root.rglob("*") if p.is_file()}


def _plain(path: str) -> str:
    return path.removeprefix("file://")


def judge(
    spec: CatalogSpec,
    name: str,
    op: Op,
    before: list[tuple[Any, ...]],
    context: str,
) -> str:
    """Check what the killed run left (see the module docstring); returns ``before`` or
    ``after``: the state the table is in."""
    catalog = spec.open()
    table = catalog.load_table(f"db.{name}")
    state = _state(table)
    expected_after = op.after(before)
    assert state in (before, expected_after), f"{context}: rows are neither before nor after"
    landed = "after" if state == expected_after and state != before else "before"

    found = referenced_files(table.io, table.metadata, metadata_location=table.metadata_location)
    # (the version hint is listed as protected; only the file-system catalog writes one)
    needed = {_plain(p) for p in found.paths() if not p.endswith("version-hint.text")}
    missing = sorted(p for p in needed if not os.path.exists(p))
    assert not missing, f"{context}: referenced files are missing: {missing[:5]}"

    # the killed run's leftovers: what is under the table's location and referenced by nothing
    # (the file-system catalog's version hint is its pointer, not an orphan)
    present = _files_under(table.location)
    leftovers = {p for p in present - needed if not p.endswith("version-hint.text")}
    now_ms = int(time.time() * 1000)
    from icepark.table.maintenance.doctor import diagnose

    report = diagnose(table, orphans_older_than=now_ms)
    orphans = report.orphans or {}
    assert orphans.get("count", 0) == len(leftovers), (
        f"{context}: the doctor counts {orphans.get('count')} orphan candidates, the killed "
        f"run left {len(leftovers)}: {sorted(leftovers)[:5]}"
    )
    dry = table.remove_orphan_files(older_than=now_ms, allow_recent=True, dry_run=True)
    listed = {_plain(p) for p in dry.orphan_file_locations}
    assert listed == leftovers, (
        f"{context}: orphan removal would delete {sorted(listed - leftovers)[:5]} "
        f"and keep {sorted(leftovers - listed)[:5]}"
    )
    table.remove_orphan_files(older_than=now_ms, allow_recent=True)
    assert _files_under(table.location) - needed <= {
        p for p in present if p.endswith("version-hint.text")
    }, f"{context}: leftovers remain after orphan removal"
    table = catalog.load_table(f"db.{name}")
    assert _state(table) == state, f"{context}: orphan removal changed the rows"
    return landed


def rerun(
    spec: CatalogSpec,
    name: str,
    op: Op,
    landed: str,
    context: str,
    before: list[tuple[Any, ...]] | None = None,
) -> None:
    """The operation runs again to the end on what the crash left (or, for one that must
    not run twice and had landed, is refused with a typed error and changes nothing)."""
    if landed == "after" and not op.rerun_after_landing:
        from icepark.errors import ValidationError

        table = spec.open().load_table(f"db.{name}")
        state, location = _state(table), table.metadata_location
        try:
            op.run(table)
        except ValidationError:
            table = spec.open().load_table(f"db.{name}")
            assert (_state(table), table.metadata_location) == (state, location), context
            return
        raise AssertionError(f"{context}: running it again after it landed was not refused")
    outcome = run_child(spec, name, op)
    assert not outcome.killed, context
    table = spec.open().load_table(f"db.{name}")
    state = _state(table)  # readable
    if op.exact_rerun and before is not None:
        assert state == op.after(before), f"{context}: the re-run did not end at the rows after"
    found = referenced_files(table.io, table.metadata, metadata_location=table.metadata_location)
    missing = [
        p
        for p in found.paths()
        if not p.endswith("version-hint.text") and not os.path.exists(_plain(p))
    ]
    assert not missing, f"{context}: after the re-run, referenced files are missing: {missing[:5]}"


def state_of(spec: CatalogSpec, name: str) -> list[tuple[Any, ...]]:
    return _state(spec.open().load_table(f"db.{name}"))
