"""Who may call the REST catalog server, and what each caller may do.

- :class:`Principals`: the clients a principals file names, each with a client secret (stored as
  given or as a salted PBKDF2 hash made by :func:`hash_secret`) and grants: a namespace key
  (``"sales"`` covers ``sales`` and everything under it, ``"sales.eu"`` covers ``sales.eu``
  and below, ``"*"`` every namespace) mapped to a level, ``read`` < ``write`` < ``admin``.
- :class:`TokenSigner`: bearer tokens issued by ``POST /v1/oauth/tokens`` (the client
  credentials flow): ``<payload>.<HMAC-SHA256>``, both base64url, the payload naming the
  client and the expiry. The key is ``ICEPARK_SERVE_TOKEN_KEY`` when set, else random per
  process; with a random key a token is valid only at the process that issued it, so several
  server processes behind one address need the variable set to one value.

What a level allows: ``read`` lists and loads; ``write`` also creates, commits to, renames and
drops tables; ``admin`` also creates, drops and alters namespaces. Secrets are compared in
constant time and never appear in a repr, a log line or an error message.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icepark.errors import CatalogConfigError, ValidationError

__all__ = [
    "READ",
    "WRITE",
    "ADMIN",
    "Principal",
    "Principals",
    "TokenSigner",
    "hash_secret",
    "verify_secret",
    "TOKEN_KEY_ENV",
]

READ, WRITE, ADMIN = 1, 2, 3
_LEVELS = {"read": READ, "write": WRITE, "admin": ADMIN}
LEVEL_NAMES = {v: k for k, v in _LEVELS.items()}
TOKEN_KEY_ENV = "ICEPARK_SERVE_TOKEN_KEY"

_HASH_SCHEME = "pbkdf2_sha256"
_HASH_ITERATIONS = 260_000


def hash_secret(secret: str, *, iterations: int = _HASH_ITERATIONS) -> str:
    """A salted PBKDF2-SHA256 hash of a client secret, to store in the principals file instead
    of the secret itself (``icepark serve hash-secret`` prints one):
    ``pbkdf2_sha256$<iterations>$<salt>$<hash>`` (salt and hash base64url).

    Args:
        secret: the client secret.
        iterations: PBKDF2 iterations (more is slower to check and to guess).

    Returns:
        The hash, for a principal's ``client-secret``.

    Raises:
        ValidationError: the secret is empty.
    """
    if not secret:
        raise ValidationError("Cannot hash an empty client secret")
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, iterations)
    return f"{_HASH_SCHEME}${iterations}${_b64(salt)}${_b64(digest)}"


def verify_secret(given: str, stored: str) -> bool:
    """Whether ``given`` is the secret ``stored`` holds (a hash from :func:`hash_secret` or the
    secret itself); constant-time either way."""
    if stored.startswith(_HASH_SCHEME + "$"):
        try:
            _, iterations, salt, digest = stored.split("$")
            expected = _unb64(digest)
            actual = hashlib.pbkdf2_hmac(
                "sha256", given.encode("utf-8"), _unb64(salt), int(iterations)
            )
        except (ValueError, TypeError):
            return False
        return hmac.compare_digest(actual, expected)
    return hmac.compare_digest(given.encode("utf-8"), stored.encode("utf-8"))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Principal:
    """One client: its id, its stored secret (never shown) and its grants by namespace key."""

    client_id: str
    secret: str = field(repr=False)
    grants: Mapping[str, int] = field(default_factory=dict)

    def level(self, namespace: Sequence[str]) -> int:
        """The highest level a grant gives on ``namespace`` (0: none)."""
        best = 0
        for key, level in self.grants.items():
            if key == "*" or _covers(tuple(key.split(".")), tuple(namespace)):
                best = max(best, level)
        return best

    def may_see(self, namespace: Sequence[str]) -> bool:
        """Whether a listing may show ``namespace``: a grant covers it, or lies under it (so
        the way down to a granted namespace stays visible)."""
        ns = tuple(namespace)
        if self.level(ns) > 0:
            return True
        return any(
            key != "*" and _covers(ns, tuple(key.split(".")))  # ns is above the key
            for key in self.grants
        )


def _covers(key: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    return len(namespace) >= len(key) and namespace[: len(key)] == key


class Principals:
    """The clients the REST server accepts, each with a client secret and grants by namespace
    (``principals:`` of a YAML file, see the module doc); give it to
    :func:`~icepark.rest.create_app` as ``auth``. Usually read with
    :meth:`Principals.load` from a file, or :meth:`Principals.from_dict`.

    Args:
        principals: the clients, each a ``Principal`` (client id, stored secret, grants).

    Raises:
        CatalogConfigError: a client id appears twice.
    """

    def __init__(self, principals: Iterable[Principal]) -> None:
        self._by_id: dict[str, Principal] = {}
        for p in principals:
            if p.client_id in self._by_id:
                raise CatalogConfigError(f"Principals: client-id {p.client_id!r} appears twice")
            self._by_id[p.client_id] = p

    def __repr__(self) -> str:
        return f"Principals({sorted(self._by_id)})"

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, client_id: str) -> Principal | None:
        """The principal of a client id.

        Args:
            client_id: the client's id.

        Returns:
            The principal, or None when there is none of that id.
        """
        return self._by_id.get(client_id)

    def authenticate(self, client_id: str, client_secret: str) -> Principal | None:
        """The principal when the secret matches, else None (an unknown id costs a hash too,
        so timing does not tell which ids exist); secrets are compared in constant time.

        Args:
            client_id: the client's id.
            client_secret: the secret it sent.

        Returns:
            The principal, or None.
        """
        principal = self._by_id.get(client_id)
        if principal is None:
            verify_secret(client_secret, _dummy_hash())
            return None
        return principal if verify_secret(client_secret, principal.secret) else None

    @classmethod
    def from_dict(cls, obj: Any) -> Principals:
        """Principals from a parsed principals file:
        ``{"principals": [{"client-id", "client-secret", "grants"}]}``.

        Args:
            obj: the parsed file.

        Returns:
            The principals.

        Raises:
            CatalogConfigError: the file's shape is wrong, naming the entry: no ``principals``
                list, an empty id or secret, a grant level other than read, write or admin, or
                an id given twice.
        """
        if not isinstance(obj, Mapping) or not isinstance(obj.get("principals"), list):
            raise CatalogConfigError("Principals file: expected a top-level 'principals' list")
        out = []
        for i, entry in enumerate(obj["principals"]):
            where = f"Principals file: principals[{i}]"
            if not isinstance(entry, Mapping):
                raise CatalogConfigError(f"{where}: expected a mapping")
            client_id, secret = entry.get("client-id"), entry.get("client-secret")
            if not isinstance(client_id, str) or not client_id:
                raise CatalogConfigError(f"{where}: 'client-id' must be a non-empty string")
            if not isinstance(secret, str) or not secret:
                raise CatalogConfigError(
                    f"{where} ({client_id}): 'client-secret' must be a non-empty string"
                )
            grants_obj = entry.get("grants") or {}
            if not isinstance(grants_obj, Mapping):
                raise CatalogConfigError(f"{where} ({client_id}): 'grants' must be a mapping")
            grants: dict[str, int] = {}
            for key, level in grants_obj.items():
                if not isinstance(key, str) or not key or str(level).lower() not in _LEVELS:
                    raise CatalogConfigError(
                        f"{where} ({client_id}): grant {key!r}: level must be one of "
                        "read, write, admin"
                    )
                grants[key] = _LEVELS[str(level).lower()]
            out.append(Principal(client_id, secret, grants))
        return cls(out)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Principals:
        """Read a principals YAML file (see the module docstring for its form).

        Args:
            path: the file.

        Returns:
            The principals.

        Raises:
            CatalogConfigError: the file cannot be read, is not YAML, or its shape is wrong.
        """
        import yaml

        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CatalogConfigError(f"Cannot read principals file {path}: {exc}") from exc
        try:
            obj = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CatalogConfigError(f"Principals file {path} is not valid YAML") from exc
        return cls.from_dict(obj)


@functools.cache
def _dummy_hash() -> str:
    return hash_secret("not-a-secret")


class TokenSigner:
    """Issues and checks the server's bearer tokens (see the module doc)."""

    def __init__(
        self,
        key: bytes | str | None = None,
        ttl_seconds: int = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if key is None:
            key = os.environ.get(TOKEN_KEY_ENV) or secrets.token_bytes(32)
        self._key = key.encode("utf-8") if isinstance(key, str) else key
        self.ttl_seconds = int(ttl_seconds)
        self._clock = clock

    def __repr__(self) -> str:
        return f"TokenSigner(ttl_seconds={self.ttl_seconds})"

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode("ascii"), hashlib.sha256).digest())

    def issue(self, client_id: str) -> str:
        now = int(self._clock())
        claims = {"sub": client_id, "iat": now, "exp": now + self.ttl_seconds}
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
        return f"{payload}.{self._sign(payload)}"

    def verify(self, token: str, *, allow_expired: bool = False) -> str | None:
        """The client id the token names, or None when it is forged, malformed or expired
        (``allow_expired``: an expired one still names its client, for a refresh that the
        client authenticates with its own credentials)."""
        payload, sep, signature = token.partition(".")
        if not sep or not payload.isascii() or not signature.isascii():
            return None
        if not hmac.compare_digest(self._sign(payload), signature):
            return None
        try:
            claims = json.loads(_unb64(payload))
            client_id, expires = claims["sub"], int(claims["exp"])
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(client_id, str) or (not allow_expired and self._clock() >= expires):
            return None
        return client_id
