"""Claude Code's session transcript (JSON lines) as Reflexio interactions.

Each line is one entry: ``{"type": "user" | "assistant" | ..., "message": {"role", "content"}}``
where ``content`` is a string or a list of blocks (``text``, ``tool_use`` with ``id``, ``name``
and ``input``, ``tool_result`` with ``tool_use_id``, ``content`` and ``is_error``). A user's
prompt opens a turn; the assistant's text and tool calls that follow make its answer, and each
tool call gets the status of its result (``success`` or ``error``). Meta entries, sub-agent
(side-chain) entries, summaries and lines that are not JSON are skipped.

Reading is incremental: :func:`read_turns` starts at a byte offset and stops before a line that
is not complete yet, returning where it stopped, so the next read continues there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MAX_CONTENT_CHARS", "MAX_TOOL_CHARS", "MAX_TURNS", "Turn", "read_turns"]

#: Bounds on what one publish carries (the server takes more; a hook should not).
MAX_CONTENT_CHARS = 10_000
MAX_TOOL_CHARS = 2_000
MAX_TURNS = 200


@dataclass
class Turn:
    """One interaction: a user prompt, or the assistant's answer with its tool calls."""

    role: str
    content: str = ""
    tools_used: list[dict[str, Any]] = field(default_factory=list)
    retrieved_learnings: list[dict[str, str]] = field(default_factory=list)

    def as_interaction(self) -> dict[str, Any]:
        """The ``InteractionData`` this turn publishes as."""
        out: dict[str, Any] = {"role": self.role, "content": self.content[:MAX_CONTENT_CHARS]}
        if self.tools_used:
            out["tools_used"] = self.tools_used
        if self.retrieved_learnings:
            out["retrieved_learnings"] = self.retrieved_learnings
        return out


def read_turns(path: str | os.PathLike[str], offset: int) -> tuple[list[Turn], int]:
    """The turns written to ``path`` after ``offset`` bytes, and the offset after the last full line."""
    with Path(path).open("rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    turns: list[Turn] = []
    tools: dict[str, dict[str, Any]] = {}
    for raw in data[:end].splitlines():
        entry = _entry(raw)
        if entry is not None:
            _add(entry, turns, tools)
    kept = [turn for turn in turns if turn.content.strip() or turn.tools_used]
    return kept[-MAX_TURNS:], offset + end


def _entry(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("isMeta") or entry.get("isSidechain"):
        return None
    if entry.get("type") not in {"user", "assistant"} or not isinstance(entry.get("message"), dict):
        return None
    return entry


def _add(entry: dict[str, Any], turns: list[Turn], tools: dict[str, dict[str, Any]]) -> None:
    content = entry["message"].get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return
    if entry["type"] == "user":
        _user(blocks, turns, tools)
    else:
        _assistant(blocks, turns, tools)


def _user(blocks: list[Any], turns: list[Turn], tools: dict[str, dict[str, Any]]) -> None:
    texts = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            tool = tools.get(str(block.get("tool_use_id", "")))
            if tool is not None:
                tool["status"] = "error" if block.get("is_error") else "success"
                tool["tool_data"]["output"] = _text_of(block.get("content"))[:MAX_TOOL_CHARS]
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    text = "\n".join(t for t in texts if t.strip())
    if text:
        turns.append(Turn(role="User", content=text))


def _assistant(blocks: list[Any], turns: list[Turn], tools: dict[str, dict[str, Any]]) -> None:
    if not turns or turns[-1].role != "Assistant":
        turns.append(Turn(role="Assistant"))
    answer = turns[-1]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            answer.content = "\n\n".join(p for p in (answer.content, str(block["text"])) if p)
        elif block.get("type") == "tool_use":
            tool = {
                "tool_name": str(block.get("name", "tool")),
                "tool_data": {
                    "input": json.dumps(block.get("input", {}), ensure_ascii=False)[:MAX_TOOL_CHARS]
                },
                "status": "pending",
            }
            tools[str(block.get("id", ""))] = tool
            answer.tools_used.append(tool)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
