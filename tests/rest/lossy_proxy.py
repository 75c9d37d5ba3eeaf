"""A reverse proxy that loses answers: one address in front of several REST servers, which
forwards every request to a server, waits for its whole answer, and for the requests it is told
to hit closes the client's connection instead of passing the answer on. The server has done the
work (a commit landed); the client cannot know.

* ``lose(method, path)`` says which requests lose their answer. A request carrying an
  ``Idempotency-Key`` loses only its first answer: a repeat of the key is passed through, and
  goes to another server than the one that took the first (several processes must agree). A
  request without a key loses its answer every time.
* Servers are taken in turn otherwise.
* Every request is recorded (:class:`Passed`): method, path, key, server, status, lost.

It binds 127.0.0.1 only and serves from threads of the test process.
"""

from __future__ import annotations

import http.client
import itertools
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server", "date"}


@dataclass
class Passed:
    method: str
    path: str
    key: str | None
    server: int
    status: int
    lost: bool


class LossyProxy:
    def __init__(self, servers: list[str], lose: Callable[[str, str], bool]) -> None:
        self.servers = [urlsplit(s) for s in servers]
        self.lose = lose
        self.passed: list[Passed] = []
        self._first_server: dict[str, int] = {}  # key -> the server that took its first send
        self._turn = itertools.count()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_DELETE = do_HEAD = _serve

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> LossyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lost(self) -> list[Passed]:
        with self._lock:
            return [p for p in self.passed if p.lost]

    def _choose(self, key: str | None, path: str, method: str) -> tuple[int, bool]:
        """(server, lose the answer) for one request."""
        with self._lock:
            turn = next(self._turn) % len(self.servers)
            if not self.lose(method, path):
                return turn, False
            if key is None:
                return turn, True
            first = self._first_server.get(key)
            if first is None:
                self._first_server[key] = turn
                return turn, True
            return (first + 1) % len(self.servers), False

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        key = h.headers.get("Idempotency-Key")
        path = urlsplit(h.path).path
        server, lose = self._choose(key, path, h.command)
        target = self.servers[server]
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        try:
            conn.request(h.command, h.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            status, reply_headers = answer.status, answer.getheaders()
        finally:
            conn.close()
        with self._lock:
            self.passed.append(Passed(h.command, path, key, server, status, lose))
        if lose:  # the server answered; the client never hears it
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            h.connection.close()
            return
        h.send_response(status)
        for name, value in reply_headers:
            if name.lower() not in _HOP:
                h.send_header(name, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if data and h.command != "HEAD":
            h.wfile.write(data)
