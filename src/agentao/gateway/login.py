"""The keyless gateway's local token, and the web UI's way in: a one-time login link.

Theory of operation. Without `[[keys]]` the gateway still authenticates: `serve` reads
(or makes) the local token in the state directory (`agentao/local_token.py`) and every
request must carry it, as a configured key would be carried (`Authorization: Bearer`,
or the WebSocket key subprotocol). Other local users cannot read the 0600 file, so
they cannot drive the gateway, although 127.0.0.1 lets them connect (Jupyter's model).

A browser cannot be given a header, so `serve` prints a login link,
`/login?token=CODE`. The code is not the token: it is random, valid once and for
`Limits.login_link_seconds`, kept in this process only. Redeeming it sets a session
cookie (HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it;
Path=/) and redirects to the UI. The cookie's value is `issued.nonce.mac`, the mac an
HMAC of the rest keyed by the local token, so it needs no server state: it is valid
on every replica that shares the token, until `Limits.login_session_seconds` after it
was issued. A cookie is accepted only from the web UI's own requests (`X-Agentao-Client:
web`, which no other origin can send without a CORS preflight) and WebSocket handshakes
(which the guard admits from our own origin only).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from agentao.gateway.config import Limits
from agentao.gateway.errors import Unauthorized

COOKIE_NAME = "agentao_session"
LOGIN_PATH = "/login"
LOGIN_PARAM = "token"  # the one-time code's query parameter (never the file's token)
CODE_BYTES = 32
_MAC_CONTEXT = b"agentao web session v1."  # the token keys nothing else with this prefix

router = APIRouter()


@dataclass(slots=True)
class WebLogin:
    """The local token, the login codes it has issued, and the cookies it signs."""

    token: str
    limits: Limits
    _codes: dict[str, float] = field(default_factory=dict)  # sha256(code) -> expiry (monotonic)

    def matches(self, secret: str) -> bool:
        """Whether `secret` is the local token (compared in constant time)."""
        return hmac.compare_digest(secret.encode(), self.token.encode())

    def new_code(self) -> str:
        """A login code, valid once and for `login_link_seconds`."""
        now = time.monotonic()
        self._codes = {h: t for h, t in self._codes.items() if t > now}  # forget expired ones
        code = secrets.token_urlsafe(CODE_BYTES)
        self._codes[_digest(code)] = now + self.limits.login_link_seconds
        return code

    def redeem(self, code: str) -> bool:
        """Whether `code` is a live login code; it is spent either way."""
        expiry = self._codes.pop(_digest(code), None)
        return expiry is not None and time.monotonic() < expiry

    def new_cookie(self) -> str:
        body = f"{int(time.time())}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._mac(body)}"

    def cookie_valid(self, value: str | None) -> bool:
        if not value:
            return False
        body, _, mac = value.rpartition(".")
        issued = body.partition(".")[0]
        if not issued.isdigit() or not hmac.compare_digest(mac, self._mac(body)):
            return False
        return 0 <= time.time() - int(issued) < self.limits.login_session_seconds

    def _mac(self, body: str) -> str:
        digest = hmac.new(self.token.encode(), _MAC_CONTEXT + body.encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def login_url(base_url: str, code: str) -> str:
    return f"{base_url}{LOGIN_PATH}?{LOGIN_PARAM}={code}"


@router.get(LOGIN_PATH, include_in_schema=False)
async def login(request: Request) -> RedirectResponse:
    """Redeem a one-time login code: a session cookie, and on to the web UI."""
    web_login: WebLogin | None = request.app.state.gateway.auth.login
    code = request.query_params.get(LOGIN_PARAM, "")
    if web_login is None:
        raise Unauthorized(
            "this gateway has API keys: the web UI asks for one", code="login_not_available"
        )
    if not web_login.redeem(code):
        raise Unauthorized(
            "this login link was used already, has expired, or is not one; restart "
            "`agentao serve` for a new one, or give the web UI the token from the token file",
            code="login_link_invalid",
        )
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        web_login.new_cookie(),
        max_age=int(web_login.limits.login_session_seconds),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"  # the spent code stays in this tab
    return response


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


__all__ = ["COOKIE_NAME", "LOGIN_PATH", "WebLogin", "login_url", "router"]
