"""OpenAI Agents SDK: learnings in the agent's instructions, and each run published as a turn.

:class:`ReflexioLearnings` is two things for one conversation:

* ``learnings.instructions(base)``: dynamic instructions for an ``Agent``. Before each model
  call it searches with the run's latest user message and appends the prompt block to
  ``base``; what it injected is remembered for the run.
* a ``RunHooks``: pass it as ``Runner.run(..., hooks=learnings)``. It records each tool call
  with its status and, when the run's agent gives its final output, publishes the turn (the
  user's message, the answer, the tools, and the learnings injected as ``retrieved_learnings``).

A search or publish that fails is logged and the agent carries on (without the block, or
without learning from that turn). One instance per conversation: runs of it are sequential.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.tool import default_tool_error_function

from reflexio.client import AsyncReflexioClient
from reflexio.errors import ReflexioError
from reflexio.models import DEFAULT_AGENT_VERSION
from reflexio.prompt_text import search_query

__all__ = ["ReflexioLearnings"]

log = logging.getLogger(__name__)

#: What a function tool returns to the model when it raised (the SDK's default error text).
_TOOL_FAILED = default_tool_error_function(RunContextWrapper(context=None), RuntimeError())

Instructions = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


def _user_text(items: list[Any]) -> str:
    """The latest user message among a run's input items."""
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict)).strip()
    return ""


class ReflexioLearnings(RunHooks[Any]):
    """Reflexio for one conversation of an OpenAI Agents SDK agent.

    Args:
        client: The async SDK client.
        user_id: Whose conversation this is.
        session_id: The conversation (default: a new id).
        agent_version: The agent's version; agent playbooks are learned per version.
        top_k: Learnings per kind to retrieve.
        max_tokens: Size cap of the injected block.
    """

    def __init__(
        self,
        client: AsyncReflexioClient,
        *,
        user_id: str,
        session_id: str | None = None,
        agent_version: str = DEFAULT_AGENT_VERSION,
        top_k: int = 5,
        max_tokens: int | None = 800,
    ) -> None:
        self.client = client
        self.user_id = user_id
        self.session_id = session_id or f"agents-{uuid.uuid4().hex[:12]}"
        self.agent_version = agent_version
        self.top_k = top_k
        self.max_tokens = max_tokens
        self.published: list[str] = []  # request ids, in order
        self._user = ""
        self._block = ""
        self._retrieved: list[dict[str, str]] = []
        self._tools: list[dict[str, Any]] = []

    def instructions(self, base: str) -> Instructions:
        """Dynamic instructions: ``base``, then what Reflexio learned that fits the user's message."""

        async def with_learnings(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            user = _user_text(list(ctx.turn_input))
            if not user:
                return base
            if user != self._user:  # a new turn: search once for it
                self._user, self._retrieved, self._block = user, [], ""
                await self._search(user)
            return f"{base}\n\n{self._block}" if self._block else base

        return with_learnings

    async def _search(self, user: str) -> None:
        try:
            found = await self.client.search(
                query=search_query(user),
                user_id=self.user_id,
                session_id=self.session_id,
                agent_version=self.agent_version,
                top_k=self.top_k,
            )
        except ReflexioError as exc:
            log.warning("Reflexio: search failed, answering without learnings: %s", exc)
            return
        block = found.to_prompt(self.max_tokens)
        self._block = block.text
        self._retrieved = [r.model_dump(mode="json") for r in block.retrieved_learnings]

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        """A tool is called: record it."""
        arguments = str(getattr(context, "tool_input", "") or "")
        self._tools.append(
            {"tool_name": tool.name, "tool_data": {"input": arguments[:2000]}, "status": "pending"}
        )

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: Any
    ) -> None:
        """A tool returned: a function tool that raised returns the SDK's error text."""
        for entry in reversed(self._tools):
            if entry["tool_name"] == tool.name and entry["status"] == "pending":
                entry["status"] = "error" if str(result).startswith(_TOOL_FAILED) else "success"
                entry["tool_data"]["output"] = str(result)[:2000]
                break

    async def on_agent_end(self, context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> None:
        """The run's final output: publish the turn, then start afresh for the next one."""
        user = self._user or _user_text(list(context.turn_input))
        answer: dict[str, Any] = {"role": "Assistant", "content": str(output)}
        if self._tools:
            answer["tools_used"] = self._tools
        if self._retrieved:
            answer["retrieved_learnings"] = self._retrieved
        interactions = [{"role": "User", "content": user}, answer] if user else [answer]
        request_id = f"{self.session_id}:{uuid.uuid4().hex}"
        self._user, self._retrieved, self._tools, self._block = "", [], [], ""
        try:
            await self.client.publish_interaction(
                self.user_id,
                interactions,
                source="openai-agents",
                agent_version=self.agent_version,
                session_id=self.session_id,
                request_id=request_id,
            )
        except (ReflexioError, ValueError) as exc:
            log.warning("Reflexio: could not publish turn %s: %s", request_id, exc)
            return
        self.published.append(request_id)
