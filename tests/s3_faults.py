"""A loopback HTTP proxy in front of an S3 server that answers some requests with errors.

moto cannot throttle, so tests that need an S3 that says ``503 SlowDown`` (or fails
outright) put this proxy between the client and moto: every request is forwarded unchanged
(headers and body; moto does not check signatures by default, so the ``Host`` header naming
the proxy is fine), except those the proxy's rule picks, which get an S3 error response
without reaching moto::

    with FaultyS3Proxy(moto_endpoint, share=0.2, seed=7) as proxy:
        props = {**s3_props, "s3.endpoint": proxy.endpoint}
        ...
        proxy.served_errors     # how many requests got the error
        proxy.fail_when = lambda method, path: method in ("PUT", "POST")  # every write fails

``kinds`` picks, for each chosen request, one of: ``503`` (SlowDown, the default), ``500``
(InternalError), ``drop`` (the connection closes before any answer: the request may or may
not have reached moto, as ``drop-after`` makes sure it did) and ``slow`` (the request is
forwarded after ``delay`` seconds). ``served`` counts each kind.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

__all__ = ["FaultyS3Proxy", "SLOW_DOWN"]

# The shortest error document S3 clients parse: the AWS SDK writes an error's body into the
# buffer meant for the object's bytes, so a longer one overflows a small ranged read.
SLOW_DOWN = b"<Error><Code>SlowDown</Code></Error>"
INTERNAL_ERROR = b"<Error><Code>InternalError</Code></Error>"
KINDS = ("503", "500", "drop", "drop-after", "slow")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
}


class FaultyS3Proxy:
    """Forwards HTTP requests to ``upstream``; answers ``503 SlowDown`` to a ``share`` of
    them (chosen by a seeded random generator) and to every request ``fail_when`` picks."""

    def __init__(
        self,
        upstream: str,
        share: float = 0.0,
        seed: int = 0,
        kinds: tuple[str, ...] = ("503",),
        delay: float = 0.5,
    ) -> None:
        parts = urlsplit(upstream)
        unknown = set(kinds) - set(KINDS)
        assert not unknown, f"unknown fault kinds {unknown}: use {KINDS}"
        self.kinds = kinds
        self.delay = delay
        self.served: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.share = share
        self.fail_when: Callable[[str, str], bool] | None = None
        self.requests = 0
        self.served_errors = 0
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FaultyS3Proxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultyS3Proxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _fault(self, method: str, path: str) -> str | None:
        """The fault this request gets, or None."""
        with self._lock:
            self.requests += 1
            self.seen.append((method, path))
            rule = self.fail_when
            fail = (rule is not None and rule(method, path)) or self._random.random() < self.share
            if not fail:
                return None
            # (one kind draws nothing: a seed picks the same requests as before kinds existed)
            kind = self.kinds[0] if len(self.kinds) == 1 else self._random.choice(self.kinds)
            self.served[kind] += 1
            if kind != "slow":
                self.served_errors += 1
            return kind

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _error(self, status: int, reason: str, document: bytes) -> None:
                self.send_response(status, reason)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(document)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(document)

            def _drop(self) -> None:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._fault(self.command, self.path)
                if fault == "503":
                    return self._error(503, "Slow Down", SLOW_DOWN)
                if fault == "500":
                    return self._error(500, "Internal Server Error", INTERNAL_ERROR)
                if fault == "drop":
                    return self._drop()
                if fault == "slow":
                    time.sleep(proxy.delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                if body or "Content-Length" in self.headers:
                    headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(
                    proxy.upstream_host, proxy.upstream_port, timeout=60
                )
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                    self.send_response(response.status, response.reason)
                    for key, value in response.getheaders():
                        if key.lower() in _HOP_BY_HOP or key.lower() == "content-length":
                            continue
                        self.send_header(key, value)
                    if fault == "drop-after":  # moto did it; the client never hears
                        return self._drop()
                    length = response.getheader("Content-Length")
                    if self.command == "HEAD":
                        self.send_header("Content-Length", length or "0")
                    else:
                        self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        return Handler
