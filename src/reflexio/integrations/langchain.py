"""LangChain and LangGraph: a retriever over Reflexio's search, and a callback that publishes each turn.

* :class:`ReflexioRetriever` is a ``BaseRetriever``: each learning comes back as a ``Document``
  whose text is the line the prompt block would show (``When <trigger>: <rule>``, or the fact),
  with ``kind``, ``id`` and ``score`` in its metadata. :func:`as_context` renders documents as
  the prompt block, within a token budget, with the same rules as ``to_prompt``.
* :class:`ReflexioCallbackHandler` watches a run (a chain, an agent, a LangGraph graph): the
  user's message, the model's answer, each tool call with its status, and the learnings a
  ``ReflexioRetriever`` returned inside the run. When the outermost run ends it publishes that
  turn, with those learnings as the answer's ``retrieved_learnings``, so evaluation credits
  exactly what was injected. A failed publish is logged, never raised into the agent.

Both use the SDK (``ReflexioClient``; ``AsyncReflexioClient`` for the retriever's async path).
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.callbacks.manager import AsyncCallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from reflexio.client import AsyncReflexioClient, ReflexioClient
from reflexio.errors import ReflexioError
from reflexio.models import DEFAULT_AGENT_VERSION, UnifiedSearchViewResponse
from reflexio.prompt_text import PromptItem, pack, search_query

if TYPE_CHECKING:
    from reflexio.prompt_text import LearningRef

__all__ = ["ReflexioCallbackHandler", "ReflexioRetriever", "as_context", "documents_of"]

log = logging.getLogger(__name__)


def documents_of(found: UnifiedSearchViewResponse) -> list[Document]:
    """Search results as documents, best first, with ``kind``, ``id`` and ``score`` in metadata."""
    items = sorted(found.prompt_items(), key=lambda item: -(item.score or 0.0))
    return [
        Document(
            page_content=item.line, metadata={"kind": item.kind, "id": item.learning_id, "score": item.score}
        )
        for item in items
    ]


def as_context(documents: list[Document], max_tokens: int | None = None) -> str:
    """The prompt block for documents from a :class:`ReflexioRetriever` (rules, then facts)."""
    items = [
        PromptItem(_kind(d.metadata["kind"]), str(d.metadata["id"]), d.page_content, d.metadata.get("score"))
        for d in documents
        if d.metadata.get("kind") and d.metadata.get("id")
    ]
    return pack(items, max_tokens)[1]


def _kind(value: str) -> LearningRef:
    if value == "profile":
        return "profile"
    if value == "user_playbook":
        return "user_playbook"
    if value == "agent_playbook":
        return "agent_playbook"
    raise ValueError(f"not a learning kind: {value!r}")


class ReflexioRetriever(BaseRetriever):
    """Reflexio's unified search as a LangChain retriever.

    Attributes:
        client: The SDK client (``ReflexioClient()`` reads ``REFLEXIO_URL``/``REFLEXIO_API_KEY``).
        async_client: Used by ``ainvoke`` when given; otherwise the sync client runs in a thread.
        user_id: Whose profiles and user playbooks to include.
        session_id: The conversation; learnings already served in it are skipped.
        agent_version: Only playbooks of this agent version.
        top_k: At most this many learnings per kind.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: ReflexioClient
    async_client: AsyncReflexioClient | None = None
    user_id: str | None = None
    session_id: str | None = None
    agent_version: str | None = None
    top_k: int = 5

    def _search_args(self, query: str) -> dict[str, Any]:
        return {
            "query": search_query(query),
            "user_id": self.user_id,
            "session_id": self.session_id,
            "agent_version": self.agent_version,
            "top_k": self.top_k,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return documents_of(self.client.search(**self._search_args(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return documents_of(await self.async_client.search(**self._search_args(query)))


@dataclass
class _Turn:
    """What one outermost run did, gathered from its callbacks."""

    user: str = ""
    answer: str = ""
    tools: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    learnings: list[dict[str, str]] = field(default_factory=list)


class ReflexioCallbackHandler(BaseCallbackHandler):
    """Publishes each outermost run as one turn: the user's message, the answer, tools, learnings.

    Pass it in ``config={"callbacks": [handler]}`` of the run (or of the graph's invoke). The
    user's message is the last human message the model saw; the answer is the model's last
    output; tool calls carry ``success`` or ``error``; the retrieved learnings are those of
    every :class:`ReflexioRetriever` call inside the run.

    Args:
        client: The SDK client.
        user_id: Whose session this is.
        session_id: The conversation (default: a new id per handler).
        agent_version: The agent's version; agent playbooks are learned per version.
        source: A producer label for the published requests.
    """

    raise_error = False

    def __init__(
        self,
        client: ReflexioClient,
        *,
        user_id: str,
        session_id: str | None = None,
        agent_version: str = DEFAULT_AGENT_VERSION,
        source: str = "langchain",
    ) -> None:
        self.client = client
        self.user_id = user_id
        self.session_id = session_id or f"langchain-{uuid.uuid4().hex[:12]}"
        self.agent_version = agent_version
        self.source = source
        self.published: list[str] = []  # request ids, in order
        self._lock = threading.Lock()
        self._root: dict[UUID, UUID] = {}
        self._turns: dict[UUID, _Turn] = {}

    # -- following the run tree ------------------------------------------------------------
    def _enter(self, run_id: UUID, parent_run_id: UUID | None) -> _Turn:
        with self._lock:
            root = self._root.get(parent_run_id, parent_run_id) if parent_run_id else run_id
            self._root[run_id] = root
            return self._turns.setdefault(root, _Turn())

    def _turn(self, run_id: UUID) -> _Turn | None:
        with self._lock:
            root = self._root.get(run_id)
            return None if root is None else self._turns.get(root)

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **_: Any,
    ) -> None:
        """A chain (or graph node) starts: place it in its run tree."""
        self._enter(run_id, parent_run_id)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **_: Any,
    ) -> None:
        """The model is called: the last human message is the user's."""
        turn = self._enter(run_id, parent_run_id)
        human = [m for m in messages[-1] if m.type == "human"] if messages else []
        if human:
            turn.user = human[-1].text

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **_: Any,
    ) -> None:
        """A text-completion model is called: its prompt is the user's message."""
        turn = self._enter(run_id, parent_run_id)
        if prompts and not turn.user:
            turn.user = prompts[-1]

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """The model answered: its last text output is the answer so far."""
        turn = self._turn(run_id)
        text = response.generations[-1][-1].text if response.generations and response.generations[-1] else ""
        if turn is not None and text.strip():
            turn.answer = text
        if parent_run_id is None:
            self._finish(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **_: Any,
    ) -> None:
        """A tool is called."""
        turn = self._enter(run_id, parent_run_id)
        name = str((serialized or {}).get("name") or "tool")
        turn.tools[run_id] = {
            "tool_name": name,
            "tool_data": {"input": input_str[:2000]},
            "status": "pending",
        }

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any) -> None:
        """A tool succeeded."""
        self._tool_done(run_id, "success", output)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """A tool failed."""
        self._tool_done(run_id, "error", f"{type(error).__name__}: {error}")

    def _tool_done(self, run_id: UUID, status: str, output: Any) -> None:
        turn = self._turn(run_id)
        if turn is not None and run_id in turn.tools:
            turn.tools[run_id]["status"] = status
            turn.tools[run_id]["tool_data"]["output"] = str(getattr(output, "content", output))[:2000]

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **_: Any,
    ) -> None:
        """A retriever is called."""
        self._enter(run_id, parent_run_id)

    def on_retriever_end(
        self, documents: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """A retriever answered: Reflexio's documents are the learnings injected in this turn."""
        turn = self._turn(run_id)
        if turn is None:
            return
        for doc in documents:
            ref = {"kind": doc.metadata.get("kind"), "learning_id": str(doc.metadata.get("id", ""))}
            if ref["kind"] in {"profile", "user_playbook", "agent_playbook"} and ref not in turn.learnings:
                turn.learnings.append(ref)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """A chain ended: when it is the outermost run, the turn is over."""
        if parent_run_id is None:
            self._finish(run_id)

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """The run failed: what happened until then is still worth learning from."""
        if parent_run_id is None:
            self._finish(run_id)

    # -- publishing ------------------------------------------------------------------------
    def _finish(self, root: UUID) -> None:
        with self._lock:
            turn = self._turns.pop(root, None)
            self._root = {run: top for run, top in self._root.items() if top != root}
        if turn is None or not (turn.user or turn.answer):
            return
        request_id = f"{self.session_id}:{root}"
        answer: dict[str, Any] = {"role": "Assistant", "content": turn.answer}
        if turn.tools:
            answer["tools_used"] = list(turn.tools.values())
        if turn.learnings:
            answer["retrieved_learnings"] = turn.learnings
        interactions = [{"role": "User", "content": turn.user}, answer] if turn.user else [answer]
        try:
            self.client.publish_interaction(
                self.user_id,
                interactions,
                source=self.source,
                agent_version=self.agent_version,
                session_id=self.session_id,
                request_id=request_id,
            )
        except (ReflexioError, ValueError) as exc:  # the agent's answer stands; learning waits
            log.warning("Reflexio: could not publish turn %s: %s", request_id, exc)
            return
        self.published.append(request_id)
