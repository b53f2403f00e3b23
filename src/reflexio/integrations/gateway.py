"""One door to Reflexio for every integration: the SDK (remote) or the service (in process).

An integration (the MCP tools, the LangChain retriever, the OpenAI Agents hooks) is written once
against :class:`Gateway`. :class:`ClientGateway` sends each call through ``AsyncReflexioClient``
to any server; :class:`ServiceGateway` calls the service use cases directly for one caller's
org, for surfaces the API server hosts itself (MCP over streamable HTTP). Both take and return
the same wire models, so a tool behaves the same whichever door it came through.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio.to_thread

from reflexio.client import AsyncReflexioClient
from reflexio.models import (
    GetAgentPlaybooksRequest,
    GetAgentPlaybooksViewResponse,
    GetProfilesViewResponse,
    GetUserPlaybooksRequest,
    GetUserPlaybooksViewResponse,
    GetUserProfilesRequest,
    PublishUserInteractionRequest,
    PublishUserInteractionResponse,
    UnifiedSearchRequest,
    UnifiedSearchViewResponse,
    UpdatePlaybookStatusRequest,
    UpdatePlaybookStatusResponse,
)
from reflexio.service import playbooks, profiles, publish, search
from reflexio.service.core import Core

__all__ = ["ClientGateway", "Gateway", "ServiceGateway"]

T = TypeVar("T")


class Gateway(Protocol):
    """What integrations ask of Reflexio (each call acts for one org, the gateway's)."""

    async def search(self, req: UnifiedSearchRequest) -> UnifiedSearchViewResponse:
        """Unified search across profiles, user playbooks and agent playbooks."""
        ...

    async def publish(self, req: PublishUserInteractionRequest) -> PublishUserInteractionResponse:
        """Store a turn (idempotent on ``request_id``) and schedule learning from it."""
        ...

    async def profiles(self, req: GetUserProfilesRequest) -> GetProfilesViewResponse:
        """One user's profiles."""
        ...

    async def user_playbooks(self, req: GetUserPlaybooksRequest) -> GetUserPlaybooksViewResponse:
        """User playbooks by scope."""
        ...

    async def agent_playbooks(self, req: GetAgentPlaybooksRequest) -> GetAgentPlaybooksViewResponse:
        """Agent playbooks by scope and review state."""
        ...

    async def review(self, req: UpdatePlaybookStatusRequest) -> UpdatePlaybookStatusResponse:
        """Approve, reject or re-open an agent playbook."""
        ...


@dataclass
class ClientGateway:
    """The gateway over the SDK: every call is an HTTP request to a Reflexio server."""

    client: AsyncReflexioClient

    async def search(self, req: UnifiedSearchRequest) -> UnifiedSearchViewResponse:
        """Unified search across profiles, user playbooks and agent playbooks."""
        return await self.client.search(req)

    async def publish(self, req: PublishUserInteractionRequest) -> PublishUserInteractionResponse:
        """Store a turn (idempotent on ``request_id``) and schedule learning from it."""
        return await self.client.publish_interaction(
            req.user_id,
            req.interaction_data_list,
            source=req.source or "",
            agent_version=req.agent_version,
            session_id=req.session_id,
            session_finished=req.session_finished,
            request_id=req.request_id,
        )

    async def profiles(self, req: GetUserProfilesRequest) -> GetProfilesViewResponse:
        """One user's profiles."""
        return await self.client.get_profiles(req)

    async def user_playbooks(self, req: GetUserPlaybooksRequest) -> GetUserPlaybooksViewResponse:
        """User playbooks by scope."""
        return await self.client.get_user_playbooks(req)

    async def agent_playbooks(self, req: GetAgentPlaybooksRequest) -> GetAgentPlaybooksViewResponse:
        """Agent playbooks by scope and review state."""
        return await self.client.get_agent_playbooks(req)

    async def review(self, req: UpdatePlaybookStatusRequest) -> UpdatePlaybookStatusResponse:
        """Approve, reject or re-open an agent playbook."""
        return await self.client.update_agent_playbook_status(
            req.agent_playbook_id, playbook_status=req.playbook_status
        )


@dataclass(frozen=True)
class ServiceGateway:
    """The gateway over the service, for one caller of a server process.

    The use cases are blocking (storage, the embedder), so each runs in a worker thread, as
    the HTTP routes run them.

    Attributes:
        core: The server process's core.
        org_id: The org the caller acts for.
        actor: Who to name in the history of what the caller changes.
    """

    core: Core
    org_id: str
    actor: str

    async def _run(self, use_case: Callable[..., T], *args: object, **kwargs: object) -> T:
        return await anyio.to_thread.run_sync(
            functools.partial(use_case, self.core, self.org_id, *args, **kwargs)
        )

    async def search(self, req: UnifiedSearchRequest) -> UnifiedSearchViewResponse:
        """Unified search across profiles, user playbooks and agent playbooks."""
        return await self._run(search.search, req)

    async def publish(self, req: PublishUserInteractionRequest) -> PublishUserInteractionResponse:
        """Store a turn (idempotent on ``request_id``) and schedule learning from it."""
        return await self._run(publish.publish, req)

    async def profiles(self, req: GetUserProfilesRequest) -> GetProfilesViewResponse:
        """One user's profiles."""
        return await self._run(profiles.get_profiles, req)

    async def user_playbooks(self, req: GetUserPlaybooksRequest) -> GetUserPlaybooksViewResponse:
        """User playbooks by scope."""
        return await self._run(playbooks.get_user_playbooks, req)

    async def agent_playbooks(self, req: GetAgentPlaybooksRequest) -> GetAgentPlaybooksViewResponse:
        """Agent playbooks by scope and review state."""
        return await self._run(playbooks.get_agent_playbooks, req)

    async def review(self, req: UpdatePlaybookStatusRequest) -> UpdatePlaybookStatusResponse:
        """Approve, reject or re-open an agent playbook (recorded as the caller's decision)."""
        return await self._run(playbooks.update_agent_playbook_status, req, actor=self.actor)
