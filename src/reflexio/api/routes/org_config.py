"""The org config: read (secrets masked, always), replace, or update some top-level keys."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router, documented
from reflexio.models import Config, SetConfigResponse
from reflexio.service import org_config

__all__ = ["router"]

router = api_router("config")

ConfigBody = Annotated[dict[str, Any], Body(description="A Config object (partial for update_config)")]

#: update_config takes any subset of a Config: the same schema, nothing required.
_CONFIG_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Config-Input"}}},
    }
}


@router.post("/set_config", responses=documented(409))
async def set_config(body: Config, request: Request, core: CoreDep, caller: CallerDep) -> SetConfigResponse:
    """Replace the org's config; masked secrets sent back keep their stored values.

    The body is declared as a ``Config`` so the schema (and a first check) is the real one;
    the service reads it as sent, because what was omitted and what is masked matters.
    """
    raw: dict[str, Any] = await request.json()
    return await run_in_threadpool(org_config.set_config, core, caller.org_id, raw)


@router.post("/update_config", responses=documented(409), openapi_extra=_CONFIG_SCHEMA)
def update_config(body: ConfigBody, core: CoreDep, caller: CallerDep) -> SetConfigResponse:
    """Replace only the top-level keys sent."""
    return org_config.update_config(core, caller.org_id, body)


@router.get("/get_config", response_model=Config)
def get_config(core: CoreDep, caller: CallerDep) -> JSONResponse:
    """The org's config with every secret masked.

    Returned as is rather than through the null-dropping serialiser: the 0.2.16 client needs
    the ``storage_config`` key even when it is null.
    """
    return JSONResponse(org_config.get_config(core, caller.org_id))
