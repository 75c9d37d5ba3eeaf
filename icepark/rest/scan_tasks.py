"""File scan tasks as the REST spec's ``ScanTasks`` JSON, both ways (server and client).

A page of tasks is ``{"delete-files": [...], "file-scan-tasks": [...]}``: each delete file
that any task of the page needs is written once in ``delete-files`` (content file JSON,
:mod:`icepark.manifest.content_json`) and a task names its deletes by their index there::

    {"data-file": {...}, "delete-file-references": [0, 2], "residual-filter": {...}}

``residual-filter`` is the task's residual (expression JSON, :mod:`icepark.expressions.json`);
a client given none uses the scan's filter (the spec's rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression
from icepark.expressions.json import expression_from_json, expression_to_json
from icepark.manifest.content_json import content_file_from_json, content_file_to_json
from icepark.planning.planner import FileScanTask
from icepark.rest.models import ScanTasks
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.types import StructType

__all__ = ["partition_types", "tasks_to_json", "tasks_from_json"]


def partition_types(metadata: TableMetadata) -> dict[int, StructType]:
    """Each partition spec's partition type, by spec id (typed by the current schema)."""
    schema = metadata.schema()
    return {spec_id: spec.partition_type(schema) for spec_id, spec in metadata.specs().items()}


def tasks_to_json(
    tasks: Iterable[FileScanTask], types: Mapping[int, StructType], legacy: bool = False
) -> dict[str, Any]:
    """``tasks`` as the ``delete-files`` and ``file-scan-tasks`` of a ``ScanTasks`` body."""
    deletes: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    out_tasks: list[dict[str, Any]] = []
    for task in tasks:
        refs = []
        for d in task.delete_files:
            at = index.get(d.file_path)
            if at is None:
                at = index[d.file_path] = len(deletes)
                deletes.append(content_file_to_json(d, types[d.spec_id or 0], legacy))
            refs.append(at)
        item: dict[str, Any] = {
            "data-file": content_file_to_json(task.file, types[task.file.spec_id or 0], legacy)
        }
        if refs:
            item["delete-file-references"] = refs
        item["residual-filter"] = expression_to_json(task.residual)
        out_tasks.append(item)
    body: dict[str, Any] = {"file-scan-tasks": out_tasks}
    if deletes:
        body["delete-files"] = deletes
    return body


def tasks_from_json(
    page: ScanTasks,
    types: Mapping[int, StructType],
    schema: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """The :class:`FileScanTask` of each of ``page``'s file scan tasks: its data file, the
    delete files it references and its residual (``row_filter`` when it has none)."""
    deletes: list[DataFile] = []
    for i, obj in enumerate(page.delete_files or ()):
        d = _content_file(obj, types, f"delete-files[{i}]")
        if d.content == FileContent.DATA:
            raise ValidationError(f"delete-files[{i}] is a data file: {d.file_path}")
        deletes.append(d)
    tasks = []
    for i, obj in enumerate(page.file_scan_tasks or ()):
        data = _content_file(obj.get("data-file"), types, f"file-scan-tasks[{i}]")
        if data.content != FileContent.DATA:
            raise ValidationError(f"file-scan-tasks[{i}] holds a delete file: {data.file_path}")
        refs = obj.get("delete-file-references") or []
        if not isinstance(refs, Sequence) or not all(
            isinstance(r, int) and 0 <= r < len(deletes) for r in refs
        ):
            raise ValidationError(
                f"file-scan-tasks[{i}]: delete-file-references {refs!r} out of the "
                f"{len(deletes)} delete files"[:300]
            )
        residual = row_filter
        if obj.get("residual-filter") is not None:
            residual = expression_from_json(obj["residual-filter"], schema, case_sensitive)
        applying = tuple(deletes[r] for r in refs)
        tasks.append(FileScanTask(data, applying, residual, data.spec_id or 0))
    return tasks


def _content_file(obj: Any, types: Mapping[int, StructType], where: str) -> DataFile:
    try:
        return content_file_from_json(obj, types)
    except ValidationError as exc:
        raise ValidationError(f"Invalid {where}: {exc}") from exc
