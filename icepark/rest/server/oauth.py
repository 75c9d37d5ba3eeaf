"""``POST /v1/oauth/tokens``: OAuth2 token requests as clients really send them.

Grants (RFC 6749 section 4.4, RFC 8693):

- ``client_credentials``: the client authenticates with its id and secret, either in the form
  body (``client_id``, ``client_secret``: Java's client, PyIceberg's legacy manager) or by HTTP
  Basic (``Authorization: Basic base64(client_id:client_secret)``, RFC 6749 section 2.3.1, each
  part form-urlencoded first; DuckDB, PyIceberg's ``oauth2`` manager and Java's expired-token
  refresh send them without that encoding, so both readings are tried). Using both methods at
  once is an ``invalid_request`` (section 2.3).
- ``urn:ietf:params:oauth:grant-type:token-exchange``: a ``subject_token`` this server issued
  (``subject_token_type`` the access-token type) is exchanged for a fresh token of the same
  principal: Java's client refreshes this way, with the current token as bearer. A subject
  token that has expired is accepted only with the client's own credentials (Java's refresh of
  an expired token sends them by Basic) and only when it names that client.

``scope`` (space-separated tokens of printable ASCII without ``"`` and ``\\``, section 3.3) is
accepted and echoed in the answer; it never widens a principal's grants, which come from the
principals file alone (DuckDB sends ``PRINCIPAL_ROLE:ALL``, Java and PyIceberg ``catalog``). A
malformed one is ``invalid_scope``.

Errors follow section 5.2: ``invalid_request`` (400: a missing, repeated or malformed
parameter), ``invalid_client`` (401 with ``WWW-Authenticate``: no client authentication, an
unknown client, a wrong secret, an unusable subject token), ``unsupported_grant_type`` (400),
``invalid_scope`` (400). No secret, token or password ever appears in an answer or a log line:
answers quote nothing the client sent.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote_plus

from fastapi import Request
from fastapi.responses import JSONResponse

from icepark.rest.models import OAuthErrorResponse, OAuthTokenResponse
from icepark.rest.server.context import ServerState, state_of
from icepark.rest.server.security import Principal

__all__ = ["token_endpoint", "CLIENT_CREDENTIALS", "TOKEN_EXCHANGE", "ACCESS_TOKEN_TYPE"]

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# the token types a subject token of this server may be announced as (Java sends access_token)
_SUBJECT_TOKEN_TYPES = {ACCESS_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:jwt"}
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_MAX_SCOPE = 1024
_REALM = 'Basic realm="icepark"'


class _OAuthError(Exception):
    """An RFC 6749 section 5.2 error answer (the description names no secret)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description

    @property
    def status(self) -> int:
        return 401 if self.error == "invalid_client" else 400

    def response(self) -> JSONResponse:
        body = OAuthErrorResponse(error=self.error, error_description=self.description)
        headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
        if self.status == 401:
            headers["WWW-Authenticate"] = f'{_REALM}, error="{self.error}"'
        return JSONResponse(body.dump(), status_code=self.status, headers=headers)


@dataclass(frozen=True)
class _ClientAuth:
    """The client credentials a request carried, and how (``basic`` or ``body``)."""

    client_id: str
    secret: str
    method: str


async def token_endpoint(request: Request) -> JSONResponse:
    """Issue a bearer token (see the module doc)."""
    state = state_of(request)
    try:
        if state.principals is None:
            raise _OAuthError("invalid_request", "This server runs without authentication")
        form = _form(await request.body())
        grant = form.get("grant_type")
        if not grant:
            raise _OAuthError("invalid_request", "Missing grant_type")
        scope = _scope(form.get("scope"))
        auth = _client_auth(request.headers.get("authorization"), form)
        if grant == CLIENT_CREDENTIALS:
            principal = _client_credentials(state, auth)
        elif grant == TOKEN_EXCHANGE:
            principal = _token_exchange(state, auth, form)
        else:
            raise _OAuthError(
                "unsupported_grant_type",
                f"Unsupported grant_type: expected {CLIENT_CREDENTIALS} or {TOKEN_EXCHANGE}",
            )
    except _OAuthError as exc:
        return exc.response()
    request.state.principal = principal.client_id
    answer = OAuthTokenResponse(
        access_token=state.signer.issue(principal.client_id),
        token_type="bearer",
        expires_in=state.signer.ttl_seconds,
        issued_token_type=ACCESS_TOKEN_TYPE,
        scope=scope,
    )
    return JSONResponse(answer.dump(), headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


def _form(body: bytes) -> dict[str, str]:
    """The form parameters; one given twice is refused (RFC 6749 section 3.2)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _OAuthError("invalid_request", "The form body is not UTF-8") from None
    pairs = parse_qsl(text, keep_blank_values=True)
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            raise _OAuthError("invalid_request", "A parameter is given more than once")
        form[key] = value
    return form


def _scope(scope: str | None) -> str | None:
    """The requested scope as echoed (None when none was asked for)."""
    if scope is None or not scope.strip(" "):
        return None
    tokens = scope.split(" ")
    if len(scope) > _MAX_SCOPE or not all(_SCOPE_TOKEN.fullmatch(t) for t in tokens):
        raise _OAuthError("invalid_scope", "Malformed scope: space-separated printable tokens")
    return scope


def _client_auth(header: str | None, form: dict[str, str]) -> _ClientAuth | None:
    """The client's credentials from Basic or the body (never both), None without any."""
    basic: _ClientAuth | None = None
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _OAuthError("invalid_client", "Malformed Basic credentials") from None
        client_id, sep, secret = decoded.partition(":")
        if not sep or not client_id or not secret:
            raise _OAuthError("invalid_client", "Malformed Basic credentials")
        basic = _ClientAuth(client_id, secret, "basic")
    body_id, body_secret = form.get("client_id"), form.get("client_secret")
    if basic is not None:
        if body_secret is not None:
            raise _OAuthError(
                "invalid_request", "Client credentials given both by Basic and in the body"
            )
        if body_id is not None and body_id not in (basic.client_id, unquote_plus(basic.client_id)):
            raise _OAuthError("invalid_request", "client_id differs from the Basic credentials")
        return basic
    if body_id is None and body_secret is None:
        return None
    if not body_id or not body_secret:
        raise _OAuthError("invalid_request", "client_id and client_secret are both required")
    return _ClientAuth(body_id, body_secret, "body")


def _authenticate(state: ServerState, auth: _ClientAuth) -> Principal:
    assert state.principals is not None
    principal = state.principals.authenticate(auth.client_id, auth.secret)
    if principal is None and auth.method == "basic":
        # RFC 6749 form-urlencodes both parts before Basic; many clients do not
        client_id, secret = unquote_plus(auth.client_id), unquote_plus(auth.secret)
        if (client_id, secret) != (auth.client_id, auth.secret):
            principal = state.principals.authenticate(client_id, secret)
    if principal is None:
        raise _OAuthError("invalid_client", "Invalid client credentials")
    return principal


def _client_credentials(state: ServerState, auth: _ClientAuth | None) -> Principal:
    if auth is None:
        raise _OAuthError(
            "invalid_client", "Client authentication required (HTTP Basic or the form body)"
        )
    return _authenticate(state, auth)


def _token_exchange(
    state: ServerState, auth: _ClientAuth | None, form: dict[str, str]
) -> Principal:
    assert state.principals is not None
    subject = form.get("subject_token")
    if not subject:
        raise _OAuthError("invalid_request", "Missing subject_token")
    kind = form.get("subject_token_type")
    if kind is not None and kind not in _SUBJECT_TOKEN_TYPES:
        raise _OAuthError(
            "invalid_request", f"Unsupported subject_token_type: expected {ACCESS_TOKEN_TYPE}"
        )
    if form.get("actor_token"):
        raise _OAuthError("invalid_request", "Delegation (actor_token) is not supported")
    if auth is None:
        client_id = state.signer.verify(subject)
        principal = state.principals.get(client_id) if client_id is not None else None
        if principal is None:
            raise _OAuthError("invalid_client", "The subject token is invalid or has expired")
        return principal
    principal = _authenticate(state, auth)
    # the client's own token, even expired: what Java's client sends to refresh an expired one
    if state.signer.verify(subject, allow_expired=True) != principal.client_id:
        raise _OAuthError("invalid_request", "The subject token was not issued to this client")
    return principal
