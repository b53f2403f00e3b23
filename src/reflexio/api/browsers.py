"""What the API lets browsers do: a real CORS policy, and the usual security headers.

A page on another origin can make a browser send requests to this API (to ``127.0.0.1``
too), with the browser's ambient network position. So a request whose ``Origin`` is not this
server's own is served only if the org it acts for lists that origin in its config
(``allowed_origins``), in local-only mode as with keys: ``http://localhost:3000`` is another
origin like any other. The check on the caller's org is made once the caller is known
(:func:`check_origin`, called by ``api.auth``); a preflight, which carries no credentials,
is answered for an origin some org allows, and the real request is then held to its own org.

Every response carries ``X-Content-Type-Options``, ``X-Frame-Options``, ``Referrer-Policy``,
``Cross-Origin-Resource-Policy`` and (except on the interactive docs, which load their
scripts from a CDN) a ``Content-Security-Policy`` that forbids everything; ``/api``
responses are ``Cache-Control: no-store`` (they hold an org's data).
"""

from __future__ import annotations

from typing import Final

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reflexio.api.errors import error_response
from reflexio.errors import PermissionDeniedError
from reflexio.service.core import Core

__all__ = ["BrowserPolicy", "check_origin", "cross_origin"]

_SECURITY_HEADERS: Final = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-resource-policy": "same-origin",
}
_LOCKED_CSP: Final = "default-src 'none'; frame-ancestors 'none'"
#: The interactive docs load Swagger UI / ReDoc from a CDN; they still may not be framed.
_DOCS_PATHS: Final = ("/docs", "/redoc")
_ALLOWED_METHODS: Final = "GET, POST, PUT, PATCH, DELETE"
_ALLOWED_HEADERS: Final = "Authorization, Content-Type"
_PREFLIGHT_MAX_AGE: Final = "600"


def cross_origin(request: Request) -> str | None:
    """The request's ``Origin`` when it is not this server's own origin, else None."""
    return _cross_origin(Headers(scope=request.scope), request.url.scheme)


def _cross_origin(headers: Headers, scheme: str) -> str | None:
    origin = headers.get("origin")
    if origin is None:
        return None
    return None if origin == f"{scheme}://{headers.get('host', '')}" else origin


def check_origin(request: Request, core: Core, org_id: str) -> None:
    """Refuse a cross-origin request the org does not allow; mark an allowed one for CORS headers.

    Raises:
        PermissionDeniedError: The page's origin is not in the org's ``allowed_origins``.
    """
    origin = cross_origin(request)
    if origin is None:
        return
    if origin not in core.org_config(org_id, max_age=1.0).allowed_origins:
        raise PermissionDeniedError(
            f"requests from pages on {origin} are not allowed; add the origin to allowed_origins"
            " in the org config to allow them",
            details={"origin": origin},
        )
    request.state.cors_origin = origin


class BrowserPolicy:
    """Answer preflights, add CORS headers to allowed requests and security headers to all."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = _cross_origin(headers, scope.get("scheme", "http"))
        if origin is not None and scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(scope, receive, send, origin)
            return
        path: str = scope.get("path", "")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                _secure(out, path)
                allowed = scope.get("state", {}).get("cors_origin")
                if allowed is not None:
                    out["access-control-allow-origin"] = allowed
                    out.add_vary_header("Origin")
            await send(message)

        await self.app(scope, receive, with_headers)

    async def _preflight(self, scope: Scope, receive: Receive, send: Send, origin: str) -> None:
        core: Core = scope["app"].state.core
        response: Response
        if origin not in self._allowed_somewhere(core):
            response = error_response(
                PermissionDeniedError(
                    f"no org allows pages on {origin}; add the origin to allowed_origins in the org config",
                    details={"origin": origin},
                )
            )
        else:
            response = Response(
                status_code=204,
                headers={
                    "access-control-allow-origin": origin,
                    "access-control-allow-methods": _ALLOWED_METHODS,
                    "access-control-allow-headers": _ALLOWED_HEADERS,
                    "access-control-max-age": _PREFLIGHT_MAX_AGE,
                    "vary": "Origin",
                },
            )
        _secure(response.headers, scope.get("path", ""))
        await response(scope, receive, send)

    def _allowed_somewhere(self, core: Core) -> frozenset[str]:
        """Every origin some org allows (preflights carry no key, so their org is unknown).

        The orgs are the default one and every org with an API key (the only ones a request
        can act for). Read on each preflight: browsers cache the answer
        (``Access-Control-Max-Age``), so preflights are rare, and a config just written must
        count at once.
        """
        orgs = {core.settings.default_org_id, *(key.org_id for key in core.storage.list_api_keys())}
        return frozenset(
            origin for org in orgs for origin in core.org_config(org, max_age=1.0).allowed_origins
        )


def _secure(headers: MutableHeaders, path: str) -> None:
    for name, value in _SECURITY_HEADERS.items():
        headers.setdefault(name, value)
    if not path.startswith(_DOCS_PATHS):
        headers.setdefault("content-security-policy", _LOCKED_CSP)
    if path.startswith("/api/"):
        headers.setdefault("cache-control", "no-store")
