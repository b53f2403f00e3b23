"""The dashboard's ASGI app and the wrapper that serves it in front of the API."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from reflexio.service.core import Core
from reflexio.web import (
    conversations,
    evaluation,
    jobs,
    learnings,
    overview,
    review,
    settings,
    signin,
    users,
)
from reflexio.web.render import STATIC_DIR, html, secure

__all__ = ["PREFIX", "create_dashboard", "with_dashboard"]

PREFIX = "/ui"


class _Static(StaticFiles):
    """Static files with the dashboard's headers (and an hour of caching)."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        return secure(super().file_response(*args, **kwargs), cache=True)


async def _not_found(request: Request, exc: Exception) -> Response:
    return html(request, "error.html", {"error": None, "title": "Not found"}, status_code=404)


def create_dashboard(core: Core) -> Starlette:
    """The dashboard app for ``core``, to be served under ``/ui``."""
    routes = [
        *overview.ROUTES,
        *review.ROUTES,
        *learnings.ROUTES,
        *users.ROUTES,
        *conversations.ROUTES,
        *evaluation.ROUTES,
        *jobs.ROUTES,
        *settings.ROUTES,
        *signin.ROUTES,
        Mount("/static", app=_Static(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: _not_found})
    app.state.core = core
    return app


def with_dashboard(api: ASGIApp, core: Core) -> ASGIApp:
    """``api`` with the dashboard in front: ``/ui`` to the dashboard, browsers at ``/`` to ``/ui``."""
    dashboard = create_dashboard(core)

    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == PREFIX or path.startswith(PREFIX + "/"):
                root = scope.get("root_path", "")
                full = path if path != PREFIX else PREFIX + "/"
                scope = {**scope, "root_path": root + PREFIX, "path": full, "raw_path": full.encode()}
                await dashboard(scope, receive, send)
                return
            if (
                path == "/"
                and scope["method"] == "GET"
                and "text/html" in Headers(scope=scope).get("accept", "")
            ):
                await RedirectResponse(PREFIX, status_code=307)(scope, receive, send)
                return
        await api(scope, receive, send)

    return front
