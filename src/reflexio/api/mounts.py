"""ASGI apps the API serves under ``/api`` beside its routes (the MCP endpoint), keyed like them.

A mount is an ASGI app with a path and a lifespan. The API does not know what it serves: the
composition root (``reflexio services start``) hands it the mounts, so the API never imports
an integration. Each mount sits behind :class:`Guarded`, which authenticates the request
exactly as ``require_caller`` does for every route and leaves the caller in the ASGI scope
under :data:`CALLER_SCOPE_KEY`; a refusal is answered with the API's own error body.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from reflexio.api.auth import require_caller
from reflexio.api.errors import error_response
from reflexio.errors import ReflexioError
from reflexio.service.core import Core

__all__ = ["CALLER_SCOPE_KEY", "Guarded", "Mount", "MountFactory", "mounts_lifespan"]

#: Where the authenticated ``Caller`` is left in the scope for the mounted app.
CALLER_SCOPE_KEY = "reflexio.caller"


class Mount(Protocol):
    """An ASGI app served at ``/api<path>``, with what it must run while the API runs."""

    path: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request (the caller is in ``scope[CALLER_SCOPE_KEY]``)."""
        ...

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Started with the API, stopped with it."""
        ...


MountFactory = Callable[[Core], Mount]


class Guarded:
    """Authenticate like every ``/api`` route, then hand the request to the mounted app."""

    def __init__(self, core: Core, app: ASGIApp) -> None:
        self.core = core
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                request = Request(scope, receive)  # the lookups read storage: off the event loop
                scope[CALLER_SCOPE_KEY] = await run_in_threadpool(require_caller, request, self.core)
            except ReflexioError as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def mounts_lifespan(mounts: Sequence[Mount]) -> AsyncIterator[None]:
    """Run every mount's lifespan for as long as the block runs."""
    async with contextlib.AsyncExitStack() as stack:
        for mount in mounts:
            await stack.enter_async_context(mount.lifespan())
        yield
