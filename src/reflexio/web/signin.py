"""Signing in with an API key, and out.

The sign-in form is protected by a double-submit token: the page sets a random value in an
HttpOnly, SameSite=Strict cookie and in the form, and the post must carry both, equal (a page
on another site can make a browser post the form but cannot read or set the cookie). A
successful sign-in sets the session cookie (``web.access``) for the key's org and goes where
the person was heading (only ever a dashboard path). Signing out clears the cookie.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reflexio.service import keys
from reflexio.service.core import Core
from reflexio.web import access
from reflexio.web.render import html, secure, set_session_cookie
from reflexio.web.routing import Ask, action, redirect

__all__ = ["ROUTES"]


def _next(raw: str | None) -> str:
    """Where to go after signing in: a dashboard path, never another site."""
    parts = urlsplit(raw or "")
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui") or parts.path.startswith("/ui/login"):
        return "/ui"
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _form(
    request: Request, *, error: str = "", status_code: int = 200, heading: str | None = None
) -> Response:
    """The sign-in form; ``heading`` is where to go after it (a failed post keeps its own)."""
    token = secrets.token_urlsafe(16)
    response = html(
        request,
        "login.html",
        {
            "token": token,
            "next": _next(heading if heading is not None else request.query_params.get("next")),
            "error": error,
            "revoked": request.query_params.get("revoked"),
        },
        status_code=status_code,
    )
    https = request.url.scheme == "https"
    response.set_cookie(
        access.LOGIN_COOKIE,
        token,
        max_age=3600,
        path="/ui/login",
        httponly=True,
        samesite="strict",
        secure=https,
    )
    return response


def _sign_in_page(request: Request, core: Core) -> Response:
    if not core.keys_exist():
        return redirect("/ui")
    return _form(request)


def _sign_in(request: Request, core: Core, form: dict[str, str]) -> Response:
    if not core.keys_exist():
        return redirect("/ui")
    cookie_token = request.cookies.get(access.LOGIN_COOKIE, "")
    if (
        access.cross_site(request.headers, request.url.scheme)
        or not cookie_token
        or not access.tokens_match(form.get("token"), cookie_token)
    ):
        return _form(
            request,
            error="The sign-in form expired or came from another site; try again.",
            status_code=403,
            heading=form.get("next", ""),
        )
    key = keys.identify(core, form.get("api_key", "").strip())
    if key is None:
        return _form(
            request,
            error="That is not an active API key of this server.",
            status_code=401,
            heading=form.get("next", ""),
        )
    response = redirect(_next(form.get("next")))
    set_session_cookie(response, request, access.issue_cookie(core, key))
    response.delete_cookie(access.LOGIN_COOKIE, path="/ui/login")
    return response


async def sign_in_page(request: Request) -> Response:
    """GET /ui/login."""
    return await run_in_threadpool(_sign_in_page, request, request.app.state.core)


async def sign_in(request: Request) -> Response:
    """POST /ui/login."""
    form = await request.form()
    plain = {k: v for k, v in form.items() if isinstance(v, str)}
    return await run_in_threadpool(_sign_in, request, request.app.state.core, plain)


def _sign_out(ask: Ask) -> Response:
    response = redirect("/ui/login" if ask.viewer.signed_in else "/ui")
    set_session_cookie(response, ask.request, "")
    return secure(response)


ROUTES = [
    Route("/login", sign_in_page, methods=["GET"]),
    Route("/login", sign_in, methods=["POST"]),
    Route("/logout", action(_sign_out), methods=["POST"]),
]
