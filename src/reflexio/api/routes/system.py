"""Banner, health, version (public) and ``/api/whoami``.

Health follows Reflexio 0.2.32 exactly because load balancers probe it: ``/health`` and
``/health/ready`` check storage and answer 503 when it does not respond, ``/health/live``
touches nothing. None of them is cached by a proxy.
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from reflexio._version import __version__
from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import WireRoute, api_router
from reflexio.models import (
    LivenessResponse,
    ReadinessCheck,
    ReadinessResponse,
    RootResponse,
    VersionResponse,
    WhoamiResponse,
)

__all__ = ["public", "router", "server_version"]

public = APIRouter(tags=["system"], route_class=WireRoute)
router = api_router("system")

_NO_STORE = {"Cache-Control": "no-store"}
_STORAGE_LABELS = {"memory": "in-memory (not persisted)", "sqlite": "SQLite file", "postgres": "PostgreSQL"}


def server_version() -> str:
    """The package's version (what ``/meta/version`` reports)."""
    return __version__


@public.get("/")
def root() -> RootResponse:
    """Where the docs and the health check are."""
    return RootResponse()


@public.get("/health", response_model=ReadinessResponse)
@public.get("/health/ready", response_model=ReadinessResponse)
def ready(core: CoreDep) -> JSONResponse:
    """Readiness: 200 when storage answers, 503 otherwise."""
    checked_at = dt.datetime.now(dt.UTC)
    try:
        core.storage.ping()
        check = ReadinessCheck(status="passed", checked_at=checked_at)
    except Exception as exc:  # whatever the failure, the probe must answer "unhealthy", not crash
        check = ReadinessCheck(status="failed", reason=str(exc), checked_at=checked_at)
    healthy = check.status == "passed"
    body = ReadinessResponse(status="healthy" if healthy else "unhealthy", checks={"storage": check})
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True),
        status_code=200 if healthy else 503,
        headers=_NO_STORE,
    )


@public.get("/health/live", response_model=LivenessResponse)
def live() -> JSONResponse:
    """Liveness: the process answers; no dependency is touched."""
    return JSONResponse(LivenessResponse().model_dump(), headers=_NO_STORE)


@public.get("/meta/version")
def meta_version() -> VersionResponse:
    """The server's real version and the API version it speaks."""
    return VersionResponse(server_version=server_version())


@router.get("/whoami")
def whoami(core: CoreDep, caller: CallerDep) -> WhoamiResponse:
    """The caller's org and the kind of storage behind it (never a path or a credential)."""
    backend = core.storage.backend
    return WhoamiResponse(
        success=True,
        org_id=caller.org_id,
        storage_type=backend,
        storage_label=_STORAGE_LABELS.get(backend, backend),
        storage_configured=True,
        message=f"authenticated as {caller.actor}",
    )
