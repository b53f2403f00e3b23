"""Route modules, one per resource, and the router every ``/api`` module is built on.

Every ``/api`` router authenticates the caller before anything else (``require_caller`` as a
router dependency, so a route cannot forget it) and omits nulls from its responses, as
Reflexio does; the 0.2.16 client fills every omitted field from its defaults. Every route
checks its input the same way before it runs (``api.inputs``) and documents the errors it can
answer with (``api.errors.documented``), so the OpenAPI document lists each status code.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from reflexio.api import inputs
from reflexio.api.auth import require_caller
from reflexio.api.errors import API_ERRORS, documented
from reflexio.models.fields import MAX_EPOCH, MAX_ID_LENGTH, MAX_PAGE, MAX_QUERY_LENGTH, NON_BLANK_PATTERN

__all__ = ["EpochParam", "IdParam", "PageParam", "TextParam", "WireRoute", "api_router", "documented"]

# Query parameters follow the same limits as body fields (``models.fields``).
IdParam = Annotated[str, Query(max_length=MAX_ID_LENGTH, pattern=NON_BLANK_PATTERN)]
"""An identifier in the query string: non-blank, at most 255 characters."""
PageParam = Annotated[int, Query(gt=0, le=MAX_PAGE)]
"""A page size in the query string: 1..1000."""
EpochParam = Annotated[int, Query(ge=0, le=MAX_EPOCH)]
"""A timestamp in epoch seconds in the query string."""
TextParam = Annotated[str, Query(max_length=MAX_QUERY_LENGTH)]
"""Free text in the query string: at most 10,000 characters."""


class WireRoute(APIRoute):
    """A route whose input is checked first and whose response is serialised without nulls."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_none"] = True
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler behind the checks every request's input must pass."""
        return inputs.checked(super().get_route_handler(), has_body=self.body_field is not None)


def api_router(tag: str) -> APIRouter:
    """A router under ``/api`` whose every route requires an authenticated caller.

    Its routes document the errors every ``/api`` route can answer with; a route adds the
    ones of its own (404, 409) with ``responses=documented(...)``.
    """
    return APIRouter(
        prefix="/api",
        tags=[tag],
        route_class=WireRoute,
        dependencies=[Depends(require_caller)],
        responses=documented(*API_ERRORS),
    )
