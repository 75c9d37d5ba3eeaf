"""A small REST catalog that misbehaves on request, for the failures a real server rarely shows.

Its tables live in an icepark ``SqlCatalog`` (the behaviour under test is the client's, not
this server's): config, OAuth tokens, namespaces, create/load/commit of tables, multi-table commits. Rules inject
faults before a request reaches that backend: a status with headers (429 + Retry-After, 401,
403, 500, 503...), a dropped connection, or the request applied and then the connection
dropped (the commit landed, the client cannot know). Every request is recorded with its
headers. It binds 127.0.0.1 only and runs in a thread.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from icepark.catalog.sql import SqlCatalog
from icepark.errors import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from icepark.spec.metadata import table_metadata_to_dict
from icepark.spec.schema import schema_from_json
from icepark.spec.updates import table_requirement_from_json, table_update_from_json


@dataclass
class Rule:
    """Answer ``status`` (or ``action``: ``drop``, ``apply-then-drop``, ``delay``) to the next ``times``
    requests whose method is ``method`` and whose path contains ``path`` (a table's metrics
    reports, which a client sends from a thread of its own, only when ``path`` names
    ``/metrics``: a rule for the table's commits must not catch them)."""

    method: str
    path: str
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    times: int = 1
    action: str = "status"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: str
    query: str = ""


class FaultServer:
    def __init__(self, root: Path) -> None:
        self.backend = SqlCatalog(
            "backend", {"uri": f"sqlite:///{root}/backend.db", "warehouse": str(root / "wh")}
        )
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        self.defaults: dict[str, str] = {}
        self.overrides: dict[str, str] = {}
        self.endpoints: list[str] | None = None
        self.table_config: dict[str, str] = {}
        self.storage_credentials: list[dict[str, Any]] | None = None
        self.token_lifetime: int | None = None
        self.require_token = False
        self.tokens_issued: list[str] = []
        self.revoked: set[str] = set()
        self.token_forms: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                server._handle(self)

            do_GET = do_POST = do_DELETE = do_HEAD = _serve

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def add(self, rule: Rule) -> Rule:
        self.rules.append(rule)
        return rule

    def requests_to(self, method: str, fragment: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and fragment in s.path]

    # -- serving ---------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length).decode() if length else ""
        url = urlsplit(h.path)
        with self._lock:
            self.seen.append(Seen(h.command, url.path, dict(h.headers.items()), body, url.query))
            rule = next(
                (
                    r
                    for r in self.rules
                    if r.times > 0
                    and r.method == h.command
                    and r.path in url.path
                    and ("/metrics" in r.path or not url.path.endswith("/metrics"))
                ),
                None,
            )
            if rule is not None:
                rule.times -= 1
        if rule is not None and rule.action == "drop":
            h.close_connection = True
            h.connection.close()
            return
        if rule is not None and rule.action == "delay":  # a slow answer of ``status``
            time.sleep(1.0)
            self._reply(h, rule.status, rule.body or {}, rule.headers)
            return
        if rule is not None and rule.action == "status":
            payload = rule.body or {
                "error": {
                    "message": f"injected {rule.status}",
                    "type": "Injected",
                    "code": rule.status,
                }
            }
            self._reply(h, rule.status, payload, rule.headers)
            return
        try:
            status, payload = self._route(h, url.path, parse_qs(url.query), body)
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            kind = (
                "NoSuchTableException"
                if isinstance(exc, NoSuchTableError)
                else "NoSuchNamespaceException"
            )
            status, payload = 404, _error(404, kind, str(exc))
        except (TableAlreadyExistsError, NamespaceAlreadyExistsError) as exc:
            status, payload = 409, _error(409, "AlreadyExistsException", str(exc))
        except CommitFailedError as exc:
            status, payload = 409, _error(409, "CommitFailedException", str(exc))
        if rule is not None and rule.action == "apply-then-drop":
            h.close_connection = True
            h.connection.close()
            return
        self._reply(h, status, payload, {})

    @staticmethod
    def _reply(
        h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str]
    ) -> None:
        data = json.dumps(payload).encode() if payload is not None else b""
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if data and h.command != "HEAD":
            h.wfile.write(data)

    def _route(
        self, h: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]], body: str
    ) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.split("/") if p]
        if parts == ["v1", "oauth", "tokens"]:
            form = {k: v[0] for k, v in parse_qs(body).items()}
            self.token_forms.append(form)
            if form.get("client_secret") != "supersecret":
                return 401, {"error": "invalid_client", "error_description": "bad client"}
            token = f"tok-{len(self.tokens_issued) + 1}"
            self.tokens_issued.append(token)
            answer: dict[str, Any] = {"access_token": token, "token_type": "bearer"}
            if self.token_lifetime is not None:
                answer["expires_in"] = self.token_lifetime
            return 200, answer
        if self.require_token:
            auth = h.headers.get("Authorization", "")
            token = auth.removeprefix("Bearer ")
            if token not in self.tokens_issued or token in self.revoked:
                return 401, _error(401, "NotAuthorizedException", "token not valid")
        if parts == ["v1", "config"]:
            config: dict[str, Any] = {"defaults": self.defaults, "overrides": self.overrides}
            if self.endpoints is not None:
                config["endpoints"] = self.endpoints
            return 200, config
        prefix = self.overrides.get("prefix") or self.defaults.get("prefix")
        rest = parts[1:]
        if prefix:
            assert rest[0] == prefix, path
            rest = rest[1:]
        cat = self.backend
        if rest == ["namespaces"] and h.command == "GET":
            return 200, {"namespaces": [list(n) for n in cat.list_namespaces()]}
        if rest == ["namespaces"]:
            req = json.loads(body)
            cat.create_namespace(tuple(req["namespace"]), req.get("properties") or {})
            return 200, {"namespace": req["namespace"], "properties": req.get("properties") or {}}
        if rest == ["transactions", "commit"]:
            req = json.loads(body)
            cat.commit_tables(
                [
                    (
                        (*c["identifier"]["namespace"], c["identifier"]["name"]),
                        [table_requirement_from_json(r) for r in c["requirements"]],
                        [table_update_from_json(u) for u in c["updates"]],
                    )
                    for c in req["table-changes"]
                ]
            )
            return 204, None
        ns = tuple(rest[1].split("\x1f")) if len(rest) > 1 else ()
        if len(rest) == 2:
            props = cat.load_namespace_properties(ns)
            return (
                (204, None)
                if h.command == "HEAD"
                else (200, {"namespace": list(ns), "properties": props})
            )
        if len(rest) == 3 and rest[2] == "tables":
            req = json.loads(body)
            ident = (*ns, req["name"])
            table = cat.create_table(
                ident, schema_from_json(req["schema"]), properties=req.get("properties")
            )
            return 200, self._load_result(table.metadata_location, table.metadata)
        ident = (*ns, rest[3])
        if h.command == "POST":
            req = json.loads(body)
            result = cat.commit_table(
                ident,
                None,
                None,
                [table_requirement_from_json(r) for r in req["requirements"]],
                [table_update_from_json(u) for u in req["updates"]],
            )
            return 200, {
                "metadata-location": result.metadata_location,
                "metadata": table_metadata_to_dict(result.metadata),
            }
        if h.command == "DELETE":
            cat.drop_table(ident)
            return 204, None
        table = cat.load_table(ident)
        if h.command == "HEAD":
            return 204, None
        return 200, self._load_result(table.metadata_location, table.metadata)

    def _load_result(self, location: str, metadata: Any) -> dict[str, Any]:
        result: dict[str, Any] = {
            "metadata-location": location,
            "metadata": table_metadata_to_dict(metadata),
            "config": self.table_config,
        }
        if self.storage_credentials is not None:
            result["storage-credentials"] = self.storage_credentials
        return result


def _error(code: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}
