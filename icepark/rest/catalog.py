"""``RestCatalog``: a catalog served over the Iceberg REST protocol (Polaris, Lakekeeper,
Unity, Nessie, Gravitino, Glue, S3 Tables, Java's handlers, icepark's own server...).

How it flows:

* at start, ``GET /v1/config`` (with ``?warehouse=`` when one is set): the server's
  ``defaults`` go under the user's properties and its ``overrides`` over them; ``prefix``
  comes from the result; ``endpoints`` says what the server offers (Java's default set when
  it says nothing) and an operation it does not offer fails with a clear
  :class:`~icepark.errors.UnsupportedOperationError` before any request; an advertised
  ``idempotency-key-lifetime`` gives every change an ``Idempotency-Key``
  (:meth:`RestClient.change <icepark.rest.http.RestClient.change>`);
* namespaces and tables are the spec's endpoints; lists follow ``next-page-token`` (sending
  ``pageSize`` when ``rest-page-size`` is set); exists-checks use HEAD where offered;
* a table loads from ``LoadTableResult``: its metadata JSON through the one metadata codec,
  its FileIO from the catalog's properties, the result's ``config`` and the storage
  credential whose prefix is the longest match of the table's location;
* commits (``Table.commit`` and transactions end in :meth:`RestCatalog.commit_table`) are
  ``POST .../tables/{table}`` with the requirements and updates as JSON (their own codecs):
  the server checks and applies them. 409 is a retryable ``CommitFailedError``; 5xx or a lost
  connection is ``CommitStateUnknownError`` and the transaction deletes nothing;
* a create transaction is Java's: ``stage-create`` has the server choose location, ids and
  UUID; the staged table's commit is one ``POST .../tables/{table}`` with ``assert-create``,
  the creating updates and the writes' updates;
* ``commit_tables``/``commit_transaction`` go to ``POST /v1/{prefix}/transactions/commit``
  (all or nothing; 409 deletes the transactions' files, 5xx or a lost connection nothing);
* views: :mod:`icepark.rest.views`; server-side scan planning: :mod:`.scan_planning`;
  ``snapshot-loading-mode=refs`` (``?snapshots=refs``, the rest of the history fetched on
  first use): :func:`icepark.rest.loaded.snapshots_loader`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icepark.catalog.base import (
    Catalog,
    Identifier,
    Properties,
    namespace_of,
    schema_from_user,
    to_identifier,
)
from icepark.errors import (
    CatalogConfigError,
    CommitStateUnknownError,
    NoSuchTableError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.io import FileIO, load_file_io
from icepark.rest.auth import auth_from
from icepark.rest.endpoints import DEFAULT_ENDPOINTS
from icepark.rest.endpoints import NAMESPACE as _NS1
from icepark.rest.endpoints import NAMESPACES as _NS
from icepark.rest.endpoints import TABLE as _TABLE
from icepark.rest.endpoints import TABLES as _TABLES
from icepark.rest.endpoints import TRANSACTIONS as _TRANSACTIONS
from icepark.rest.http import ErrorKind, RestClient, encode_namespace
from icepark.rest.loaded import LoadedTables, snapshots_loader
from icepark.rest.metrics import Reports, report_commit, reporting_enabled, scan_reporter
from icepark.rest.models import (
    CatalogConfig,
    CommitTableRequest,
    CommitTableResponse,
    CommitTransactionRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    GetNamespaceResponse,
    ListNamespacesResponse,
    ListTablesResponse,
    LoadTableResult,
    RegisterTableRequest,
    RenameTableRequest,
    StorageCredential,
    TableIdentifier,
    UpdateNamespacePropertiesRequest,
)
from icepark.rest.scan_planning import scan_planner_for
from icepark.rest.views import VIEW_ENDPOINTS, RestViews
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata, defer_snapshots, table_metadata_from_dict
from icepark.spec.partitioning import build_partition_spec, partition_spec_to_json
from icepark.spec.schema import Schema, schema_to_json
from icepark.spec.sorting import build_sort_order, sort_order_to_json
from icepark.spec.updates import AssertCreate, TableRequirement, TableUpdate
from icepark.table.interface import CommitResult
from icepark.table.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

    from icepark.catalog.base import TableChange
    from icepark.table.staged import StagedTable

__all__ = ["RestCatalog", "DEFAULT_ENDPOINTS"]

# Catalog properties that are the catalog's own secrets or settings, kept out of FileIO.
_NOT_FOR_IO = ("credential", "token", "uri", "prefix", "warehouse")
# How long a table loaded to answer ``metadata_location`` may answer the ``load_table`` that
# ``Table.refresh`` makes right after it (saves a second round trip).
_RECENT_SECONDS = 2.0


def _ns(namespace: str | Sequence[str]) -> Identifier:
    parts = tuple(namespace.split(".")) if isinstance(namespace, str) else tuple(namespace)
    if any(not p for p in parts):
        raise ValidationError(f"Invalid namespace: {namespace!r}")
    return parts


def _dotted(parts: Sequence[str]) -> str:
    return ".".join(parts)


class RestCatalog(RestViews, Catalog):
    """A catalog behind an Iceberg REST server (icepark's own, Polaris, Lakekeeper, Unity,
    Nessie, Glue...); see the module docstring for how it flows. Opening it reads the
    server's ``/v1/config``: its defaults go under these properties, its overrides over
    them.

    Args:
        name: the catalog's name.
        properties: catalog properties: ``uri`` (``http(s)://host:port``, required),
            ``warehouse`` (passed to the server as is), ``credential``
            (``client-id:secret``, exchanged for a token) or ``token``, ``scope``,
            ``rest-page-size``, ``s3.*``...

    Raises:
        CatalogConfigError: no ``uri``.
        RestError: the server refuses the config request (NotAuthorizedError,
            ForbiddenError...) or cannot be reached (ServiceUnavailableError).
    """

    _views_refusal = None  # the server's endpoints decide (RestViews)
    _multi_table_refusal = None  # the server's endpoints decide (_check_multi_table)

    def __init__(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        super().__init__(name, properties)
        uri = self.properties.get("uri")
        if not uri:
            raise CatalogConfigError(f"REST catalog {name!r} needs a 'uri' (http://host:port)")
        self._client = self._make_client(self.properties)
        user = dict(self.properties)
        config = self._fetch_config(user.get("warehouse"))
        self.properties = {**config.defaults, **user, **config.overrides}
        if self.properties.get("uri", uri).rstrip("/") != self._client.uri:
            self._client.close()
            self._client = self._make_client(self.properties)
        self._client.prefix = self.properties.get("prefix", "")
        self._client.use_key_lifetime(config.idempotency_key_lifetime)
        if config.endpoints is not None:
            self.endpoints = frozenset(config.endpoints)
        elif self.properties.get("view-endpoints-supported", "false").lower() == "true":
            self.endpoints = DEFAULT_ENDPOINTS | VIEW_ENDPOINTS
        else:
            self.endpoints = DEFAULT_ENDPOINTS
        self._page_size = self.properties.get("rest-page-size")
        self._recent: dict[Identifier, tuple[float, Table]] = {}
        # the last load of each table and its ETag, for If-None-Match (a 304 reuses it)
        self._loaded = LoadedTables()
        self.reports = Reports(self._client)  # commit reports, sent off the commit's path

    def __repr__(self) -> str:
        return f"RestCatalog({self.name!r}, uri={self._client.uri!r})"

    @staticmethod
    def _make_client(properties: Mapping[str, str]) -> RestClient:
        client = RestClient(properties["uri"], properties)
        client.auth = auth_from(properties, client.session, client.timeout)
        return client

    def close(self) -> None:
        self.reports.close()
        self._client.close()

    def _fetch_config(self, warehouse: str | None) -> CatalogConfig:
        query = {"warehouse": warehouse} if warehouse else None
        config = self._client.call(
            "GET",
            self._client.url("config", prefixed=False),
            "read the catalog configuration",
            query=query,
            response=CatalogConfig,
        )
        return config or CatalogConfig()

    # -- requests --------------------------------------------------------------------------

    def _require(self, endpoint: str, operation: str) -> None:
        if endpoint not in self.endpoints:
            raise UnsupportedOperationError(
                f"Cannot {operation}: the REST catalog at {self._client.uri} does not offer "
                f"{endpoint}"
            )

    def _offers(self, endpoint: str) -> bool:
        return endpoint in self.endpoints

    def _ns_url(self, namespace: Identifier, *more: str) -> str:
        return self._client.url("namespaces", encode_namespace(namespace), *more)

    def _table_url(self, ident: Identifier) -> str:
        return self._ns_url(namespace_of(ident), "tables", encode_namespace([ident[-1]]))

    def _paged(
        self, url: str, operation: str, query: dict[str, str], model: Any, errors: ErrorKind
    ) -> list[Any]:
        """Every page of a list: ``pageToken`` follows ``next-page-token`` until it ends."""
        items: list[Any] = []
        token: str | None = None
        if self._page_size:
            query = {**query, "pageSize": str(self._page_size)}
        seen: set[str] = set()
        while True:
            page_query = {**query, "pageToken": token} if token else query
            page = self._client.call(
                "GET", url, operation, query=page_query, response=model, errors=errors
            )
            if page is None:
                return items
            items.extend(page.namespaces if model is ListNamespacesResponse else page.identifiers)
            token = page.next_page_token
            if not token:
                return items
            if token in seen:
                raise ValidationError(f"Cannot {operation}: the server repeats page {token!r}")
            seen.add(token)

    # -- namespaces ------------------------------------------------------------------------

    def create_namespace(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        ns = _ns(namespace)
        operation = f"create namespace {_dotted(ns)}"
        self._require(f"POST {_NS}", operation)
        request = CreateNamespaceRequest(namespace=list(ns), properties=dict(properties or {}))
        self._client.change(
            "POST", self._client.url("namespaces"), operation, body=request, errors="namespace"
        )

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        ns = _ns(namespace)
        operation = f"drop namespace {_dotted(ns)}"
        self._require(f"DELETE {_NS1}", operation)
        self._client.change("DELETE", self._ns_url(ns), operation, errors="drop-namespace")

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        ns = _ns(parent) if parent else ()
        operation = f"list namespaces under {_dotted(ns)}" if ns else "list namespaces"
        self._require(f"GET {_NS}", operation)
        query = {"parent": "\x1f".join(ns)} if ns else {}
        found = self._paged(
            self._client.url("namespaces"), operation, query, ListNamespacesResponse, "namespace"
        )
        return [tuple(n) for n in found]

    def load_namespace_properties(self, namespace: str | Sequence[str]) -> Properties:
        ns = _ns(namespace)
        operation = f"load namespace {_dotted(ns)}"
        self._require(f"GET {_NS1}", operation)
        answer = self._client.call(
            "GET", self._ns_url(ns), operation, response=GetNamespaceResponse, errors="namespace"
        )
        return dict(answer.properties) if answer is not None else {}

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        ns = _ns(namespace)
        operation = f"update the properties of namespace {_dotted(ns)}"
        self._require(f"POST {_NS1}/properties", operation)
        request = UpdateNamespacePropertiesRequest(
            removals=list(removals), updates=dict(updates or {})
        )
        self._client.change(
            "POST", self._ns_url(ns, "properties"), operation, body=request, errors="namespace"
        )

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        ns = _ns(namespace)
        if not self._offers(f"HEAD {_NS1}"):
            return super().namespace_exists(ns)
        return self._client.exists(self._ns_url(ns), f"check namespace {_dotted(ns)}", "namespace")

    # -- tables ----------------------------------------------------------------------------

    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        ns = _ns(namespace)
        operation = f"list the tables of namespace {_dotted(ns)}"
        self._require(f"GET {_TABLES}", operation)
        found = self._paged(
            self._ns_url(ns, "tables"), operation, {}, ListTablesResponse, "namespace"
        )
        return [t.as_tuple() for t in found]

    def load_table(self, identifier: str | Sequence[str]) -> Table:
        ident = to_identifier(identifier)
        recent = self._recent.pop(ident, None)
        if recent is not None and time.monotonic() - recent[0] < _RECENT_SECONDS:
            return recent[1]
        operation = f"load table {_dotted(ident)}"
        self._require(f"GET {_TABLE}", operation)
        namespace_of(ident)
        query = None
        if self.properties.get("snapshot-loading-mode", "all").lower() == "refs":
            query = {"snapshots": "refs"}
        known = self._loaded.get(ident)
        result = self._client.call(
            "GET",
            self._table_url(ident),
            operation,
            query=query,
            response=LoadTableResult,
            errors="table",
            headers={"If-None-Match": known.etag} if known else None,
        )
        if result is None and known is not None:  # 304: the table is as last loaded
            table = Table(ident, known.metadata, known.metadata_location, known.io, self)
            table.scan_planner = known.scan_planner
            table.scan_reporter = self._scan_reporter(ident)
            return table
        assert result is not None
        table = self._table(ident, result, refs_only=query is not None)
        self._loaded.loaded(ident, self._client.last_etag, table)
        return table

    def _table(self, ident: Identifier, result: LoadTableResult, refs_only: bool = False) -> Table:
        metadata = table_metadata_from_dict(result.metadata)
        if refs_only:  # the rest of the history is loaded when first needed, as Java does
            load = snapshots_loader(self._client, self._table_url(ident), _dotted(ident), metadata)
            metadata = defer_snapshots(metadata, load)
        io = self._io_for(metadata, result.config, result.storage_credentials, ident)
        table = Table(ident, metadata, result.metadata_location or "", io, self)
        table.scan_planner = scan_planner_for(self, ident, result.config)
        table.scan_reporter = self._scan_reporter(ident)
        return table

    def _scan_reporter(self, ident: Identifier) -> Any:
        """Reports each local scan plan to the table's ``/metrics`` (unless turned off)."""
        if self._offers(f"POST {_TABLE}/metrics") and reporting_enabled(self.properties):
            return scan_reporter(self.reports, self._table_url(ident) + "/metrics", _dotted(ident))
        return None

    def _io_for(
        self,
        metadata: TableMetadata,
        config: Mapping[str, str],
        credentials: Sequence[StorageCredential] | None,
        ident: Identifier | None = None,
    ) -> FileIO:
        props = self._io_properties()
        props.update(config)
        best = StorageCredential.best_for(credentials or (), metadata.location)
        if best is not None:
            props.update(best.config)
        from icepark.rest.vended_io import table_file_io  # refreshes expiring credentials

        return table_file_io(self, ident, props, metadata.location)

    def _io_properties(self) -> dict[str, str]:
        """The catalog's properties a FileIO may see: its own secrets and settings left out."""
        return {
            k: v
            for k, v in self.properties.items()
            if k not in _NOT_FOR_IO and not k.startswith(("header.", "rest."))
        }

    @property
    def io(self) -> FileIO:
        """A FileIO from the catalog's storage properties (tables each get their own, with
        what the server vends for them)."""
        if self._io is None:
            self._io = load_file_io(self._io_properties())
        return self._io

    def metadata_location(self, identifier: str | Sequence[str]) -> str:
        ident = to_identifier(identifier)
        self._recent.pop(ident, None)
        table = self.load_table(ident)
        self._recent[ident] = (time.monotonic(), table)
        return table.metadata_location

    def table_exists(self, identifier: str | Sequence[str]) -> bool:
        ident = to_identifier(identifier)
        if not self._offers(f"HEAD {_TABLE}"):
            try:
                self.load_table(ident)
                return True
            except NoSuchTableError:
                return False
        return self._client.exists(self._table_url(ident), f"check table {_dotted(ident)}", "table")

    def create_table(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]] = (),
        sort_by: Sequence[str] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table on the server (which assigns its ids, location and UUID)."""
        ident = to_identifier(identifier)
        result = self._create_request(
            ident, schema, partition_by, sort_by, location, properties, stage=False
        )
        return self._table(ident, result)

    def create_table_transaction(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]] = (),
        sort_by: Sequence[str] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> StagedTable:
        """A table to create and write in one commit (Java's ``createTransaction``): the
        server stages it (``stage-create``: location, ids and UUID chosen, nothing created)
        and the staged table's commit creates it with its first changes."""
        from icepark.table.staged import StagedTable

        ident = to_identifier(identifier)
        result = self._create_request(
            ident, schema, partition_by, sort_by, location, properties, stage=True
        )
        metadata = table_metadata_from_dict(result.metadata)
        io = self._io_for(metadata, result.config, result.storage_credentials, ident)
        return StagedTable(ident, metadata, io, self)

    def _create_request(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]],
        sort_by: Sequence[str],
        location: str | None,
        properties: Mapping[str, str] | None,
        *,
        stage: bool,
    ) -> LoadTableResult:
        operation = f"{'stage the creation of' if stage else 'create'} table {_dotted(ident)}"
        self._require(f"POST {_TABLES}", operation)
        user_schema = schema_from_user(schema)
        spec = build_partition_spec(user_schema, partition_by)
        order = build_sort_order(user_schema, sort_by)
        props = dict(properties or {})
        P.FORMAT_VERSION.get(props)  # a bad format-version fails here, not on the server
        request = CreateTableRequest(
            name=ident[-1],
            schema_=schema_to_json(user_schema),
            location=location.rstrip("/") if location else None,
            partition_spec=partition_spec_to_json(spec),
            write_order=sort_order_to_json(order),
            properties=props,
            stage_create=True if stage else None,
        )
        result = self._client.change(
            "POST",
            self._ns_url(namespace_of(ident), "tables"),
            operation,
            body=request,
            response=LoadTableResult,
            errors="create-table",
        )
        assert result is not None
        return result

    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        ident = to_identifier(identifier)
        operation = f"register table {_dotted(ident)}"
        self._require(f"POST {_NS1}/register", operation)
        request = RegisterTableRequest(name=ident[-1], metadata_location=metadata_location)
        result = self._client.change(
            "POST",
            self._ns_url(namespace_of(ident), "register"),
            operation,
            body=request,
            response=LoadTableResult,
            errors="create-table",
        )
        assert result is not None
        return self._table(ident, result)

    def rename_table(
        self, from_identifier: str | Sequence[str], new_identifier: str | Sequence[str]
    ) -> Table:
        src, dst = to_identifier(from_identifier), to_identifier(new_identifier)
        operation = f"rename table {_dotted(src)} to {_dotted(dst)}"
        self._require("POST /v1/{prefix}/tables/rename", operation)
        self._recent.pop(src, None)
        self._recent.pop(dst, None)
        request = RenameTableRequest(
            source=TableIdentifier.of(src), destination=TableIdentifier.of(dst)
        )
        self._client.change(
            "POST", self._client.url("tables", "rename"), operation, body=request, errors="table"
        )
        return self.load_table(dst)

    def drop_table(self, identifier: str | Sequence[str], purge: bool = False) -> None:
        """Drop the table; with ``purge`` the server deletes its files (``purgeRequested``)."""
        ident = to_identifier(identifier)
        operation = f"{'purge' if purge else 'drop'} table {_dotted(ident)}"
        self._require(f"DELETE {_TABLE}", operation)
        self._recent.pop(ident, None)
        self._client.change(
            "DELETE",
            self._table_url(ident),
            operation,
            query={"purgeRequested": "true" if purge else "false"},
            errors="table",
        )

    def commit_table(
        self,
        identifier: tuple[str, ...],
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> CommitResult:
        """``POST .../tables/{table}``: the server checks ``requirements`` and applies
        ``updates`` atomically (``base`` is the client's view; the server decides). With
        ``AssertCreate`` it is a stage-create's commit: 409 means the table exists."""
        ident = to_identifier(identifier)
        creates = any(isinstance(r, AssertCreate) for r in requirements)
        operation = f"{'create' if creates else 'commit to'} table {_dotted(ident)}"
        self._require(f"POST {_TABLE}", operation)
        self._recent.pop(ident, None)
        request = CommitTableRequest(
            identifier=TableIdentifier.of(ident),
            requirements=[r.to_json() for r in requirements],
            updates=[u.to_json() for u in updates],
        )
        start = time.perf_counter_ns()
        answer = self._client.change(
            "POST",
            self._table_url(ident),
            operation,
            body=request,
            response=CommitTableResponse,
            errors="create-commit" if creates else "commit",
        )
        assert answer is not None
        after = table_metadata_from_dict(answer.metadata)
        if self.properties.get("snapshot-loading-mode", "all").lower() != "refs":
            self._loaded.committed(ident, self._client.last_etag, after, answer.metadata_location)
        if self._offers(f"POST {_TABLE}/metrics"):
            took = time.perf_counter_ns() - start
            url = self._table_url(ident) + "/metrics"
            report_commit(self.reports, url, self.properties, _dotted(ident), base, after, took)
        return CommitResult(after, answer.metadata_location)

    # -- several tables at once ------------------------------------------------------------

    def _check_multi_table(self) -> None:
        self._require(f"POST {_TRANSACTIONS}", "commit several tables at once")

    def commit_tables(self, changes: Sequence[TableChange]) -> list[CommitResult]:
        """``POST /v1/{prefix}/transactions/commit``, all or none (409 CommitFailedError; 5xx
        or a lost connection CommitStateUnknownError). The answer holds no metadata: each
        table is loaded after it (a failed load is CommitStateUnknownError: delete nothing)."""
        self._check_multi_table()
        idents = [to_identifier(ident) for ident, _, _ in changes]
        if len(set(idents)) != len(idents):
            raise ValidationError("A table appears more than once in one commit")
        if not changes:
            return []
        names = ", ".join(_dotted(i) for i in idents)
        request = CommitTransactionRequest(
            table_changes=[
                CommitTableRequest(
                    identifier=TableIdentifier.of(ident),
                    requirements=[r.to_json() for r in requirements],
                    updates=[u.to_json() for u in updates],
                )
                for ident, (_, requirements, updates) in zip(idents, changes, strict=True)
            ]
        )
        self._recent = {k: v for k, v in self._recent.items() if k not in idents}
        self._client.change(
            "POST",
            self._client.url("transactions", "commit"),
            f"commit tables {names}",
            body=request,
            errors="commit",
        )
        results = []
        for ident in idents:  # the commit landed: a failed load must not delete its files
            try:
                table = self.load_table(ident)
            except Exception as exc:
                raise CommitStateUnknownError(
                    f"Committed tables {names}, but {_dotted(ident)} did not load after: {exc}"
                ) from exc
            results.append(CommitResult(table.metadata, table.metadata_location))
        return results

    # -- what the REST protocol does on the server side ------------------------------------

    def _current_metadata_location(self, identifier: Identifier) -> str:
        return self.metadata_location(identifier)

    def _new_metadata_location(
        self, identifier: Identifier, metadata: TableMetadata, previous: str | None
    ) -> str:
        raise UnsupportedOperationError("A REST catalog's server writes the metadata files")

    def _swap_metadata_location(
        self, identifier: Identifier, expected: str | None, new: str
    ) -> None:
        raise UnsupportedOperationError("A REST catalog's server swaps the metadata pointer")

    def _remove_table_entry(self, identifier: Identifier) -> str:
        raise UnsupportedOperationError("A REST catalog drops tables with drop_table")
