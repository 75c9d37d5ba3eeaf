"""The REST catalog protocol's request and response bodies (``rest-catalog-open-api.yaml`` of
Apache Iceberg 1.10), shared by icepark's client and server so the two cannot disagree.

Field names are the wire names (``metadata-location``, ``next-page-token``); Python code uses
the snake_case attribute and :meth:`RestModel.dump` writes the wire form. The spec's own
objects (schemas, partition specs, table and view metadata, updates and requirements) travel
as JSON objects here and are parsed by the ``icepark.spec`` codecs, the one implementation of
each, where they are used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RestModel",
    "CatalogConfig",
    "IDEMPOTENCY_KEY",
    "duration_seconds",
    "ErrorModel",
    "ErrorResponse",
    "Namespace",
    "CreateNamespaceRequest",
    "CreateNamespaceResponse",
    "GetNamespaceResponse",
    "ListNamespacesResponse",
    "UpdateNamespacePropertiesRequest",
    "UpdateNamespacePropertiesResponse",
    "TableIdentifier",
    "ListTablesResponse",
    "CreateTableRequest",
    "StorageCredential",
    "LoadTableResult",
    "LoadCredentialsResponse",
    "CommitTableRequest",
    "CommitTableResponse",
    "CommitTransactionRequest",
    "RegisterTableRequest",
    "RenameTableRequest",
    "ReportMetricsRequest",
    "OAuthTokenResponse",
    "OAuthErrorResponse",
    "CreateViewRequest",
    "LoadViewResult",
    "CommitViewRequest",
    "PlanTableScanRequest",
    "ScanTasks",
    "PlanTableScanResult",
    "FetchPlanningResult",
    "FetchScanTasksRequest",
    "FetchScanTasksResult",
]

Namespace = list[str]
JsonObject = dict[str, Any]


class RestModel(BaseModel):
    """A body of the protocol: built from wire names or attribute names, unknown fields kept
    out (servers and clients add fields over time; the spec asks both sides to ignore them)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    def dump(self) -> dict[str, Any]:
        """The wire form: aliases as names, absent optional fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class CatalogConfig(RestModel):
    """``GET /v1/config``: properties the server sets under (``defaults``) and over
    (``overrides``) the client's, the endpoints it serves (``"GET /v1/{prefix}/..."``) and, when
    it keeps the outcomes of mutations by ``Idempotency-Key``, how long a client may reuse a key
    (``idempotency-key-lifetime``, an ISO-8601 duration such as ``PT30M``)."""

    defaults: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, str] = Field(default_factory=dict)
    endpoints: list[str] | None = None
    idempotency_key_lifetime: str | None = Field(default=None, alias="idempotency-key-lifetime")


IDEMPOTENCY_KEY = "Idempotency-Key"
"""The request header naming one logical mutation (a UUIDv7); a retry of it carries the same."""

_DURATION = re.compile(
    r"P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?"
)


def duration_seconds(text: str) -> float:
    """An ISO-8601 duration of days and time (``PT30M``, ``PT24H``, ``P1DT2H``, ``PT0.5S``) in
    seconds, as Java's ``Duration.parse`` reads them; anything else is a ``ValueError``."""
    found = _DURATION.fullmatch(text.strip().upper())
    if found is None or not any(found.groupdict().values()) or text.strip().upper().endswith("T"):
        raise ValueError(f"Invalid ISO-8601 duration {text!r}: expected a form like PT30M")
    parts = {k: float(v) for k, v in found.groupdict().items() if v is not None}
    return (
        parts.get("days", 0.0) * 86400
        + parts.get("hours", 0.0) * 3600
        + parts.get("minutes", 0.0) * 60
        + parts.get("seconds", 0.0)
    )


class ErrorModel(RestModel):
    message: str
    type: str
    code: int
    stack: list[str] | None = None


class ErrorResponse(RestModel):
    """Every error the catalog returns: ``{"error": {"message", "type", "code"}}``."""

    error: ErrorModel


class CreateNamespaceRequest(RestModel):
    namespace: Namespace
    properties: dict[str, str] = Field(default_factory=dict)


class CreateNamespaceResponse(RestModel):
    namespace: Namespace
    properties: dict[str, str] = Field(default_factory=dict)


class GetNamespaceResponse(RestModel):
    namespace: Namespace
    properties: dict[str, str] = Field(default_factory=dict)


class ListNamespacesResponse(RestModel):
    namespaces: list[Namespace] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, alias="next-page-token")


class UpdateNamespacePropertiesRequest(RestModel):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesResponse(RestModel):
    updated: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    missing: list[str] | None = None


class TableIdentifier(RestModel):
    namespace: Namespace
    name: str

    @classmethod
    def of(cls, identifier: tuple[str, ...] | list[str]) -> TableIdentifier:
        return cls(namespace=list(identifier[:-1]), name=identifier[-1])

    def as_tuple(self) -> tuple[str, ...]:
        return (*self.namespace, self.name)


class ListTablesResponse(RestModel):
    identifiers: list[TableIdentifier] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, alias="next-page-token")


class CreateTableRequest(RestModel):
    name: str
    schema_: JsonObject = Field(alias="schema")
    location: str | None = None
    partition_spec: JsonObject | None = Field(default=None, alias="partition-spec")
    write_order: JsonObject | None = Field(default=None, alias="write-order")
    stage_create: bool | None = Field(default=None, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)


class StorageCredential(RestModel):
    """Storage settings for the locations under ``prefix`` (``s3.access-key-id``, ...)."""

    prefix: str
    config: dict[str, str] = Field(default_factory=dict)

    @staticmethod
    def best_for(
        credentials: Iterable[StorageCredential], location: str
    ) -> StorageCredential | None:
        """The credential whose prefix is the longest one ``location`` starts with."""
        best: StorageCredential | None = None
        for credential in credentials:
            if location.startswith(credential.prefix) and (
                best is None or len(credential.prefix) > len(best.prefix)
            ):
                best = credential
        return best


class LoadTableResult(RestModel):
    metadata_location: str | None = Field(default=None, alias="metadata-location")
    metadata: JsonObject
    config: dict[str, str] = Field(default_factory=dict)
    storage_credentials: list[StorageCredential] | None = Field(
        default=None, alias="storage-credentials"
    )


class LoadCredentialsResponse(RestModel):
    storage_credentials: list[StorageCredential] = Field(
        default_factory=list, alias="storage-credentials"
    )


class CommitTableRequest(RestModel):
    identifier: TableIdentifier | None = None
    requirements: list[JsonObject] = Field(default_factory=list)
    updates: list[JsonObject] = Field(default_factory=list)


class CommitTableResponse(RestModel):
    metadata_location: str = Field(alias="metadata-location")
    metadata: JsonObject


class CommitTransactionRequest(RestModel):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")


class RegisterTableRequest(RestModel):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool | None = None


class RenameTableRequest(RestModel):
    source: TableIdentifier
    destination: TableIdentifier


class ReportMetricsRequest(RestModel):
    """A scan or commit report (``report-type``: ``scan-report`` or ``commit-report``); the
    rest of the report is kept as sent."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    report_type: str = Field(alias="report-type")
    table_name: str = Field(alias="table-name")
    snapshot_id: int = Field(alias="snapshot-id")


class OAuthTokenResponse(RestModel):
    access_token: str
    token_type: str
    expires_in: int | None = None
    issued_token_type: str | None = None
    refresh_token: str | None = None
    scope: str | None = None


class OAuthErrorResponse(RestModel):
    error: str
    error_description: str | None = None
    error_uri: str | None = None


class CreateViewRequest(RestModel):
    name: str
    schema_: JsonObject = Field(alias="schema")
    view_version: JsonObject = Field(alias="view-version")
    location: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class LoadViewResult(RestModel):
    metadata_location: str = Field(alias="metadata-location")
    metadata: JsonObject
    config: dict[str, str] = Field(default_factory=dict)


class CommitViewRequest(RestModel):
    identifier: TableIdentifier | None = None
    requirements: list[JsonObject] = Field(default_factory=list)
    updates: list[JsonObject] = Field(default_factory=list)


# -- server-side scan planning ------------------------------------------------------------------
# Expressions and content files travel as JSON here; their codecs are
# icepark.expressions.json and icepark.manifest.content_json.


class PlanTableScanRequest(RestModel):
    snapshot_id: int | None = Field(default=None, alias="snapshot-id")
    select: list[str] | None = None
    filter: Any = None
    case_sensitive: bool = Field(default=True, alias="case-sensitive")
    use_snapshot_schema: bool = Field(default=False, alias="use-snapshot-schema")
    start_snapshot_id: int | None = Field(default=None, alias="start-snapshot-id")
    end_snapshot_id: int | None = Field(default=None, alias="end-snapshot-id")
    stats_fields: list[str] | None = Field(default=None, alias="stats-fields")


class ScanTasks(RestModel):
    """File scan tasks (each ``{"data-file", "delete-file-references", "residual-filter"}``),
    the delete files they reference by index, and plan tasks to fetch more with."""

    delete_files: list[JsonObject] | None = Field(default=None, alias="delete-files")
    file_scan_tasks: list[JsonObject] | None = Field(default=None, alias="file-scan-tasks")
    plan_tasks: list[str] | None = Field(default=None, alias="plan-tasks")


class PlanTableScanResult(ScanTasks):
    """``status``: completed (tasks here), submitted (poll ``plan-id``), cancelled, failed."""

    status: str
    plan_id: str | None = Field(default=None, alias="plan-id")
    error: ErrorModel | None = None


class FetchPlanningResult(ScanTasks):
    status: str
    error: ErrorModel | None = None


class FetchScanTasksRequest(RestModel):
    plan_task: str = Field(alias="plan-task")


class FetchScanTasksResult(ScanTasks):
    pass
