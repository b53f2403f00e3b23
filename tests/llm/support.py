"""Builders for the LLM tests: turns and windows without storage."""

from __future__ import annotations

from typing import Any

from reflexio.learn.windows import Window
from reflexio.records import InteractionRecord


def turn(turn_id: int, role: str, content: str = "", **fields: Any) -> InteractionRecord:
    """One turn of user ``u1`` in session ``s1``."""
    return InteractionRecord(
        org_id="o",
        request_id="r1",
        user_id="u1",
        session_id="s1",
        id=turn_id,
        role=role,
        content=content,
        **fields,
    )


def window(
    *turns: InteractionRecord, new_from: int = 0, extractors: tuple[str, ...] = ("profile", "playbook")
) -> Window:
    """A window of these turns; the first ``new_from`` are context."""
    return Window("o", "u1", extractors, tuple(turns), new_from)
