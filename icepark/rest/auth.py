"""How the REST client proves who it is: a bearer token, OAuth2 client credentials, or AWS
SigV4 signatures.

Properties as Java and PyIceberg spell them:

* ``token``: a bearer token sent as is;
* ``credential`` = ``client_id:client_secret`` (or only a secret): OAuth2's client-credentials
  grant against ``oauth2-server-uri`` (default ``{uri}/v1/oauth/tokens``) with ``scope``
  (default ``catalog``) and, when set, ``audience`` and ``resource``. The token is fetched on
  first use, fetched again shortly before it expires (the last tenth of its life, at most a
  minute ahead) and once when the catalog answers 401;
* ``rest.sigv4-enabled=true`` with ``rest.signing-region`` and ``rest.signing-name``
  (default ``execute-api``): each request is signed by botocore's ``SigV4Auth`` with the
  credentials of ``rest.access-key-id``/``rest.secret-access-key``/``rest.session-token`` or
  else botocore's default chain; a bearer header set before signing moves to
  ``Original-Authorization``, as Java's signer does. botocore is optional: without it this
  raises a :class:`~icepark.errors.CatalogConfigError` saying so.

Secrets never appear in a ``repr``, a log line or an error message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from icepark.errors import CatalogConfigError, NotAuthorizedError, RestError
from icepark.rest.models import OAuthErrorResponse, OAuthTokenResponse

if TYPE_CHECKING:
    import requests

__all__ = ["RestAuth", "BearerAuth", "OAuth2ClientCredentials", "SigV4Signer", "auth_from"]

DEFAULT_SCOPE = "catalog"
DEFAULT_SIGNING_NAME = "execute-api"


class RestAuth(Protocol):
    """What the transport needs of an auth: decorate a request, and refresh after a 401."""

    def apply(self, request: requests.PreparedRequest) -> None:
        """Add the credentials to (or sign) a request about to be sent."""

    def refresh(self) -> bool:
        """Renew the credentials after a 401; True when a second attempt may succeed."""


class BearerAuth:
    """A fixed bearer token (``token``); a 401 cannot be cured by it."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __repr__(self) -> str:
        return "BearerAuth(token=***)"

    def apply(self, request: requests.PreparedRequest) -> None:
        request.headers["Authorization"] = f"Bearer {self._token}"

    def refresh(self) -> bool:
        return False


class OAuth2ClientCredentials:
    """OAuth2 client-credentials tokens, fetched when first needed and renewed before expiry
    (and after a 401); an initial ``token`` is used until it is refused or expires."""

    def __init__(
        self,
        session: requests.Session,
        token_uri: str,
        credential: str,
        scope: str = DEFAULT_SCOPE,
        audience: str | None = None,
        resource: str | None = None,
        timeout: tuple[float, float] = (10.0, 60.0),
        token: str | None = None,
    ) -> None:
        client_id, sep, secret = credential.partition(":")
        self._client_id = client_id if sep else None
        self._secret = secret if sep else credential
        self._session = session
        self.token_uri = token_uri
        self.scope = scope
        self.audience = audience
        self.resource = resource
        self._timeout = timeout
        self._token: str | None = token
        self._expires_at: float | None = None  # monotonic seconds
        self._refresh_at: float | None = None
        self._lock = threading.Lock()
        self.fetches = 0  # how many tokens were fetched (tests and diagnostics)

    def __repr__(self) -> str:
        return (
            f"OAuth2ClientCredentials(token_uri={self.token_uri!r}, scope={self.scope!r}, "
            "credential=***)"
        )

    def apply(self, request: requests.PreparedRequest) -> None:
        request.headers["Authorization"] = f"Bearer {self._current()}"

    def refresh(self) -> bool:
        with self._lock:
            self._fetch()
        return True

    def _current(self) -> str:
        with self._lock:
            now = time.monotonic()
            if self._token is None or (self._refresh_at is not None and now >= self._refresh_at):
                self._fetch()
            assert self._token is not None
            return self._token

    def _fetch(self) -> None:
        import requests

        form = {"grant_type": "client_credentials", "client_secret": self._secret}
        if self._client_id is not None:
            form["client_id"] = self._client_id
        form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        if self.resource:
            form["resource"] = self.resource
        try:
            answer = self._session.post(
                self.token_uri,
                data=form,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                timeout=self._timeout,
            )
        except requests.RequestException as exc:
            raise RestError(
                f"Cannot fetch an OAuth2 token from {self.token_uri}: {type(exc).__name__}"
            ) from None
        if answer.status_code >= 300:
            detail = f"HTTP {answer.status_code}"
            try:
                err = OAuthErrorResponse.model_validate(answer.json())
                detail += f": {err.error}" + (
                    f" ({err.error_description})" if err.error_description else ""
                )
            except ValueError:
                pass
            kind = NotAuthorizedError if answer.status_code in (400, 401, 403) else RestError
            raise kind(
                f"The OAuth2 server {self.token_uri} refused the client credentials: {detail}",
                answer.status_code,
            )
        try:
            parsed = OAuthTokenResponse.model_validate(answer.json())
        except ValueError:
            raise RestError(
                f"The OAuth2 server {self.token_uri} answered without a valid token"
            ) from None
        self.fetches += 1
        self._token = parsed.access_token
        now = time.monotonic()
        if parsed.expires_in is not None and parsed.expires_in > 0:
            lifetime = float(parsed.expires_in)
            self._expires_at = now + lifetime
            self._refresh_at = self._expires_at - min(60.0, lifetime / 10)
        else:
            self._expires_at = self._refresh_at = None


class SigV4Signer:
    """AWS Signature V4 on every request (Glue's and S3 Tables' REST endpoints)."""

    def __init__(self, properties: Mapping[str, str], inner: RestAuth | None = None) -> None:
        try:
            from botocore.auth import SigV4Auth
            from botocore.credentials import Credentials
            from botocore.session import Session
        except ImportError:
            raise CatalogConfigError(
                "rest.sigv4-enabled needs botocore (pip install botocore)"
            ) from None
        region = properties.get("rest.signing-region") or properties.get("client.region")
        if not region:
            raise CatalogConfigError("rest.sigv4-enabled needs rest.signing-region")
        self.region = region
        self.service = properties.get("rest.signing-name") or DEFAULT_SIGNING_NAME
        key = properties.get("rest.access-key-id") or properties.get("client.access-key-id")
        secret = properties.get("rest.secret-access-key") or properties.get(
            "client.secret-access-key"
        )
        token = properties.get("rest.session-token") or properties.get("client.session-token")
        credentials: Any
        if key and secret:
            credentials = Credentials(key, secret, token)
        else:
            credentials = Session().get_credentials()
            if credentials is None:
                raise CatalogConfigError(
                    "rest.sigv4-enabled: no AWS credentials (set rest.access-key-id and "
                    "rest.secret-access-key, or configure botocore's default chain)"
                )
        self._credentials = credentials
        self._auth_class = SigV4Auth
        self._inner = inner

    def __repr__(self) -> str:
        return f"SigV4Signer(region={self.region!r}, service={self.service!r})"

    def apply(self, request: requests.PreparedRequest) -> None:
        from botocore.awsrequest import AWSRequest

        if self._inner is not None:
            self._inner.apply(request)
        headers = dict(request.headers)
        original = headers.pop("Authorization", None)
        if original is not None:
            headers["Original-Authorization"] = original
        body = request.body or b""
        aws = AWSRequest(method=request.method, url=request.url, data=body, headers=headers)
        credentials = self._credentials
        if hasattr(credentials, "get_frozen_credentials"):
            credentials = credentials.get_frozen_credentials()
        self._auth_class(credentials, self.service, self.region).add_auth(aws)
        request.headers.clear()
        request.headers.update(dict(aws.headers.items()))

    def refresh(self) -> bool:
        return self._inner.refresh() if self._inner is not None else False


def auth_from(
    properties: Mapping[str, str], session: requests.Session, timeout: tuple[float, float]
) -> RestAuth | None:
    """The auth the catalog's properties ask for (None: anonymous)."""
    uri = (properties.get("uri") or "").rstrip("/")
    token = properties.get("token") or None
    credential = properties.get("credential") or None
    auth: RestAuth | None = None
    if credential:
        auth = OAuth2ClientCredentials(
            session,
            properties.get("oauth2-server-uri") or f"{uri}/v1/oauth/tokens",
            credential,
            scope=properties.get("scope") or DEFAULT_SCOPE,
            audience=properties.get("audience") or None,
            resource=properties.get("resource") or None,
            timeout=timeout,
            token=token,
        )
    elif token:
        auth = BearerAuth(token)
    if properties.get("rest.sigv4-enabled", "false").lower() == "true":
        auth = SigV4Signer(properties, auth)
    return auth
