"""Client methods for playbooks: behaviour rules learned per user and aggregated per agent.

User playbooks come from one user's sessions; agent playbooks generalise them for an agent
version and go through human review (``pending`` → ``approved``/``rejected``) before
:meth:`search` serves them by default. Each function is the body of the client method of the
same name (see ``_transport``); the docstrings are the public methods' docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reflexio.client._transport import Call, Plan, When, build, dump, parse_as, single, single_if
from reflexio.models import (
    AddAgentPlaybookRequest,
    AddAgentPlaybookResponse,
    AddUserPlaybookRequest,
    AddUserPlaybookResponse,
    AgentPlaybook,
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
    SearchMode,
    SearchUserPlaybookRequest,
    SearchUserPlaybooksViewResponse,
    Status,
    UpdateAgentPlaybookRequest,
    UpdateAgentPlaybookResponse,
    UpdatePlaybookStatusRequest,
    UpdatePlaybookStatusResponse,
    UpdateUserPlaybookRequest,
    UpdateUserPlaybookResponse,
    UserPlaybook,
)

__all__ = [
    "add_agent_playbooks",
    "add_user_playbook",
    "delete_agent_playbook",
    "delete_agent_playbooks_by_ids",
    "delete_all_agent_playbooks",
    "delete_all_playbooks",
    "delete_all_user_playbooks",
    "delete_user_playbook",
    "delete_user_playbooks_by_ids",
    "get_agent_playbooks",
    "get_user_playbooks",
    "search_agent_playbooks",
    "search_user_playbooks",
    "update_agent_playbook",
    "update_agent_playbook_status",
    "update_user_playbook",
]

StatusFilter = list[Status | str | None]


def add_user_playbook(
    user_playbooks: list[UserPlaybook | Mapping[str, Any]],
) -> Plan[AddUserPlaybookResponse]:
    """Store user playbooks directly, e.g. rules you already know a user wants followed.

    Args:
        user_playbooks: 1 to 1,000 playbooks, each with ``agent_version``, ``request_id`` and
            a ``content`` or ``trigger``.

    Returns:
        How many playbooks were stored.
    """
    request = AddUserPlaybookRequest.model_validate({"user_playbooks": list(user_playbooks)})
    return single(
        Call("POST", "/api/add_user_playbook", parse_as(AddUserPlaybookResponse), json=dump(request))
    )


def add_agent_playbooks(
    agent_playbooks: list[AgentPlaybook | Mapping[str, Any]],
) -> Plan[AddAgentPlaybookResponse]:
    """Store agent playbooks directly, e.g. house rules written by the team.

    They arrive ``pending`` unless ``playbook_status`` says otherwise; :meth:`search` serves
    approved and pending ones by default, never rejected ones.

    Args:
        agent_playbooks: The playbooks, each with ``agent_version`` and ``content``.

    Returns:
        How many playbooks were stored.
    """
    request = AddAgentPlaybookRequest.model_validate({"agent_playbooks": list(agent_playbooks)})
    return single(
        Call("POST", "/api/add_agent_playbook", parse_as(AddAgentPlaybookResponse), json=dump(request))
    )


def get_user_playbooks(
    request: GetUserPlaybooksRequest | Mapping[str, Any] | None = None,
    *,
    limit: int | None = None,
    user_playbook_id: int | None = None,
    user_id: str | None = None,
    request_id: str | None = None,
    query: str | None = None,
    playbook_name: str | None = None,
    agent_version: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    status_filter: StatusFilter | None = None,
    tags: list[str] | None = None,
) -> Plan[GetUserPlaybooksViewResponse]:
    """List user playbooks with exact filters (use :meth:`search_user_playbooks` to rank).

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        limit: At most this many (server default 100).
        user_playbook_id: Only this playbook.
        user_id: Only this user's playbooks.
        request_id: Only playbooks learned from this request.
        query: Case-insensitive text filter.
        playbook_name: Only this playbook name.
        agent_version: Only this agent version.
        start_time: Only playbooks created at or after this time.
        end_time: Only playbooks created before this time.
        status_filter: Lifecycle states to include; ``None`` in the list means current.
        tags: Playbooks having any of these tags.

    Returns:
        The matching user playbooks.
    """
    req = build(
        GetUserPlaybooksRequest,
        request,
        limit=limit,
        user_playbook_id=user_playbook_id,
        user_id=user_id,
        request_id=request_id,
        query=query,
        playbook_name=playbook_name,
        agent_version=agent_version,
        start_time=start_time,
        end_time=end_time,
        status_filter=status_filter,
        tags=tags,
    )
    return single(
        Call("POST", "/api/get_user_playbooks", parse_as(GetUserPlaybooksViewResponse), json=dump(req))
    )


def get_agent_playbooks(
    request: GetAgentPlaybooksRequest | Mapping[str, Any] | None = None,
    force_refresh: bool = False,
    *,
    limit: int | None = None,
    agent_playbook_id: int | None = None,
    query: str | None = None,
    playbook_name: str | None = None,
    agent_version: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    status_filter: StatusFilter | None = None,
    playbook_status_filter: PlaybookStatus | str | None = None,
    tags: list[str] | None = None,
) -> Plan[GetAgentPlaybooksViewResponse]:
    """List agent playbooks with exact filters, e.g. the ones waiting for review.

    Every call reads fresh data: unlike Reflexio's client there is no 10-minute local cache,
    so ``force_refresh`` is accepted for compatibility and has nothing to bypass.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        force_refresh: Accepted and ignored (nothing is cached).
        limit: At most this many (server default 100).
        agent_playbook_id: Only this playbook.
        query: Case-insensitive text filter.
        playbook_name: Only this playbook name.
        agent_version: Only this agent version.
        start_time: Only playbooks created at or after this time.
        end_time: Only playbooks created before this time.
        status_filter: Lifecycle states to include; ``None`` in the list means current.
        playbook_status_filter: Only this review state (``pending``, ``approved``, ``rejected``).
        tags: Playbooks having any of these tags.

    Returns:
        The matching agent playbooks.
    """
    del force_refresh
    req = build(
        GetAgentPlaybooksRequest,
        request,
        limit=limit,
        agent_playbook_id=agent_playbook_id,
        query=query,
        playbook_name=playbook_name,
        agent_version=agent_version,
        start_time=start_time,
        end_time=end_time,
        status_filter=status_filter,
        playbook_status_filter=playbook_status_filter,
        tags=tags,
    )
    return single(
        Call("POST", "/api/get_agent_playbooks", parse_as(GetAgentPlaybooksViewResponse), json=dump(req))
    )


def update_user_playbook(
    user_playbook_id: int,
    *,
    playbook_name: str | None = None,
    content: str | None = None,
    trigger: str | None = None,
    rationale: str | None = None,
) -> Plan[UpdateUserPlaybookResponse]:
    """Rewrite a user playbook in place; fields left as ``None`` keep their stored value.

    Args:
        user_playbook_id: The playbook to change.
        playbook_name: New name.
        content: New rule text.
        trigger: New condition under which the rule applies.
        rationale: New reason for the rule.

    Returns:
        Whether the playbook was updated.

    Raises:
        NotFoundError: No such playbook.
    """
    req = UpdateUserPlaybookRequest(
        user_playbook_id=user_playbook_id,
        playbook_name=playbook_name,
        content=content,
        trigger=trigger,
        rationale=rationale,
    )
    return single(
        Call("PUT", "/api/update_user_playbook", parse_as(UpdateUserPlaybookResponse), json=dump(req))
    )


def update_agent_playbook(
    agent_playbook_id: int,
    *,
    playbook_name: str | None = None,
    content: str | None = None,
    trigger: str | None = None,
    rationale: str | None = None,
    playbook_status: PlaybookStatus | str | None = None,
) -> Plan[UpdateAgentPlaybookResponse]:
    """Rewrite an agent playbook in place (a reviewer's edit); ``None`` fields stay as stored.

    Args:
        agent_playbook_id: The playbook to change.
        playbook_name: New name.
        content: New rule text.
        trigger: New condition under which the rule applies.
        rationale: New reason for the rule.
        playbook_status: New review state.

    Returns:
        Whether the playbook was updated.

    Raises:
        NotFoundError: No such playbook.
    """
    req = UpdateAgentPlaybookRequest.model_validate(
        {
            "agent_playbook_id": agent_playbook_id,
            "playbook_name": playbook_name,
            "content": content,
            "trigger": trigger,
            "rationale": rationale,
            "playbook_status": playbook_status,
        }
    )
    return single(
        Call("PUT", "/api/update_agent_playbook", parse_as(UpdateAgentPlaybookResponse), json=dump(req))
    )


def update_agent_playbook_status(
    agent_playbook_id: int,
    *,
    playbook_status: PlaybookStatus | str,
    expected_status: PlaybookStatus | str | None = None,
    note: str | None = None,
) -> Plan[UpdatePlaybookStatusResponse]:
    """Approve, reject or re-open an agent playbook: the review step that gates retrieval.

    Args:
        agent_playbook_id: The playbook to review.
        playbook_status: ``"approved"``, ``"rejected"`` or ``"pending"``.
        expected_status: The state you decided from; if someone changed it meanwhile the
            server refuses with a ``ConflictError`` naming the current state.
        note: Why, kept in the playbook's history with who decided.

    Returns:
        Whether the review state changed.

    Raises:
        NotFoundError: No such playbook.
        ConflictError: The decision is not allowed from the current state (approving an
            approved playbook, deciding on a deleted one) or the state moved.
    """
    fields = {"agent_playbook_id": agent_playbook_id, "playbook_status": playbook_status}
    extra = {"expected_status": expected_status, "note": note}
    req = UpdatePlaybookStatusRequest.model_validate({**fields, **{k: v for k, v in extra.items() if v}})
    return single(
        Call(
            "PUT", "/api/update_agent_playbook_status", parse_as(UpdatePlaybookStatusResponse), json=dump(req)
        )
    )


def search_user_playbooks(
    request: SearchUserPlaybookRequest | Mapping[str, Any] | None = None,
    *,
    query: str | None = None,
    user_id: str | None = None,
    agent_version: str | None = None,
    playbook_name: str | None = None,
    source: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    status_filter: StatusFilter | None = None,
    tags: list[str] | None = None,
    top_k: int | None = None,
    threshold: float | None = None,
    enable_reformulation: bool | None = None,
    search_mode: SearchMode | str | None = None,
    request_id: str | None = None,
    session_id: str | None = None,
) -> Plan[SearchUserPlaybooksViewResponse]:
    """Rank user playbooks by relevance to a query (one kind only; see :meth:`search`).

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        query: What the agent is about to answer.
        user_id: Only this user's playbooks.
        agent_version: Only this agent version.
        playbook_name: Only this playbook name.
        source: Only playbooks learned from requests with this source.
        start_time: Only playbooks created at or after this time.
        end_time: Only playbooks created before this time.
        status_filter: Lifecycle states to include; ``None`` in the list means current.
        tags: Playbooks having any of these tags.
        top_k: At most this many, 1 to 100 (server default 10).
        threshold: Minimum relevance (0..1); ``None`` uses the embedder's default.
        enable_reformulation: Let an LLM rewrite the query first.
        search_mode: ``"hybrid"`` (default), ``"vector"`` or ``"fts"``.
        request_id: Your correlation id for this search turn.
        session_id: Your session id for this search turn.

    Returns:
        The matching user playbooks, best first, each with its ``score``.
    """
    req = build(
        SearchUserPlaybookRequest,
        request,
        query=query,
        user_id=user_id,
        agent_version=agent_version,
        playbook_name=playbook_name,
        source=source,
        start_time=start_time,
        end_time=end_time,
        status_filter=status_filter,
        tags=tags,
        top_k=top_k,
        threshold=threshold,
        enable_reformulation=enable_reformulation,
        search_mode=search_mode,
        request_id=request_id,
        session_id=session_id,
    )
    return single(
        Call("POST", "/api/search_user_playbooks", parse_as(SearchUserPlaybooksViewResponse), json=dump(req))
    )


def search_agent_playbooks(
    request: SearchAgentPlaybookRequest | Mapping[str, Any] | None = None,
    *,
    query: str | None = None,
    user_id: str | None = None,
    agent_version: str | None = None,
    playbook_name: str | None = None,
    source: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    status_filter: StatusFilter | None = None,
    playbook_status_filter: PlaybookStatus | str | list[PlaybookStatus | str] | None = None,
    tags: list[str] | None = None,
    top_k: int | None = None,
    threshold: float | None = None,
    enable_reformulation: bool | None = None,
    search_mode: SearchMode | str | None = None,
) -> Plan[SearchAgentPlaybooksViewResponse]:
    """Rank agent playbooks by relevance to a query (one kind only; see :meth:`search`).

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        query: What the agent is about to answer.
        user_id: The user being answered; picks the experiment arm, does not filter.
        agent_version: Only this agent version.
        playbook_name: Only this playbook name.
        source: Only playbooks linked to a user playbook with this source.
        start_time: Only playbooks created at or after this time.
        end_time: Only playbooks created before this time.
        status_filter: Lifecycle states to include (default: current and pending).
        playbook_status_filter: Review state(s) to include.
        tags: Playbooks having any of these tags.
        top_k: At most this many (server default 10).
        threshold: Minimum relevance (0..1); ``None`` uses the embedder's default.
        enable_reformulation: Let an LLM rewrite the query first.
        search_mode: ``"hybrid"`` (default), ``"vector"`` or ``"fts"``.

    Returns:
        The matching agent playbooks, best first, each with its ``score``.
    """
    req = build(
        SearchAgentPlaybookRequest,
        request,
        query=query,
        user_id=user_id,
        agent_version=agent_version,
        playbook_name=playbook_name,
        source=source,
        start_time=start_time,
        end_time=end_time,
        status_filter=status_filter,
        playbook_status_filter=playbook_status_filter,
        tags=tags,
        top_k=top_k,
        threshold=threshold,
        enable_reformulation=enable_reformulation,
        search_mode=search_mode,
    )
    return single(
        Call(
            "POST", "/api/search_agent_playbooks", parse_as(SearchAgentPlaybooksViewResponse), json=dump(req)
        )
    )


def delete_user_playbook(
    user_playbook_id: int, wait_for_response: bool = False
) -> Plan[DeleteUserPlaybookResponse | None]:
    """Delete one user playbook.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned (Reflexio's client sent it in the background).

    Args:
        user_playbook_id: The playbook to delete.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.
    """
    req = DeleteUserPlaybookRequest(user_playbook_id=user_playbook_id)
    call = Call("DELETE", "/api/delete_user_playbook", parse_as(DeleteUserPlaybookResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_agent_playbook(
    agent_playbook_id: int, wait_for_response: bool = False
) -> Plan[DeleteAgentPlaybookResponse | None]:
    """Delete one agent playbook (rejecting it keeps the evidence; deleting does not).

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned.

    Args:
        agent_playbook_id: The playbook to delete.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.
    """
    req = DeleteAgentPlaybookRequest(agent_playbook_id=agent_playbook_id)
    call = Call("DELETE", "/api/delete_agent_playbook", parse_as(DeleteAgentPlaybookResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_user_playbooks_by_ids(user_playbook_ids: list[int]) -> Plan[BulkDeleteResponse]:
    """Delete several user playbooks in one call.

    Args:
        user_playbook_ids: 1 to 10,000 playbook ids.

    Returns:
        How many playbooks were deleted.
    """
    req = DeleteUserPlaybooksByIdsRequest(user_playbook_ids=user_playbook_ids)
    return single(
        Call("DELETE", "/api/delete_user_playbooks_by_ids", parse_as(BulkDeleteResponse), json=dump(req))
    )


def delete_agent_playbooks_by_ids(agent_playbook_ids: list[int]) -> Plan[BulkDeleteResponse]:
    """Delete several agent playbooks in one call.

    Args:
        agent_playbook_ids: 1 to 10,000 playbook ids.

    Returns:
        How many playbooks were deleted.
    """
    req = DeleteAgentPlaybooksByIdsRequest(agent_playbook_ids=agent_playbook_ids)
    return single(
        Call("DELETE", "/api/delete_agent_playbooks_by_ids", parse_as(BulkDeleteResponse), json=dump(req))
    )


def delete_all_playbooks() -> Plan[BulkDeleteResponse]:
    """Delete every user and agent playbook of the org.

    Returns:
        How many playbooks were deleted.
    """
    return single(Call("DELETE", "/api/delete_all_playbooks", parse_as(BulkDeleteResponse)))


def delete_all_user_playbooks() -> Plan[BulkDeleteResponse]:
    """Delete every user playbook of the org; agent playbooks stay.

    Returns:
        How many playbooks were deleted.
    """
    return single(Call("DELETE", "/api/delete_all_user_playbooks", parse_as(BulkDeleteResponse)))


def delete_all_agent_playbooks() -> Plan[BulkDeleteResponse]:
    """Delete every agent playbook of the org; user playbooks stay.

    Returns:
        How many playbooks were deleted.
    """
    return single(Call("DELETE", "/api/delete_all_agent_playbooks", parse_as(BulkDeleteResponse)))
