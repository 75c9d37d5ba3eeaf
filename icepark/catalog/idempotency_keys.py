"""The outcomes of REST mutations by ``Idempotency-Key``, kept in the SQL catalog's own database
so that every server process on that database answers a repeated key alike.

One row per (catalog, scope, key) in ``icepark_idempotency_keys`` (created beside the JDBC
catalog's tables, the way :class:`~icepark.catalog.sql.SqlCatalog` creates its own, unless
``init-catalog-tables`` is false). The scope is the caller (the principal's client id), so a key
names nothing of another principal's. How a key flows:

1. :meth:`IdempotencyKeys.claim`: an ``INSERT`` of a ``running`` row with a fresh claim token.
   The primary key makes it atomic across processes: of two requests with one key, one inserts
   and runs; the other finds the row (:class:`KeyEntry`: running, or done with its outcome).
   A row whose lifetime has passed is taken over by a compare-and-swap on its claim token.
2. :meth:`IdempotencyKeys.finish` stores the outcome (a JSON text the server renders again) and
   marks the row ``done`` (:meth:`~IdempotencyKeys.finish_soon`: written behind the answer by a
   thread, several at once, since on SQLite each write is a synced transaction);
   :meth:`IdempotencyKeys.release` deletes the claim instead (an outcome that must not be
   replayed, such as a 5xx): a retry then runs anew.
3. Rows live ``lifetime`` seconds from the key's first use, then are purged (at most once a
   minute per process, by ``expires_ms``).

The mutation itself and the outcome's write are two database transactions: a server that dies
between them leaves the key ``running`` until it expires, so a retry is never applied twice,
only told that the first request has not finished.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    MetaData,
    String,
    Text,
    and_,
    delete,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy import Table as SqlTable
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

__all__ = ["IdempotencyKeys", "KeyEntry", "KEYS_TABLE", "idempotency_keys_for"]

KEYS_TABLE = "icepark_idempotency_keys"
RUNNING, DONE = "running", "done"
_PURGE_EVERY_S = 60.0
_CLAIM_ATTEMPTS = 5
_WRITE_ATTEMPTS = 20

_log = logging.getLogger(__name__)
_metadata = MetaData()
_keys = SqlTable(
    KEYS_TABLE,
    _metadata,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("scope", String(255), primary_key=True, nullable=False),
    Column("idempotency_key", String(64), primary_key=True, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("state", String(8), nullable=False),
    Column("claim", String(32), nullable=False),
    Column("first_seen_ms", BigInteger, nullable=False),
    Column("expires_ms", BigInteger, nullable=False),
    Column("outcome", Text),
    Index(f"ix_{KEYS_TABLE}_expires", "expires_ms"),
)


@dataclass(frozen=True)
class KeyEntry:
    """A key as stored: ``claim`` is set when this call claimed it (run the request, then
    ``finish`` or ``release``); otherwise ``state`` is ``running`` or ``done`` (with the
    first request's ``outcome``) and ``fingerprint`` tells whether it was the same request."""

    scope: str
    key: str
    fingerprint: str
    state: str
    outcome: str | None = None
    claim: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


class IdempotencyKeys:
    """Outcomes by (scope, key) in ``engine``'s database, for the catalog named ``catalog``."""

    def __init__(self, engine: Engine, catalog: str, *, create: bool = True) -> None:
        self.engine = engine
        self.catalog = catalog
        self._purged = 0.0
        self._lock = threading.Lock()
        # outcomes answered but not yet written (finish_soon), by (scope, key)
        self._pending: dict[tuple[str, str], tuple[KeyEntry, str]] = {}
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        if create:
            _create_table(engine)
        atexit.register(_flush_at_exit, weakref.ref(self))

    def __repr__(self) -> str:
        return f"IdempotencyKeys({self.catalog!r}, {self.engine.url.render_as_string()!r})"

    def _row(self, scope: str, key: str) -> Any:
        return and_(
            _keys.c.catalog_name == self.catalog,
            _keys.c.scope == scope,
            _keys.c.idempotency_key == key,
        )

    def claim(self, scope: str, key: str, fingerprint: str, lifetime_s: float) -> KeyEntry:
        """Claim ``key`` for a request (``claim`` set on the answer) or find its first request
        (running or done). An expired row is taken over as if the key were new."""
        self._purge_now_and_then()
        for _ in range(_CLAIM_ATTEMPTS):
            now = _now_ms()
            token = uuid.uuid4().hex
            values = {
                "fingerprint": fingerprint,
                "state": RUNNING,
                "claim": token,
                "first_seen_ms": now,
                "expires_ms": now + int(lifetime_s * 1000),
                "outcome": None,
            }
            names = {"catalog_name": self.catalog, "scope": scope, "idempotency_key": key}
            if self._insert_new({**names, **values}):
                return KeyEntry(scope, key, fingerprint, RUNNING, claim=token)
            # the key is known: its first request ran or runs
            pending = self._pending_entry(scope, key)
            if pending is not None:
                return pending
            found = self._read(scope, key)
            if found is None:
                continue  # released meanwhile: claim it again
            row, held_by, expires = found
            if expires >= now:
                return row
            with self.engine.begin() as conn:  # expired: take it over unless another did
                taken = conn.execute(
                    update(_keys)
                    .where(self._row(scope, key), _keys.c.claim == held_by)
                    .values(**values)
                ).rowcount
            if taken == 1:
                return KeyEntry(scope, key, fingerprint, RUNNING, claim=token)
        raise RuntimeError(f"Cannot claim idempotency key {key}: it changes hands too often")

    def _insert_new(self, row: dict[str, Any]) -> bool:
        """Insert the row unless its key exists (``ON CONFLICT DO NOTHING`` where the database
        has it, so a repeat is no error in its log); True when inserted."""
        dialect = self.engine.dialect.name
        try:
            with self.engine.begin() as conn:
                if dialect in ("postgresql", "sqlite"):
                    module = postgresql if dialect == "postgresql" else sqlite
                    statement = module.insert(_keys).values(**row).on_conflict_do_nothing()
                    return bool(conn.execute(statement).rowcount == 1)
                conn.execute(insert(_keys).values(**row))
                return True
        except IntegrityError:
            return False

    def get(self, scope: str, key: str) -> KeyEntry | None:
        """The key's row, or None when it is unknown, released or expired."""
        pending = self._pending_entry(scope, key)
        if pending is not None:
            return pending
        found = self._read(scope, key)
        if found is None or found[2] < _now_ms():
            return None
        return found[0]

    def _read(self, scope: str, key: str) -> tuple[KeyEntry, str, int] | None:
        """The row as an entry (no claim: it is not the caller's), its claim token and its
        expiry."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(
                    _keys.c.fingerprint,
                    _keys.c.state,
                    _keys.c.outcome,
                    _keys.c.claim,
                    _keys.c.expires_ms,
                ).where(self._row(scope, key))
            ).first()
        if row is None:
            return None
        return KeyEntry(scope, key, row[0], row[1], row[2]), str(row[3]), int(row[4])

    def finish(self, entry: KeyEntry, outcome: str) -> bool:
        """Store the outcome of the request that claimed ``entry``; False when the claim was
        lost meanwhile (the key expired and another request took it over)."""
        with self.engine.begin() as conn:
            done = conn.execute(
                update(_keys)
                .where(self._row(entry.scope, entry.key), _keys.c.claim == entry.claim)
                .values(state=DONE, outcome=outcome)
            ).rowcount
        if done != 1:
            _log.warning("idempotency key %s expired before its request finished", entry.key)
        return done == 1

    def finish_soon(self, entry: KeyEntry, outcome: str) -> None:
        """:meth:`finish`, written behind the answer: a thread of this store writes the
        outcomes that wait, several in one transaction, and this process answers repeats from
        memory meanwhile (another process sees the key running until it is written, and waits
        for it). Written before the process exits normally (:meth:`flush`)."""
        with self._lock:
            self._pending[(entry.scope, entry.key)] = (entry, outcome)
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(
                    target=self._write_behind, name="idempotency-keys", daemon=True
                )
                self._writer.start()
        self._wake.set()

    def flush(self) -> None:
        """Write every outcome that waits, now."""
        self._write_pending(attempts=3)

    def _pending_entry(self, scope: str, key: str) -> KeyEntry | None:
        with self._lock:
            found = self._pending.get((scope, key))
        if found is None:
            return None
        entry, outcome = found
        return KeyEntry(scope, key, entry.fingerprint, DONE, outcome)

    def _write_behind(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            self._write_pending(attempts=_WRITE_ATTEMPTS)

    def _write_pending(self, attempts: int) -> None:
        with self._lock:
            batch = dict(self._pending)
        if not batch:
            return
        for attempt in range(attempts):
            try:
                with self.engine.begin() as conn:
                    for entry, outcome in batch.values():
                        conn.execute(
                            update(_keys)
                            .where(self._row(entry.scope, entry.key), _keys.c.claim == entry.claim)
                            .values(state=DONE, outcome=outcome)
                        )
                break
            except DBAPIError as exc:  # a busy database: again, a little later
                if attempt == attempts - 1:
                    _log.warning("%d idempotency outcomes not stored: %s", len(batch), exc.orig)
                time.sleep(0.05 * (attempt + 1))
        with self._lock:  # written (or given up: those keys stay running until they expire)
            for name, item in batch.items():
                if self._pending.get(name) is item:
                    del self._pending[name]

    def release(self, entry: KeyEntry) -> None:
        """Forget the claim of ``entry`` (its outcome is not kept: a retry runs anew)."""
        with self.engine.begin() as conn:
            conn.execute(
                delete(_keys).where(self._row(entry.scope, entry.key), _keys.c.claim == entry.claim)
            )

    def purge(self, now_ms: int | None = None) -> int:
        """Delete the rows whose lifetime has passed; returns how many."""
        cutoff = _now_ms() if now_ms is None else now_ms
        with self.engine.begin() as conn:
            gone = conn.execute(
                delete(_keys).where(
                    _keys.c.catalog_name == self.catalog, _keys.c.expires_ms < cutoff
                )
            ).rowcount
        return int(gone or 0)

    def _purge_now_and_then(self) -> None:
        with self._lock:
            if time.monotonic() - self._purged < _PURGE_EVERY_S:
                return
            self._purged = time.monotonic()
        try:
            self.purge()
        except DBAPIError as exc:  # a busy database: the next claim tries again
            _log.info("idempotency keys not purged: %s", exc.orig)
            self._purged = 0.0


def _flush_at_exit(ref: weakref.ref[IdempotencyKeys]) -> None:
    keys = ref()
    if keys is not None:
        keys.flush()


def _create_table(engine: Engine) -> None:
    """``CREATE TABLE`` (and its index) if missing; two processes starting at once on one
    PostgreSQL database may both try: the loser finds the table made."""
    try:
        _metadata.create_all(engine, checkfirst=True)
    except DBAPIError:
        if not inspect(engine).has_table(KEYS_TABLE):
            raise


def idempotency_keys_for(catalog: Any, properties: Mapping[str, str]) -> IdempotencyKeys | None:
    """The key store of a catalog that has a SQL database (``engine``), else None. The table
    is created unless ``init-catalog-tables`` is false, as the catalog's own; with it false
    and no table, there is no store."""
    engine = getattr(catalog, "engine", None)
    if not isinstance(engine, Engine):
        return None
    create = properties.get("init-catalog-tables", "true").lower() == "true"
    if not create and not inspect(engine).has_table(KEYS_TABLE):
        _log.warning("no %s table and init-catalog-tables=false: no idempotency", KEYS_TABLE)
        return None
    return IdempotencyKeys(engine, catalog.name, create=create)
