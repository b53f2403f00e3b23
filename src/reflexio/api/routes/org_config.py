"""The org config: read (secrets masked, always), replace, or update some top-level keys."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body
from fastapi.responses import JSONResponse

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router
from reflexio.models import Config, SetConfigResponse
from reflexio.service import org_config

__all__ = ["router"]

router = api_router("config")

ConfigBody = Annotated[dict[str, Any], Body(description="A Config object (partial for update_config)")]


@router.post("/set_config")
def set_config(body: ConfigBody, core: CoreDep, caller: CallerDep) -> SetConfigResponse:
    """Replace the org's config; masked secrets sent back keep their stored values."""
    return org_config.set_config(core, caller.org_id, body)


@router.post("/update_config")
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
