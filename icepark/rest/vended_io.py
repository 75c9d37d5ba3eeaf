"""Storage credentials vended by a REST catalog, refreshed before they expire.

A table loaded from a REST catalog gets its FileIO from the catalog's properties, the load
result's ``config`` and its best storage credential (:meth:`RestCatalog._io_for`). When those
credentials carry ``s3.session-token-expires-at-ms`` (temporary ones, e.g. from STS), the
table's FileIO is a :class:`VendedFileIO`: it hands every call to an ordinary FileIO built
from the current properties and, once the credentials are due (5 minutes before they expire,
or half their remaining life when that is shorter), asks the catalog for fresh ones
(``GET .../tables/{table}/credentials``, or the server's ``client.refresh-credentials-endpoint``
as Java reads it) and swaps the FileIO for one built with them. Files opened before the swap
keep the credentials they were opened with.

A refresh that fails is logged (no secret in the line) and tried again 10 seconds later; the
old credentials are used meanwhile. Pickled (into Spark tasks) a ``VendedFileIO`` travels as
its current properties, without the catalog: a worker uses the credentials it was given.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from icepark.io import FileIO, load_file_io
from icepark.io.fileio import FileEntry, InputFile, OutputFile
from icepark.io.s3 import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN
from icepark.rest.models import LoadCredentialsResponse, StorageCredential

if TYPE_CHECKING:
    from icepark.rest.catalog import RestCatalog

__all__ = [
    "VendedFileIO",
    "table_file_io",
    "S3_SESSION_TOKEN_EXPIRES_AT_MS",
    "REFRESH_CREDENTIALS_ENDPOINT",
    "REFRESH_AHEAD_SECONDS",
]

S3_SESSION_TOKEN_EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
REFRESH_CREDENTIALS_ENDPOINT = "client.refresh-credentials-endpoint"
REFRESH_AHEAD_SECONDS = 300.0
_RETRY_SECONDS = 10.0
_CREDENTIAL_KEYS = (
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    S3_SESSION_TOKEN_EXPIRES_AT_MS,
)
_log = logging.getLogger("icepark.rest.credentials")

Refresh = Callable[[], Mapping[str, str] | None]


class VendedFileIO(FileIO):
    """A FileIO over vended credentials that renews them through ``refresh`` when due.

    ``refresh`` returns the fresh credential's settings (None: the server has none to give,
    and the current ones are kept). Thread-safe: one thread renews, the others wait for it.
    """

    def __init__(
        self,
        properties: Mapping[str, str] | None = None,
        refresh: Refresh | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(properties)
        self._refresh = refresh
        self._clock = clock
        self._lock = threading.Lock()
        self._delegate = load_file_io(self.properties)
        self.refreshes = 0
        self._due: float | None = None
        self._schedule()

    # -- credentials -----------------------------------------------------------------------
    @property
    def expires_at(self) -> float | None:
        """When the current credentials expire (seconds since the epoch), if they say."""
        value = self.properties.get(S3_SESSION_TOKEN_EXPIRES_AT_MS)
        try:
            return int(value) / 1000 if value else None
        except ValueError:
            return None

    @property
    def refresh_due_at(self) -> float | None:
        """When the next refresh is due (None: never)."""
        return self._due

    def _schedule(self) -> None:
        expires = self.expires_at
        if self._refresh is None or expires is None:
            self._due = None
            return
        remaining = max(0.0, expires - self._clock())
        self._due = expires - min(REFRESH_AHEAD_SECONDS, remaining / 2)

    def _current(self) -> FileIO:
        due = self._due
        if due is not None and self._clock() >= due:
            with self._lock:
                if self._due is not None and self._clock() >= self._due:
                    self._renew()
        return self._delegate

    def _renew(self) -> None:
        assert self._refresh is not None
        try:
            fresh = self._refresh()
        except Exception as exc:  # keep the current credentials; try again soon
            _log.warning(
                "Refreshing vended storage credentials failed (%s); retrying in %.0f s",
                type(exc).__name__,
                _RETRY_SECONDS,
            )
            self._due = self._clock() + _RETRY_SECONDS
            return
        self.refreshes += 1
        if not fresh:
            self._due = None  # the server vends nothing now: keep what we have
            return
        props = {k: v for k, v in self.properties.items() if k not in _CREDENTIAL_KEYS}
        props.update(fresh)
        self._delegate = load_file_io(props)
        self.properties = props
        self._schedule()

    # -- FileIO ----------------------------------------------------------------------------
    def new_input(self, location: str, length: int | None = None) -> InputFile:
        return self._current().new_input(location, length)

    def new_output(self, location: str) -> OutputFile:
        return self._current().new_output(location)

    def delete(self, location: str) -> None:
        self._current().delete(location)

    def list_prefix(self, location: str) -> list[FileEntry]:
        return self._current().list_prefix(location)

    def delete_prefix(self, location: str) -> None:
        self._current().delete_prefix(location)

    def exists(self, location: str) -> bool:
        return self._current().exists(location)

    def check_access(self, location: str) -> None:
        self._current().check_access(location)

    def filesystem(self, location: str) -> tuple[Any, str]:
        return self._current().filesystem(location)

    # -- pickling (Spark tasks): the current properties, no catalog ------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"properties": dict(self.properties)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"VendedFileIO(expires_at={self.expires_at!r}, refreshes={self.refreshes})"


def _refresh_url(catalog: RestCatalog, ident: tuple[str, ...], props: Mapping[str, str]) -> str:
    """Where to refresh: the server's relative ``client.refresh-credentials-endpoint`` (a
    full URL is accepted only on the catalog's own address: the request carries the
    catalog's token), else the spec's ``.../tables/{table}/credentials``; '' for none."""
    client = catalog._client
    endpoint = props.get(REFRESH_CREDENTIALS_ENDPOINT, "").strip()
    if endpoint:
        if "://" not in endpoint:
            return f"{client.uri}/{endpoint.lstrip('/')}"
        if endpoint.startswith(client.uri + "/"):
            return endpoint
    if catalog._offers("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"):
        return catalog._table_url(ident) + "/credentials"
    return ""


def table_file_io(
    catalog: RestCatalog,
    ident: tuple[str, ...] | None,
    properties: Mapping[str, str],
    location: str,
) -> FileIO:
    """The FileIO of a REST table: a :class:`VendedFileIO` refreshing through ``catalog``
    when the vended credentials expire and the server says where to refresh them, else an
    ordinary one."""
    plain = load_file_io(properties, location)
    if ident is None or S3_SESSION_TOKEN_EXPIRES_AT_MS not in properties:
        return plain
    url = _refresh_url(catalog, ident, properties)
    if not url:
        return plain
    client = catalog._client
    operation = f"refresh the storage credentials of table {'.'.join(ident)}"

    def refresh() -> dict[str, str] | None:
        answer = client.call(
            "GET", url, operation, response=LoadCredentialsResponse, errors="table"
        )
        best = StorageCredential.best_for(answer.storage_credentials if answer else (), location)
        return dict(best.config) if best is not None else None

    return VendedFileIO(properties, refresh)
