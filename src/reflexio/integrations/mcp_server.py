"""Reflexio as an MCP server (the official ``mcp`` SDK), over stdio and streamable HTTP.

The tools are written once, over a :class:`~reflexio.integrations.gateway.Gateway`:

* ``search``: the prompt block to inject and the ``retrieved_learnings`` to publish with the
  answer (exactly the learnings in the block);
* ``publish``: store a turn (idempotent on ``request_id``) so Reflexio learns from it;
* ``list_learnings`` / ``get_learning``: read profiles, user playbooks and agent playbooks;
* ``approve`` / ``reject``: review agent playbooks, offered only to callers allowed to review
  (``reflexio mcp --review`` on stdio; over HTTP, callers on this machine and keys created with
  ``reflexio keys create --reviewer``);

and one resource template, ``reflexio://users/{user_id}/standing-preferences``: what Reflexio
keeps in mind about a user whatever the question, the user's current profiles and user
playbooks tagged ``STANDING_TAG`` (the ones search serves for every query of that user).

``reflexio mcp`` runs :func:`stdio_server` with a :class:`ClientGateway` (any server, through
the SDK). The API mounts :func:`http_mount` at ``/api/mcp``, authenticated like every ``/api``
route, with a :class:`ServiceGateway` for the caller's org. It runs stateless with JSON
responses, so any API process can answer any request (nothing lives in process memory).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

from reflexio.errors import BadRequestError, NotFoundError, ReflexioError
from reflexio.integrations.gateway import Gateway, ServiceGateway
from reflexio.models import (
    GetAgentPlaybooksRequest,
    GetUserPlaybooksRequest,
    GetUserProfilesRequest,
    InteractionData,
    PlaybookStatus,
    PublishUserInteractionRequest,
    RetrievedLearning,
    UnifiedSearchRequest,
    UpdatePlaybookStatusRequest,
)
from reflexio.models.entities import AgentPlaybookView, ProfileView, UserPlaybookView
from reflexio.prompt_text import STANDING_TAG, rule_line
from reflexio.service.core import Core

__all__ = [
    "CALLER_SCOPE_KEY",
    "Learning",
    "McpHttp",
    "Published",
    "Reviewed",
    "SearchResult",
    "build_server",
    "http_mount",
    "stdio_server",
]

#: Where the API's guard leaves the authenticated caller in the ASGI scope.
CALLER_SCOPE_KEY = "reflexio.caller"

Kind = Literal["profile", "user_playbook", "agent_playbook"]

INSTRUCTIONS = (
    "Reflexio remembers what users corrected and what worked. Before answering, call `search` "
    "with the user's message and put its `prompt` in your context; after answering, call "
    "`publish` with the turns and the `retrieved_learnings` that search returned."
)
STANDING_NOTE = (
    "These are the user's standing learnings (tag `standing`: language, units, time zone, length, "
    "tone, format, accessibility), which search serves whatever the question."
)


class SearchResult(BaseModel):
    """What to inject before answering, and what to report back with the answer."""

    prompt: str = Field(description="Rules and facts to put in the context (empty when nothing matched).")
    retrieved_learnings: list[RetrievedLearning] = Field(
        description="Exactly the learnings in `prompt`: pass them to `publish` with the answer."
    )
    tokens: int = Field(description="Estimated size of `prompt` in tokens.")
    degraded: bool = Field(description="True when part of the search could not answer.")


class Learning(BaseModel):
    """One learning, whatever its kind."""

    kind: Kind
    id: str
    content: str
    trigger: str | None = None
    user_id: str | None = None
    agent_version: str | None = None
    status: str | None = Field(default=None, description="Lifecycle status; null means current.")
    review: str | None = Field(default=None, description="Review state of an agent playbook.")
    score: float | None = None
    tags: list[str] = Field(default_factory=list)


class Published(BaseModel):
    """The server's acknowledgement of a publish."""

    request_id: str
    learning_status: str | None = None
    warnings: list[str] = Field(default_factory=list)


class Reviewed(BaseModel):
    """The outcome of a review decision."""

    agent_playbook_id: int
    review: str
    message: str


class _Caller(Protocol):
    """The API's authenticated caller, as the guard leaves it in the scope."""

    org_id: str
    actor: str
    reviewer: bool


GatewayOf = Callable[[Context], Gateway]


@contextlib.contextmanager
def _told(error: type[ToolError] | type[ResourceError] = ToolError) -> Iterator[None]:
    """Reflexio's errors reach the agent with their message (the SDK hides any other crash)."""
    try:
        yield
    except ReflexioError as exc:
        raise error(f"{type(exc).__name__}: {exc}") from exc


def _profile(view: ProfileView) -> Learning:
    return Learning(
        kind="profile",
        id=view.profile_id,
        content=view.content,
        user_id=view.user_id,
        status=None if view.status is None else str(view.status.value),
        score=view.score,
        tags=list(view.tags),
    )


def _user_playbook(view: UserPlaybookView) -> Learning:
    return Learning(
        kind="user_playbook",
        id=str(view.user_playbook_id),
        content=view.content,
        trigger=view.trigger,
        user_id=view.user_id,
        agent_version=view.agent_version,
        status=None if view.status is None else str(view.status.value),
        score=view.score,
        tags=list(view.tags),
    )


def _agent_playbook(view: AgentPlaybookView) -> Learning:
    return Learning(
        kind="agent_playbook",
        id=str(view.agent_playbook_id),
        content=view.content,
        trigger=view.trigger,
        agent_version=view.agent_version,
        status=None if view.status is None else str(view.status.value),
        review=str(PlaybookStatus(view.playbook_status).value),
        score=view.score,
        tags=list(view.tags),
    )


async def _learnings(
    gateway: Gateway,
    kind: Kind,
    *,
    user_id: str | None,
    agent_version: str | None,
    query: str | None,
    limit: int,
) -> list[Learning]:
    if kind == "profile":
        if not user_id:
            raise BadRequestError("list_learnings: profiles belong to a user; give user_id")
        found = await gateway.profiles(GetUserProfilesRequest(user_id=user_id, query=query, top_k=limit))
        return [_profile(p) for p in found.user_profiles]
    if kind == "user_playbook":
        users = await gateway.user_playbooks(
            GetUserPlaybooksRequest(user_id=user_id, agent_version=agent_version, query=query, limit=limit)
        )
        return [_user_playbook(p) for p in users.user_playbooks]
    agents = await gateway.agent_playbooks(
        GetAgentPlaybooksRequest(agent_version=agent_version, query=query, limit=limit)
    )
    return [_agent_playbook(p) for p in agents.agent_playbooks]


async def _one(gateway: Gateway, kind: Kind, learning_id: str, user_id: str | None) -> Learning:
    if kind == "profile":
        if not user_id:
            raise BadRequestError("get_learning: a profile is looked up within its user; give user_id")
        found = await gateway.profiles(GetUserProfilesRequest(user_id=user_id, profile_id=learning_id))
        rows = [_profile(p) for p in found.user_profiles]
    else:
        number = _playbook_id(learning_id)
        if kind == "user_playbook":
            users = await gateway.user_playbooks(GetUserPlaybooksRequest(user_playbook_id=number))
            rows = [_user_playbook(p) for p in users.user_playbooks]
        else:
            agents = await gateway.agent_playbooks(GetAgentPlaybooksRequest(agent_playbook_id=number))
            rows = [_agent_playbook(p) for p in agents.agent_playbooks]
    if not rows:
        raise NotFoundError(f"{kind.replace('_', ' ')} {learning_id} not found")
    return rows[0]


def _playbook_id(learning_id: str) -> int:
    if not learning_id.isdigit() or int(learning_id) <= 0:
        raise BadRequestError(f"a playbook id is a positive number, got {learning_id!r}")
    return int(learning_id)


def build_server(gateway_of: GatewayOf, *, review: bool) -> MCPServer:
    """The MCP server with Reflexio's tools and resources.

    Args:
        gateway_of: The gateway serving one request (the same one for stdio; the caller's
            for HTTP).
        review: Offer the ``approve`` and ``reject`` tools.
    """
    server: MCPServer = MCPServer("reflexio", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    async def search(
        query: str,
        ctx: Context,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_version: str | None = None,
        top_k: int = 5,
        max_tokens: int | None = None,
    ) -> SearchResult:
        """Find what Reflexio learned that matters for this message, ready to inject.

        Args:
            query: The user's message (or what you are about to do).
            user_id: Whose profiles and user playbooks to include.
            session_id: The conversation; learnings already served in it are skipped.
            agent_version: Only playbooks of this agent version.
            top_k: At most this many learnings per kind.
            max_tokens: Cap the size of the prompt block.
        """
        req = UnifiedSearchRequest(
            query=query, user_id=user_id, session_id=session_id, agent_version=agent_version, top_k=top_k
        )
        with _told():
            found = await gateway_of(ctx).search(req)
        block = found.to_prompt(max_tokens)
        return SearchResult(
            prompt=block.text,
            retrieved_learnings=block.retrieved_learnings,
            tokens=block.tokens,
            degraded=found.degraded,
        )

    @server.tool()
    async def publish(
        user_id: str,
        session_id: str,
        interactions: list[InteractionData],
        ctx: Context,
        agent_version: str | None = None,
        request_id: str | None = None,
        session_finished: bool = False,
    ) -> Published:
        """Record what happened in a turn so Reflexio learns from it.

        Args:
            user_id: Whose session this is.
            session_id: The conversation this turn belongs to.
            interactions: The turns: role, content, tools_used (name, status), and on the
                agent's answer the retrieved_learnings that search returned.
            agent_version: Version of the agent that answered.
            request_id: Your id for this turn; a retry with the same id is stored once.
            session_finished: The session is over: learn from it and judge it now.
        """
        fields: dict[str, Any] = {"agent_version": agent_version} if agent_version else {}
        req = PublishUserInteractionRequest(
            user_id=user_id,
            session_id=session_id,
            interaction_data_list=interactions,
            request_id=request_id,
            session_finished=session_finished,
            **fields,
        )
        with _told():
            out = await gateway_of(ctx).publish(req)
        return Published(
            request_id=out.request_id or "", learning_status=out.learning_status, warnings=out.warnings
        )

    @server.tool()
    async def list_learnings(
        kind: Kind,
        ctx: Context,
        user_id: str | None = None,
        agent_version: str | None = None,
        query: str | None = None,
        limit: int = 20,
    ) -> list[Learning]:
        """List learnings of one kind: a user's profiles, user playbooks, or agent playbooks.

        Args:
            kind: "profile" (needs user_id), "user_playbook" or "agent_playbook".
            user_id: Whose learnings (profiles and user playbooks).
            agent_version: Only playbooks of this agent version.
            query: Only learnings whose text contains this.
            limit: At most this many.
        """
        with _told():
            return await _learnings(
                gateway_of(ctx), kind, user_id=user_id, agent_version=agent_version, query=query, limit=limit
            )

    @server.tool()
    async def get_learning(
        kind: Kind, learning_id: str, ctx: Context, user_id: str | None = None
    ) -> Learning:
        """One learning by kind and id (a profile also needs its user_id).

        Args:
            kind: "profile", "user_playbook" or "agent_playbook".
            learning_id: The id as search or list_learnings returned it.
            user_id: The profile's user (profiles only).
        """
        with _told():
            return await _one(gateway_of(ctx), kind, learning_id, user_id)

    if review:
        _add_review_tools(server, gateway_of)

    @server.resource(
        "reflexio://users/{user_id}/standing-preferences",
        name="standing-preferences",
        description=f"What Reflexio keeps in mind about a user whatever the question. {STANDING_NOTE}",
        mime_type="text/markdown",
    )
    async def standing_preferences(user_id: str, ctx: Context) -> str:
        gateway, tags = gateway_of(ctx), [STANDING_TAG]
        with _told(ResourceError):
            facts = await gateway.profiles(
                GetUserProfilesRequest(user_id=user_id, top_k=100, tags=tags, status_filter=[None])
            )
            rules = await gateway.user_playbooks(
                GetUserPlaybooksRequest(user_id=user_id, limit=100, tags=tags, status_filter=[None])
            )
        lines = [f"- {rule_line(r.trigger, r.content)}" for r in rules.user_playbooks]
        lines += [f"- {' '.join(p.content.split())}" for p in facts.user_profiles]
        body = "\n".join(lines) if lines else "(nothing learned about this user yet)"
        return f"# Standing preferences of {user_id}\n\n{body}\n\n_{STANDING_NOTE}_\n"

    return server


def _add_review_tools(server: MCPServer, gateway_of: GatewayOf) -> None:
    async def decide(ctx: Context, agent_playbook_id: int, decision: PlaybookStatus) -> Reviewed:
        req = UpdatePlaybookStatusRequest(agent_playbook_id=agent_playbook_id, playbook_status=decision)
        with _told():
            out = await gateway_of(ctx).review(req)
        return Reviewed(agent_playbook_id=agent_playbook_id, review=decision.value, message=out.msg or "")

    @server.tool()
    async def approve(agent_playbook_id: int, ctx: Context) -> Reviewed:
        """Approve an agent playbook: search may serve it to every user of its agent version.

        Args:
            agent_playbook_id: The agent playbook to approve.
        """
        return await decide(ctx, agent_playbook_id, PlaybookStatus.APPROVED)

    @server.tool()
    async def reject(agent_playbook_id: int, ctx: Context) -> Reviewed:
        """Reject an agent playbook: it leaves retrieval at once.

        Args:
            agent_playbook_id: The agent playbook to reject.
        """
        return await decide(ctx, agent_playbook_id, PlaybookStatus.REJECTED)


def stdio_server(gateway: Gateway, *, review: bool = False) -> MCPServer:
    """The server ``reflexio mcp`` runs over stdio: one gateway (the SDK) for every request."""
    return build_server(lambda _ctx: gateway, review=review)


@dataclass
class McpHttp:
    """The MCP endpoint an API process mounts: an ASGI app and the lifespan it needs.

    Two servers stand behind it, with and without the review tools; each request goes to the
    one its caller may use, so a caller never even sees tools it may not call.
    """

    core: Core
    path: str = "/mcp"

    def __post_init__(self) -> None:
        self._servers = {review: build_server(self._gateway_of, review=review) for review in (False, True)}
        for server in self._servers.values():
            # The API's guard already checked the caller (key, or loopback Host and Origin).
            server.streamable_http_app(
                stateless_http=True,
                json_response=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )

    def _gateway_of(self, ctx: Context) -> Gateway:
        caller = _caller_of(ctx)
        return ServiceGateway(self.core, caller.org_id, caller.actor)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller: _Caller = scope[CALLER_SCOPE_KEY]
        await self._servers[caller.reviewer].session_manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run both servers' session managers for as long as the API runs."""
        async with contextlib.AsyncExitStack() as stack:
            for server in self._servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield


def _caller_of(ctx: Context) -> _Caller:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict) or CALLER_SCOPE_KEY not in scope:
        raise RuntimeError("MCP over HTTP needs the API's guard in front of it (no caller in scope)")
    caller: _Caller = scope[CALLER_SCOPE_KEY]
    return caller


def http_mount(core: Core) -> McpHttp:
    """The MCP endpoint for the API (``/api/mcp``); see :class:`McpHttp`."""
    return McpHttp(core)
