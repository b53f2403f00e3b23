"""User and agent playbooks: add, read, edit, review, search, delete."""

from __future__ import annotations

from starlette.requests import Request

from reflexio.api.auth import CallerDep, CoreDep, require_reviewer
from reflexio.api.lifecycle import cancellable
from reflexio.api.routes import api_router, documented
from reflexio.models import (
    AddAgentPlaybookRequest,
    AddAgentPlaybookResponse,
    AddUserPlaybookRequest,
    AddUserPlaybookResponse,
    BulkDeleteResponse,
    DeleteAgentPlaybookRequest,
    DeleteAgentPlaybookResponse,
    DeleteAgentPlaybooksByIdsRequest,
    DeleteUserPlaybookRequest,
    DeleteUserPlaybookResponse,
    DeleteUserPlaybooksByIdsRequest,
    GetAgentPlaybooksRequest,
    GetAgentPlaybooksViewResponse,
    GetUserPlaybooksRequest,
    GetUserPlaybooksViewResponse,
    PlaybookStatus,
    SearchAgentPlaybookRequest,
    SearchAgentPlaybooksViewResponse,
    SearchUserPlaybookRequest,
    SearchUserPlaybooksViewResponse,
    UpdateAgentPlaybookRequest,
    UpdateAgentPlaybookResponse,
    UpdatePlaybookStatusRequest,
    UpdatePlaybookStatusResponse,
    UpdateUserPlaybookRequest,
    UpdateUserPlaybookResponse,
)
from reflexio.service import playbooks, search

__all__ = ["router"]

router = api_router("playbooks")


@router.post("/add_user_playbook")
async def add_user_playbook(
    body: AddUserPlaybookRequest, request: Request, core: CoreDep, caller: CallerDep
) -> AddUserPlaybookResponse:
    """Store user playbooks directly (stopped, storing nothing, if the client leaves)."""
    return await cancellable(
        request, playbooks.add_user_playbooks, core, caller.org_id, body, actor=caller.actor
    )


@router.post("/add_agent_playbook")
async def add_agent_playbook(
    body: AddAgentPlaybookRequest, request: Request, core: CoreDep, caller: CallerDep
) -> AddAgentPlaybookResponse:
    """Store agent playbooks directly (pending review unless a reviewer says otherwise)."""
    decided = {p.playbook_status for p in body.agent_playbooks} - {PlaybookStatus.PENDING}
    if decided:
        require_reviewer(caller, f"adding playbooks already {', '.join(sorted(decided))}")
    return await cancellable(
        request, playbooks.add_agent_playbooks, core, caller.org_id, body, actor=caller.actor
    )


@router.post("/get_user_playbooks")
def get_user_playbooks(
    body: GetUserPlaybooksRequest, core: CoreDep, caller: CallerDep
) -> GetUserPlaybooksViewResponse:
    """User playbooks by scope (every non-tombstone state unless filtered)."""
    return playbooks.get_user_playbooks(core, caller.org_id, body)


@router.post("/get_agent_playbooks")
def get_agent_playbooks(
    body: GetAgentPlaybooksRequest, core: CoreDep, caller: CallerDep
) -> GetAgentPlaybooksViewResponse:
    """Agent playbooks in any review state (current versions unless filtered)."""
    return playbooks.get_agent_playbooks(core, caller.org_id, body)


@router.put("/update_user_playbook", responses=documented(404))
def update_user_playbook(
    body: UpdateUserPlaybookRequest, core: CoreDep, caller: CallerDep
) -> UpdateUserPlaybookResponse:
    """Edit a user playbook's text (404 when it does not exist)."""
    return playbooks.update_user_playbook(core, caller.org_id, body, actor=caller.actor)


@router.put("/update_agent_playbook", responses=documented(404, 409))
def update_agent_playbook(
    body: UpdateAgentPlaybookRequest, core: CoreDep, caller: CallerDep
) -> UpdateAgentPlaybookResponse:
    """Edit an agent playbook's text and/or review state (404 when it does not exist)."""
    if body.playbook_status is not None:
        require_reviewer(caller, f"setting its status to {body.playbook_status}")
    return playbooks.update_agent_playbook(core, caller.org_id, body, actor=caller.actor)


@router.put("/update_agent_playbook_status", responses=documented(404, 409))
def update_agent_playbook_status(
    body: UpdatePlaybookStatusRequest, core: CoreDep, caller: CallerDep
) -> UpdatePlaybookStatusResponse:
    """Approve, reject or re-open an agent playbook (rejected ones leave retrieval at once)."""
    require_reviewer(caller, f"setting its status to {body.playbook_status}")
    return playbooks.update_agent_playbook_status(core, caller.org_id, body, actor=caller.actor)


@router.post("/search_user_playbooks")
def search_user_playbooks(
    body: SearchUserPlaybookRequest, core: CoreDep, caller: CallerDep
) -> SearchUserPlaybooksViewResponse:
    """User playbooks ranked by relevance to a query, with scores."""
    return search.search_user_playbooks(core, caller.org_id, body)


@router.post("/search_agent_playbooks")
def search_agent_playbooks(
    body: SearchAgentPlaybookRequest, core: CoreDep, caller: CallerDep
) -> SearchAgentPlaybooksViewResponse:
    """Agent playbooks ranked by relevance (approved and pending unless filtered; never rejected)."""
    return search.search_agent_playbooks(core, caller.org_id, body)


@router.delete("/delete_user_playbook", responses=documented(404))
def delete_user_playbook(
    body: DeleteUserPlaybookRequest, core: CoreDep, caller: CallerDep
) -> DeleteUserPlaybookResponse:
    """Delete one user playbook (404 when it does not exist)."""
    return playbooks.delete_user_playbook(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_agent_playbook", responses=documented(404, 409))
def delete_agent_playbook(
    body: DeleteAgentPlaybookRequest, core: CoreDep, caller: CallerDep
) -> DeleteAgentPlaybookResponse:
    """Delete one agent playbook (404 when it does not exist)."""
    return playbooks.delete_agent_playbook(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_user_playbooks_by_ids")
def delete_user_playbooks_by_ids(
    body: DeleteUserPlaybooksByIdsRequest, core: CoreDep, caller: CallerDep
) -> BulkDeleteResponse:
    """Delete the listed user playbooks that exist."""
    return playbooks.delete_user_playbooks_by_ids(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_agent_playbooks_by_ids")
def delete_agent_playbooks_by_ids(
    body: DeleteAgentPlaybooksByIdsRequest, core: CoreDep, caller: CallerDep
) -> BulkDeleteResponse:
    """Delete the listed agent playbooks that exist."""
    return playbooks.delete_agent_playbooks_by_ids(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_all_playbooks")
def delete_all_playbooks(core: CoreDep, caller: CallerDep) -> BulkDeleteResponse:
    """Delete every user and agent playbook of the org."""
    return playbooks.delete_all_playbooks(core, caller.org_id, actor=caller.actor)


@router.delete("/delete_all_user_playbooks")
def delete_all_user_playbooks(core: CoreDep, caller: CallerDep) -> BulkDeleteResponse:
    """Delete every user playbook of the org."""
    return playbooks.delete_all_user_playbooks(core, caller.org_id, actor=caller.actor)


@router.delete("/delete_all_agent_playbooks")
def delete_all_agent_playbooks(core: CoreDep, caller: CallerDep) -> BulkDeleteResponse:
    """Delete every agent playbook of the org."""
    return playbooks.delete_all_agent_playbooks(core, caller.org_id, actor=caller.actor)
