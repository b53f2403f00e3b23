"""Route modules, one per resource, and the router every ``/api`` module is built on.

Every ``/api`` router authenticates the caller before anything else (``require_caller`` as a
router dependency, so a route cannot forget it) and omits nulls from its responses, as
Reflexio does; the 0.2.16 client fills every omitted field from its defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.routing import APIRoute

from reflexio.api.auth import require_caller

__all__ = ["WireRoute", "api_router"]


class WireRoute(APIRoute):
    """A route whose response model is serialised without null fields."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_none"] = True
        super().__init__(path, endpoint, **kwargs)


def api_router(tag: str) -> APIRouter:
    """A router under ``/api`` whose every route requires an authenticated caller."""
    return APIRouter(prefix="/api", tags=[tag], route_class=WireRoute, dependencies=[Depends(require_caller)])
