"""Query rewriting for search (opt-in with ``enable_reformulation``).

A follow-up such as "and for the other one?" retrieves nothing useful on its own; one small
call turns it into a standalone query using the conversation so far. Retrieval must never get
worse because of it, so any failure (provider error, invalid or suspicious answer) returns the
original query, and without history there is nothing to resolve and no call is made.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from reflexio.learn import prompts
from reflexio.learn.llm_schemas import RewriteOutput
from reflexio.llm import LLM, LLMError, Role

__all__ = ["MAX_HISTORY_TURNS", "rewrite_query"]

log = logging.getLogger(__name__)

#: Only the latest turns matter for resolving references.
MAX_HISTORY_TURNS = 10
MAX_TURN_CHARS = 1000
#: A rewrite longer than this (and than three times the query) is an answer, not a query.
MAX_QUERY_CHARS = 300


class Turn(Protocol):
    """A prior turn (``models.ConversationTurn`` or anything with a role and content)."""

    @property
    def role(self) -> str:
        """Who spoke."""
        ...

    @property
    def content(self) -> str:
        """What they said."""
        ...


def rewrite_query(llm: LLM, query: str, conversation_history: Sequence[Turn] | None) -> str:
    """A standalone version of ``query``, or ``query`` itself when rewriting fails or is moot."""
    history = [t for t in (conversation_history or []) if t.content.strip()][-MAX_HISTORY_TURNS:]
    if not history or not query.strip():
        return query
    rendered = "\n".join(f"{t.role}: {_clip(t.content)}" for t in history)
    call = prompts.load("rewrite_query").call(
        Role.QUERY_REWRITE,
        {"history": rendered, "query": query.strip()},
        output=RewriteOutput,
        max_tokens=1024,
    )
    try:
        rewritten = llm.complete(call).value.query
    except LLMError as exc:
        log.warning("query rewriting failed, searching with the original query: %s", exc)
        return query
    return rewritten.strip() if _acceptable(rewritten, query) else query


def _acceptable(rewritten: str, query: str) -> bool:
    """One line of plausible query length."""
    text = rewritten.strip()
    limit = max(MAX_QUERY_CHARS, 3 * len(query))
    return bool(text) and "\n" not in text and len(text) <= limit


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TURN_CHARS else text[:MAX_TURN_CHARS] + " [...]"
