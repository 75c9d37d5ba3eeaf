"""The web page over a catalog: :func:`create_ui_app` is a FastAPI app (the REST server's
web stack) whose pages are rendered on the server with Jinja2 (autoescaped) and whose charts
are inline SVG drawn by :mod:`icepark.ui.svg`; the page fetches nothing from the network.

Pages (all ``GET``; the app has no route that changes anything, so other methods get 405)::

    /                           catalog: namespaces, tables, rows, sizes, last commit, health
    /t/{table}                  overview: schema and its history, specs, sort orders, properties
    /t/{table}/history          snapshots, refs and ancestry (?snapshot=ID: what it changed)
    /t/{table}/files            file sizes, partitions and their skew, deletes, manifests
    /t/{table}/query            ?filter=..&ref=..&timed=1: the pruning funnel of scan.explain()
                                (run once the form is sent; an empty filter is a full scan;
                                ``timed`` also times a real planning run, as long again)
    /t/{table}/health           the doctor's findings and fix commands (?orphans=1 lists storage)
    /t/{table}/badge.svg        the doctor's verdict as a badge (the catalog page's images, so
                                the page shows at once and each table's doctor runs apart;
                                no storage listing, kept per metadata file and hour, with an
                                ETag from both, so an unchanged table costs a catalog lookup)
    /ui.js                      the one script: copy buttons (same origin, allowed by the CSP)

Everything a page shows from storage (names, properties, paths, partition values) is
untrusted: templates autoescape, the SVG charts escape their text, and every answer carries a
Content-Security-Policy that runs no inline script, so an injected ``<script>`` neither shows
as markup nor runs. An error is a page with the message: 404 for an unknown table or
snapshot, 400 for a filter that does not parse, 500 for a table that cannot be read.
A request whose ``Host`` header is not the address the page is served on (by default only
loopback names) gets a 400, so a hostile site that rebinds its name to 127.0.0.1 cannot read
the pages.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.middleware.trustedhost import TrustedHostMiddleware

from icepark.catalog.base import Catalog
from icepark.errors import (
    IceparkError,
    InvalidAvroFileError,
    InvalidMetadataError,
    NoSuchNamespaceError,
    NoSuchTableError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.lru import LruCache
from icepark.table.maintenance.doctor import diagnose
from icepark.table.table import Table
from icepark.table.units import human_bytes
from icepark.ui.files import files_page
from icepark.ui.history import history_graph, history_rows, snapshot_detail, when
from icepark.ui.overview import schema_history, schema_rows, sort_rows, spec_rows
from icepark.ui.pages import badge_of, catalog_rows, query_page
from icepark.ui.svg import badge_svg
from icepark.ui.urls import identifier_of, table_path

__all__ = ["LOOPBACK_HOSTS", "create_ui_app"]

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
"""The ``Host`` headers the page answers by default: a page another site reaches by
rebinding its own name to 127.0.0.1 (DNS rebinding) sends that name and gets a 400."""

_HERE = Path(__file__).parent
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_BADGE_CACHE_SIZE = 512
"""Health badges kept (one per table and metadata file): a catalog page's worth and more."""
_PAGES = (
    ("", "overview"),
    ("history", "history"),
    ("files", "files"),
    ("query", "query"),
    ("health", "health"),
)


def _status_of(exc: Exception) -> int:
    """404 for a table or namespace that is not there, 400 for what the request got wrong
    (a filter that does not parse or bind, an unknown ref), 500 for the rest (a table whose
    metadata or manifests cannot be read, a catalog that fails)."""
    if isinstance(exc, NoSuchTableError | NoSuchNamespaceError):
        return 404
    if isinstance(exc, InvalidMetadataError | InvalidAvroFileError):
        return 500
    if isinstance(exc, ValidationError | UnsupportedOperationError):
        return 400
    return 500


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(table_path=table_path, human_bytes=human_bytes, pages=_PAGES)
    env.filters["num"] = lambda v: "" if v is None else f"{v:,}"
    env.filters["bytes"] = lambda v: "" if v is None else human_bytes(v)
    return env


def create_ui_app(
    catalog: Catalog,
    *,
    title: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """The read-only web page over ``catalog``, a FastAPI app rendered on the server (see the
    module docstring for its pages); run it with any ASGI server or with ``icepark ui``. It
    has no route that changes anything.

    Args:
        catalog: the catalog whose namespaces and tables the page shows.
        title: the heading of every page (default: ``catalog <name>``).
        allowed_hosts: the ``Host`` headers answered (default :data:`LOOPBACK_HOSTS`);
            other requests get a 400, so a site rebinding its name to 127.0.0.1 cannot
            read the pages. Serving on another address, name it here (``"*"`` allows all).

    Returns:
        The app.
    """
    env = _environment()
    app = FastAPI(title="icepark ui", docs_url=None, redoc_url=None, openapi_url=None)
    hosts = list(LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)
    heading = title or f"catalog {catalog.name}"

    def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(heading=heading, **context)
        return HTMLResponse(html, status_code=status)

    def load(name: str) -> Table:
        return catalog.load_table(identifier_of(name))

    def table_page(table: Table, page: str, **context: Any) -> HTMLResponse:
        """One of a table's tabs (``page`` a slug of ``_PAGES``): its template, title and
        tab bar."""
        label = dict(_PAGES)[page]
        title = f"{table.name}: {label}" if page else table.name
        return render(f"{label}.html", title=title, table=table, page=page, **context)

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        for key, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    def error_page(status: int, kind: str, message: str) -> HTMLResponse:
        title = {404: "not found", 400: "bad request"}.get(status, "error")
        return render("error.html", status, title=title, kind=kind, message=message)

    @app.exception_handler(IceparkError)
    async def _icepark_error(request: Request, exc: IceparkError) -> HTMLResponse:
        return error_page(_status_of(exc), type(exc).__name__, str(exc))

    @app.exception_handler(Exception)  # anything else: still a page, still escaped
    async def _error(request: Request, exc: Exception) -> HTMLResponse:
        return error_page(500, type(exc).__name__, str(exc))

    @app.get("/ui.js")
    def _script() -> Response:
        return Response((_HERE / "templates" / "ui.js").read_text(), media_type="text/javascript")

    @app.get("/", response_class=HTMLResponse)
    def catalog_page() -> HTMLResponse:
        namespaces, rows = catalog_rows(catalog)
        return render("catalog.html", title="catalog", namespaces=namespaces, rows=rows)

    @app.get("/t/{name}", response_class=HTMLResponse)
    def overview(name: str) -> HTMLResponse:
        table = load(name)
        md = table.metadata
        snap = md.current_snapshot()
        return table_page(
            table,
            "",
            fields=schema_rows(md.schema()),
            schemas=schema_history(table),
            specs=spec_rows(table),
            orders=sort_rows(table),
            properties=sorted(md.properties.items()),
            facts=[
                ("format version", md.format_version),
                ("location", md.location),
                ("table uuid", md.table_uuid),
                ("current snapshot", snap.snapshot_id if snap else "none"),
                ("last updated", when(md.last_updated_ms)),
                ("metadata file", table.metadata_location),
            ],
        )

    @app.get("/t/{name}/history", response_class=HTMLResponse)
    def history(name: str, snapshot: int | None = None) -> HTMLResponse:
        table = load(name)
        rows = history_rows(table)
        detail = snapshot_detail(table, snapshot) if snapshot is not None else None
        if snapshot is not None and detail is None:
            message = f"Table {table.name} has no snapshot {snapshot}"
            return error_page(404, "unknown snapshot", message)
        return table_page(
            table,
            "history",
            rows=rows,
            graph=history_graph(rows, table_path(table.identifier, "history"), snapshot),
            refs=sorted(table.metadata.refs.items()),
            detail=detail,
        )

    @app.get("/t/{name}/files", response_class=HTMLResponse)
    def files(name: str) -> HTMLResponse:
        table = load(name)
        return table_page(table, "files", data=files_page(table))

    @app.get("/t/{name}/query", response_class=HTMLResponse)
    def query(name: str, filter: str | None = None, ref: str = "", timed: int = 0) -> HTMLResponse:
        table = load(name)
        return table_page(
            table,
            "query",
            filter=filter or "",
            ref=ref,
            refs=sorted(table.metadata.refs),
            timed=bool(timed),
            data=(
                query_page(table, filter or "", ref, time_planning=bool(timed))
                if filter is not None or ref
                else None
            ),
        )

    badges: LruCache[tuple[str, int], tuple[str, str]] = LruCache(_BADGE_CACHE_SIZE)

    def badge_for(table: Table, hour: int) -> tuple[str, str]:
        """The doctor's verdict without listing storage, kept per metadata file (a commit
        writes a new one) and hour (snapshots age into the retention's reach)."""
        return badges.get_or_compute(
            (table.metadata_location, hour),
            lambda: badge_of(diagnose(table, orphans=False, listing=False)),
        )

    @app.get("/t/{name}/badge.svg")
    def badge(name: str, request: Request) -> Response:
        table = load(name)
        hour = int(time.time() // 3600)
        digest = hashlib.sha256(f"{table.metadata_location}\n{hour}".encode()).hexdigest()
        headers = {"ETag": f'"{digest[:32]}"', "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == headers["ETag"]:
            return Response(status_code=304, headers=headers)
        level, text = badge_for(table, hour)
        return Response(badge_svg(level, text), media_type="image/svg+xml", headers=headers)

    @app.get("/t/{name}/health", response_class=HTMLResponse)
    def health(name: str, orphans: int = 0) -> HTMLResponse:
        table = load(name)
        report = diagnose(table, orphans=bool(orphans))
        badge, badge_text = badge_of(report)
        return table_page(
            table,
            "health",
            report=report,
            badge=badge,
            badge_text=badge_text,
            orphans=bool(orphans),
        )

    return app
