"""The HTTP API: Reflexio-compatible ``/api/*`` routes over the service use cases.

``create_app(core)`` builds the app for one process ``Core``; the caller owns the core (opens
and closes it), so tests and the CLI can share one. Routes are thin: parse, call the service,
return its model. Errors are mapped in ``api.errors``, authentication in ``api.auth``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import Route

from reflexio.api import browsers, errors, lifecycle, openapi, throttles
from reflexio.api.mounts import Guarded, MountFactory, mounts_lifespan
from reflexio.api.routes import (
    aggregation,
    evaluation,
    events,
    experiments,
    generation,
    interactions,
    jobs,
    metrics,
    org_config,
    playbooks,
    profiles,
    provenance,
    search,
    system,
    users,
)
from reflexio.models import WireModel
from reflexio.service.core import Core
from reflexio.service.warmup import Warmup

__all__ = ["DEFAULT_PUBLISH_WAIT_SECONDS", "DOCS_ASSETS_PATH", "create_app"]

#: Where the documentation pages' scripts and styles are served.
DOCS_ASSETS_PATH = "/docs-assets"
#: How long ``publish_interaction?wait_for_response=true`` waits for learning to settle.
DEFAULT_PUBLISH_WAIT_SECONDS = 30.0


def _build_wire_models() -> None:
    """Compile every wire model now, and let adapters over them compile at once too.

    The models defer their build to first use (``WireModel``), which spares a CLI command
    compiling ~150 models it never uses. A server uses them all; and an adapter FastAPI builds
    over a deferred model defers as well, then compiles outside the warning filter FastAPI
    applies while building it, so pydantic warns about FastAPI's ``alias="body"``. A server
    therefore builds every model here, once, and turns deferral off for what is built later.
    """
    pending = list(WireModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_config["defer_build"] = False
        if not model.__pydantic_complete__:
            model.model_rebuild()


def create_app(
    core: Core,
    *,
    publish_wait_seconds: float = DEFAULT_PUBLISH_WAIT_SECONDS,
    mounts: Sequence[MountFactory] = (),
) -> FastAPI:
    """Build the API app for ``core``.

    ``redirect_slashes`` is off because the 0.2.16 client refuses every redirect: a path with
    a stray slash must fail as a 404, not turn into a 307 the client reports as an error.

    ``/docs`` (Swagger UI) and ``/redoc`` load their scripts and styles from this server
    (``fastapi-offline`` ships them), never from a CDN, so they work on a machine offline.

    Args:
        core: The process core the routes serve.
        publish_wait_seconds: How long a publish that waits for learning may wait.
        mounts: ASGI apps to serve under ``/api`` (the MCP endpoint), authenticated like the
            routes and run (their lifespans) while the app runs; see ``api.mounts``.
    """
    mounted = [factory(core) for factory in mounts]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mounts_lifespan(mounted):
            yield

    app = FastAPIOffline(
        static_url=DOCS_ASSETS_PATH,
        title="Reflexio API",
        version=system.server_version(),
        description="A learning layer for AI agents: publish what happened, retrieve what matters.",
        redirect_slashes=False,
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry: one server span per request (continuing the caller's
        # traceparent) and HTTP metrics, no-ops until reflexio.telemetry installs the SDK. Its
        # spans around dependencies and serialization would cost more than they tell.
        telemetry={"operation_spans": False, "logs": False},
    )
    _build_wire_models()
    app.state.core = core
    app.state.draining = lifecycle.Draining()
    app.state.warmup = Warmup(needed=False)  # a server process warms up in its lifespan
    settings = core.settings
    app.state.rate_limits = throttles.TokenBuckets(settings.rate_limit_per_minute, settings.rate_limit_burst)
    app.state.auth_throttle = throttles.AuthThrottle(
        settings.auth_max_failures, settings.auth_failure_window_seconds, settings.auth_lockout_seconds
    )
    app.state.publish_wait_seconds = publish_wait_seconds
    errors.install(app, max_body_bytes=core.settings.max_body_bytes)
    app.add_middleware(browsers.BrowserPolicy)  # outermost: even a crash's 500 gets its headers
    openapi.install(app)
    app.include_router(system.public)
    app.include_router(metrics.router)
    for module in (
        system,
        interactions,
        profiles,
        playbooks,
        search,
        provenance,
        org_config,
        users,
        jobs,
        generation,
        events,
        aggregation,
        evaluation,
        experiments,
    ):
        app.include_router(module.router)
    for mount in mounted:  # a plain Starlette route: its endpoint is the ASGI app itself
        route = Route(f"/api{mount.path}", Guarded(core, mount), methods=["GET", "POST", "DELETE"])
        app.router.routes.append(route)
    return app
