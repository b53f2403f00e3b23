"""One user's data as a whole: export it as JSON, or delete all of it."""

from __future__ import annotations

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import IdParam, api_router
from reflexio.models import ClearUserDataRequest, ClearUserDataResponse
from reflexio.service import users
from reflexio.service.users import UserExport

__all__ = ["router"]

router = api_router("users")


@router.post("/clear_user_data")
def clear_user_data(body: ClearUserDataRequest, core: CoreDep, caller: CallerDep) -> ClearUserDataResponse:
    """Delete everything of one user (log, learnings, history, verdicts, indexes)."""
    return users.clear_user_data(core, caller.org_id, body)


@router.get("/export_user_data")
def export_user_data(user_id: IdParam, core: CoreDep, caller: CallerDep) -> UserExport:
    """Everything stored about one user, in every lifecycle state."""
    return users.export_user_data(core, caller.org_id, user_id)
