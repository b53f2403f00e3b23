"""The client method an agent calls before answering: one search across every learning kind.

The function is the body of the client method of the same name (see ``_transport``); the
docstring is the public method's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reflexio.client._transport import Call, Plan, build, dump, parse_as, single
from reflexio.models import (
    ConversationTurn,
    PlaybookStatus,
    SearchMode,
    UnifiedSearchRequest,
    UnifiedSearchViewResponse,
)

__all__ = ["search"]


def search(
    request: UnifiedSearchRequest | Mapping[str, Any] | None = None,
    *,
    query: str | None = None,
    top_k: int | None = None,
    threshold: float | None = None,
    agent_version: str | None = None,
    playbook_name: str | None = None,
    user_id: str | None = None,
    source: str | None = None,
    tags: list[str] | None = None,
    entity_types: list[str] | None = None,
    agent_playbook_status_filter: list[PlaybookStatus | str] | None = None,
    enable_reformulation: bool | None = None,
    enable_agent_answer: bool | None = None,
    conversation_history: list[ConversationTurn] | list[Mapping[str, Any]] | None = None,
    search_mode: SearchMode | str | None = None,
    request_id: str | None = None,
    session_id: str | None = None,
    interaction_id: int | None = None,
    max_tokens: int | None = None,
    include_already_served: bool | None = None,
) -> Plan[UnifiedSearchViewResponse]:
    """Retrieve what Reflexio learned that is relevant to the message the agent must answer.

    One call searches profiles, user playbooks and agent playbooks and ranks each kind.
    Inject the result into the prompt, then publish the turn with the same learnings as
    ``retrieved_learnings``; ``result.to_prompt(max_tokens)`` renders the prompt block and
    returns exactly the matching ``retrieved_learnings``.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        query: The user's message (or what the agent is about to do).
        top_k: At most this many results per kind, 1 to 100 (server default 5).
        threshold: Minimum relevance (0..1); ``None`` uses the embedder's default.
        agent_version: Only playbooks of this agent version.
        playbook_name: Only playbooks with this name.
        user_id: Whose profiles and user playbooks; profiles need it.
        source: Only learnings from this source.
        tags: Learnings having any of these tags.
        entity_types: Kinds to search among ``"profiles"``, ``"user_playbooks"`` and
            ``"agent_playbooks"``; ``None`` searches all three.
        agent_playbook_status_filter: Review states of agent playbooks to serve; ``None``
            or ``[]`` means approved and pending.
        enable_reformulation: Let an LLM rewrite the query (and read time hints) first.
        enable_agent_answer: Ask for a synthesised answer where the server supports it.
        conversation_history: Prior turns (``{"role", "content"}``) for the rewrite.
        search_mode: ``"hybrid"`` (default), ``"vector"`` or ``"fts"``.
        request_id: Your correlation id for this turn.
        session_id: The session; learnings already served in it are skipped.
        interaction_id: Your id for this turn (positive).
        max_tokens: Cap the total size of the results (about 4 characters a token).
        include_already_served: Serve learnings again even if this session already got them.

    Returns:
        Ranked profiles, user playbooks and agent playbooks, each with a ``score``;
        ``degraded`` is true when a part of the search could not answer.

    Raises:
        ServiceUnavailableError: No part of the search could answer.
    """
    req = build(
        UnifiedSearchRequest,
        request,
        query=query,
        top_k=top_k,
        threshold=threshold,
        agent_version=agent_version,
        playbook_name=playbook_name,
        user_id=user_id,
        source=source,
        tags=tags,
        entity_types=entity_types,
        agent_playbook_status_filter=agent_playbook_status_filter,
        enable_reformulation=enable_reformulation,
        enable_agent_answer=enable_agent_answer,
        conversation_history=conversation_history,
        search_mode=search_mode,
        request_id=request_id,
        session_id=session_id,
        interaction_id=interaction_id,
        max_tokens=max_tokens,
        include_already_served=include_already_served,
    )
    return single(Call("POST", "/api/search", parse_as(UnifiedSearchViewResponse), json=dump(req)))
