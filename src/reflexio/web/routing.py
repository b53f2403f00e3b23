"""How a dashboard handler is called: who is asking, what they sent, and what a failure looks like.

Handlers are plain functions of ``(Ask)`` returning a response; ``page`` wraps one that only
reads, ``action`` one that changes state. Both resolve the viewer first (a browser that must
sign in is sent to the sign-in page; one that may not look at all gets a 403 page); an action
also refuses a request from another site and one without the session's CSRF token before the
handler runs. Handlers run in a worker thread (the service is synchronous). A
``ReflexioError`` becomes a page (or, for htmx, a fragment) with the error's own status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from reflexio.errors import ReflexioError
from reflexio.service.core import Core
from reflexio.web import access
from reflexio.web.render import html, secure

__all__ = ["Ask", "Handler", "action", "page", "redirect"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ask:
    """One request as a handler sees it.

    Attributes:
        request: The Starlette request (path parameters, URL).
        core: The process core.
        viewer: Who is asking.
        query: The query string.
        form: The posted form (empty for a page).
    """

    request: Request
    core: Core
    viewer: access.Viewer
    query: QueryParams
    form: FormData

    @property
    def org_id(self) -> str:
        """The org the viewer is scoped to."""
        return self.viewer.org_id

    @property
    def htmx(self) -> bool:
        """Whether htmx sent the request (it wants a fragment, not a page)."""
        return self.request.headers.get("hx-request") == "true"

    def arg(self, name: str) -> str:
        """A path parameter."""
        return str(self.request.path_params[name])

    def render(self, template: str, status_code: int = 200, **context: object) -> Response:
        """The template for this viewer."""
        return html(self.request, template, context, viewer=self.viewer, status_code=status_code)


Handler = Callable[[Ask], Response]


def _core(request: Request) -> Core:
    return cast(Core, request.app.state.core)


def _viewer_or_refusal(request: Request, core: Core) -> access.Viewer | Response:
    client = request.client.host if request.client else None
    viewer = access.viewer_of(core, request.cookies, client, request.headers)
    if viewer is not None:
        return viewer
    if core.keys_exist():
        target = quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        if request.headers.get("hx-request") == "true":
            return secure(Response(status_code=401, headers={"HX-Redirect": f"/ui/login?next={target}"}))
        return secure(RedirectResponse(f"/ui/login?next={target}", status_code=303))
    return html(request, "refused.html", {}, status_code=403)


def _run(request: Request, handler: Handler, form: FormData, *, changes: bool) -> Response:
    core = _core(request)
    found = _viewer_or_refusal(request, core)
    if isinstance(found, Response):
        return found
    viewer = found
    if changes:
        if access.cross_site(request.headers, request.url.scheme):
            return _refused(request, viewer, "This form was sent from another site, so it was refused.")
        sent = request.headers.get(access.CSRF_HEADER) or form.get(access.CSRF_FIELD)
        if not access.tokens_match(str(sent) if sent is not None else None, viewer.csrf) or viewer.cookie:
            return _refused(
                request,
                viewer,
                "This form has expired or did not come from this dashboard; reload the page and try again.",
            )
    ask = Ask(request, core, viewer, request.query_params, form)
    try:
        return handler(ask)
    except ReflexioError as exc:
        if exc.status_code >= 500:
            log.warning("%s %s failed: %s", request.method, request.url.path, exc.message)
        template = "error_fragment.html" if ask.htmx else "error.html"
        return ask.render(template, status_code=exc.status_code, error=exc)


def _refused(request: Request, viewer: access.Viewer, message: str) -> Response:
    return html(
        request,
        "error.html",
        {"error": ReflexioError(message), "title": "Refused"},
        viewer=viewer,
        status_code=403,
    )


def page(handler: Handler) -> Callable[[Request], object]:
    """An endpoint that only reads."""

    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(_run, request, handler, FormData(), changes=False)

    endpoint.__name__ = handler.__name__
    return endpoint


def action(handler: Handler) -> Callable[[Request], object]:
    """An endpoint that changes state: same-site, CSRF-checked."""

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        return await run_in_threadpool(_run, request, handler, form, changes=True)

    endpoint.__name__ = handler.__name__
    return endpoint


def redirect(url: str) -> Response:
    """After an action: go to ``url`` (303, so the browser fetches it)."""
    return secure(RedirectResponse(url, status_code=303))
