"""Banner, health, version (public), ``/api/whoami`` and ``/api/usage``.

Health follows Reflexio 0.2.32 exactly because load balancers probe it: ``/health`` and
``/health/ready`` check storage and answer 503 when it does not respond, ``/health/live``
touches nothing. None of them is cached by a proxy.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from starlette.requests import Request

from reflexio._version import __version__
from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.errors import documented
from reflexio.api.routes import WireRoute, api_router
from reflexio.models import (
    LivenessResponse,
    ReadinessCheck,
    ReadinessResponse,
    RootResponse,
    UsageResponse,
    VersionResponse,
    WhoamiResponse,
)
from reflexio.service import quotas
from reflexio.service.warmup import Warmup

__all__ = ["public", "router", "server_version"]

public = APIRouter(tags=["system"], route_class=WireRoute, responses=documented(500))
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


#: How long readiness waits for storage to answer before it says "not ready".
_PROBE_SECONDS = 2.0
#: Threads of their own for probes, so a hung ping never takes one the API needs.
_PROBES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readiness")

_NOT_READY: dict[int | str, dict[str, Any]] = {
    503: {"model": ReadinessResponse, "description": "Not ready: a required check failed"}
}


@public.get("/health", response_model=ReadinessResponse, responses=_NOT_READY)
@public.get("/health/ready", response_model=ReadinessResponse, responses=_NOT_READY)
async def ready(request: Request, core: CoreDep) -> JSONResponse:
    """Readiness: 200 when storage answers (within 2 s) and the warm-up is over, 503 otherwise.

    The storage ping runs in a thread of its own, bounded: a database that does not answer
    (down, or a network that drops packets) makes the probe say "not ready" in two seconds
    instead of hanging as long as the outage lasts.
    """
    checked_at = dt.datetime.now(dt.UTC)
    try:
        await asyncio.wait_for(
            asyncio.get_running_loop().run_in_executor(_PROBES, core.storage.ping), _PROBE_SECONDS
        )
        storage = ReadinessCheck(status="passed", checked_at=checked_at)
    except TimeoutError:
        reason = f"storage did not answer within {_PROBE_SECONDS:g}s"
        storage = ReadinessCheck(status="failed", reason=reason, checked_at=checked_at)
    except Exception as exc:  # whatever the failure, the probe must answer "unhealthy", not crash
        storage = ReadinessCheck(status="failed", reason=str(exc), checked_at=checked_at)
    warm: Warmup = request.app.state.warmup
    # A failed warm-up is reported but not required: searches still work, only slower.
    warmup = ReadinessCheck(status=warm.state, required=warm.state != "failed", reason=warm.reason)
    checks = {"storage": storage, "warmup": warmup}
    healthy = all(check.status == "passed" or not check.required for check in checks.values())
    body = ReadinessResponse(status="healthy" if healthy else "unhealthy", checks=checks)
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


@router.get("/usage")
def usage(core: CoreDep, caller: CallerDep) -> UsageResponse:
    """The caller's org: its plan, this month's use of each quota, and whether learning is paused."""
    return quotas.usage(core, caller.org_id)
