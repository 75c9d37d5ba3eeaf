"""A full disk (ENOSPC, mid-write) and a refused write (EACCES, at open) at every file write
of a commit, for each operation of the crash campaign: the operation raises a typed
:class:`~icepark.errors.StorageError` naming the file, the table stays at its last committed
state (same metadata file, same rows), no metadata file is left half-written, and every file
the failed commit wrote is deleted again (its outcome is known: it failed)."""

from __future__ import annotations

import builtins
import errno
import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import StorageError
from icepark.io import pyarrow_fileio
from tests.reliability.crash import OPS, CatalogSpec, _state, make_table

_names = itertools.count()
_OPS = [
    "append",
    "overwrite",
    "delete-copy-on-write",
    "delete-merge-on-read",
    "rewrite-manifests",
    "expire-snapshots",
    "add-files",
    "evolve-schema",
]


def _files(location: str) -> set[str]:
    return {str(p) for p in Path(location).rglob("*") if p.is_file()}


class _FullDisk:
    """A file whose writes fail as a full disk does."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class _Faults:
    """Counts the local file writes (each opens its temporary file once, under the real
    code's error handling); the ``fail_at``-th (1-based) is refused at open (EACCES) or
    fails at its first write (ENOSPC)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int, kind: str) -> None:
        self.count = 0
        self.failed: str | None = None
        faults = self

        def opening(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if mode != "xb":
                return builtins.open(path, mode, *args, **kwargs)
            faults.count += 1
            if faults.count != fail_at:
                return builtins.open(path, mode, *args, **kwargs)
            faults.failed = _target(path)
            if kind == "EACCES":
                raise PermissionError(errno.EACCES, "Permission denied", path)
            return _FullDisk(builtins.open(path, mode, *args, **kwargs))

        monkeypatch.setattr(pyarrow_fileio, "open", opening, raising=False)


def _target(temporary: str) -> str:
    """The file a temporary file ``.{name}.{hex}.tmp`` is written for."""
    folder, name = os.path.split(temporary)
    return os.path.join(folder, name[1:].rsplit(".", 2)[0])


def _writes(spec: CatalogSpec, op_name: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many files the operation writes when nothing fails."""
    op = OPS[op_name]
    name = f"count{next(_names)}"
    table = make_table(spec, name, op)
    with monkeypatch.context() as m:
        faults = _Faults(m, 0, "none")
        op.run(table)
    return faults.count


@pytest.mark.parametrize("op_name", _OPS)
def test_every_write_of_a_commit_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op_name: str
) -> None:
    spec = CatalogSpec("sqlite", str(tmp_path / "wh"), f"sqlite:///{tmp_path}/catalog.db")
    op = OPS[op_name]
    total = _writes(spec, op_name, monkeypatch)
    assert total >= 1
    for fail_at, kind in itertools.product(range(1, total + 1), ("ENOSPC", "EACCES")):
        name = f"t{next(_names)}"
        table = make_table(spec, name, op)
        before, location = _state(table), table.metadata_location
        present = _files(table.location)
        context = f"{op_name}: write {fail_at} of {total} fails with {kind}"
        with monkeypatch.context() as m:
            faults = _Faults(m, fail_at, kind)
            with pytest.raises(StorageError) as raised:
                op.run(table)
        assert faults.failed is not None, context
        assert Path(faults.failed).name in str(raised.value), (
            context,
            str(raised.value),
        )
        fresh = spec.open().load_table(f"db.{name}")
        assert fresh.metadata_location == location, context
        assert _state(fresh) == before, context
        left = _files(fresh.location) - present
        assert not left, f"{context}: the failed commit left {sorted(left)[:5]}"
