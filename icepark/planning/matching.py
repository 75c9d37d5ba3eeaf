"""Which manifests and files a row filter can touch, across every partition spec."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from icepark.expressions import (
    AlwaysTrue,
    BooleanExpression,
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    bind,
    evaluator,
    inclusive_projection,
    manifest_evaluator,
    referenced_field_ids,
    strict_projection,
)
from icepark.manifest import DataFile, ManifestFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema

__all__ = ["FileMatcher"]


class FileMatcher:
    """Answers "might this file hold matching rows?" and "do all its rows match?".

    Each file is judged by its own spec's projections of the filter (partition values), then
    by its column metrics. Evaluators are built once per spec and reused for every file.
    """

    def __init__(
        self,
        schema: Schema,
        specs: dict[int, PartitionSpec],
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
    ) -> None:
        self.schema = schema
        self.specs = specs
        self.row_filter = row_filter
        self.case_sensitive = case_sensitive
        self._inclusive: dict[int, Callable[[Any], bool]] = {}
        self._strict: dict[int, Callable[[Any], bool]] = {}
        self._manifest: dict[int, Callable[[ManifestFile], bool]] = {}

    @cached_property
    def bound(self) -> BooleanExpression:
        return bind(self.schema, self.row_filter, self.case_sensitive)

    @cached_property
    def matches_everything(self) -> bool:
        return isinstance(self.row_filter, AlwaysTrue)

    @cached_property
    def _metrics(self) -> InclusiveMetricsEvaluator:
        return InclusiveMetricsEvaluator(self.schema, self.row_filter, self.case_sensitive)

    @cached_property
    def _strict_metrics(self) -> StrictMetricsEvaluator:
        return StrictMetricsEvaluator(self.schema, self.row_filter, self.case_sensitive)

    def _partition_evaluator(self, spec_id: int, strict: bool) -> Callable[[Any], bool]:
        cache = self._strict if strict else self._inclusive
        if spec_id not in cache:
            spec = self.specs[spec_id]
            project = strict_projection if strict else inclusive_projection
            projected = project(self.schema, spec, self.case_sensitive)(self.row_filter)
            cache[spec_id] = evaluator(
                spec.partition_type(self.schema), projected, self.case_sensitive
            )
        return cache[spec_id]

    def manifest_might_match(self, manifest: ManifestFile) -> bool:
        if self.matches_everything:
            return True
        spec_id = manifest.partition_spec_id
        if spec_id not in self._manifest:
            self._manifest[spec_id] = manifest_evaluator(
                self.specs[spec_id], self.schema, self.row_filter, self.case_sensitive
            )
        return self._manifest[spec_id](manifest)

    def partition_might_match(self, spec_id: int, partition: tuple[Any, ...]) -> bool:
        return self.matches_everything or self._partition_evaluator(spec_id, False)(partition)

    @cached_property
    def metrics_field_ids(self) -> frozenset[int]:
        """The field ids whose metrics :meth:`metrics_might_match` reads."""
        return frozenset(referenced_field_ids(self.bound))

    def metrics_might_match(self, data_file: Any) -> bool:
        """Might a file with these column metrics hold matching rows? ``data_file`` is a
        :class:`DataFile` or anything with its record count and metric maps (only those of
        :attr:`metrics_field_ids` are read)."""
        return self.matches_everything or self._metrics.compiled(data_file)

    def metrics_match_rows(self, columns: Any, rows: Any) -> Any:
        """:meth:`metrics_might_match` for the entries ``rows`` (a numpy array of indexes)
        of a manifest decoded into arrays (:class:`~icepark.manifest.entry_columns.EntryColumns`),
        as a numpy array of booleans, judged a column at a time
        (:mod:`icepark.planning.vector_metrics`)."""
        from icepark.planning.vector_metrics import metrics_might_match

        if self.matches_everything:
            import numpy as np

            return np.ones(len(rows), dtype=bool)
        evaluator = self._metrics
        return metrics_might_match(
            evaluator.expr, columns, rows, include_empty_files=evaluator.include_empty_files
        )

    def metrics_all_match_rows(self, columns: Any, rows: Any) -> Any:
        """:meth:`metrics_all_match` for the entries ``rows`` of a manifest decoded into
        arrays, as :meth:`metrics_match_rows` (judged a column at a time)."""
        import numpy as np

        if self.matches_everything:
            return np.ones(len(rows), dtype=bool)
        from icepark.planning.vector_metrics import metrics_must_match

        return metrics_must_match(self._strict_metrics.expr, columns, rows)

    def might_match(self, data_file: DataFile) -> bool:
        if self.matches_everything:
            return True
        spec_id = data_file.spec_id or 0
        return self._partition_evaluator(spec_id, False)(
            tuple(data_file.partition)
        ) and self._metrics.compiled(data_file)

    def all_match(self, data_file: DataFile) -> bool:
        if self.matches_everything:
            return True
        spec_id = data_file.spec_id or 0
        return self.partition_all_match(spec_id, tuple(data_file.partition)) or (
            self.metrics_all_match(data_file)
        )

    def partition_all_match(self, spec_id: int, partition: tuple[Any, ...]) -> bool:
        """Do all rows of a file in ``partition`` match, by the strict projection?"""
        return self.matches_everything or self._partition_evaluator(spec_id, True)(partition)

    def metrics_all_match(self, data_file: Any) -> bool:
        """Do all rows of a file match by its metrics? ``data_file`` as for
        :meth:`metrics_might_match`."""
        return self.matches_everything or bool(self._strict_metrics.eval(data_file))
