"""Triage of new turns: do they carry a lesson that should be learned now?

Extraction normally waits for a full stride of turns (or for the session to end), which is
right for ordinary turns: most teach nothing, and windows of several turns cost fewer model
calls. A turn that does teach something — a correction, an instruction, a stated fact or
preference, a failed tool call, an expert answer, a fix the user confirms — should change the
agent's next answer, so the extraction job that finds such a turn in the tail a stride would
leave waiting learns from it at once (``learn.windows``; the job runs within
``EXTRACTION_BATCH_SECONDS`` of a publish).

The check is the rule extractor's own reading of each turn (``signals.read_message``, tool
statuses, expert answers), so it costs about a millisecond and no model call. Whether a user
turn reacts to an agent answer changes what counts as a correction; for the first turn of the
tail, the turns before it (the answer and its request) decide, asked for only when that reading
would change the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reflexio.learn.rules.evidence import failed
from reflexio.learn.rules.recipes import confirms_fix
from reflexio.learn.rules.signals import read_message
from reflexio.records import InteractionRecord

__all__ = ["teaches_now"]

_AGENT_ROLES = frozenset({"agent", "assistant"})


def _agent(turn: InteractionRecord | None) -> bool:
    return turn is not None and turn.role.strip().lower() in _AGENT_ROLES


def _user(turn: InteractionRecord) -> bool:
    return turn.role.strip().lower() == "user" and bool(turn.content.strip())


def teaches_now(
    turns: Sequence[InteractionRecord], before: Callable[[], Sequence[InteractionRecord]]
) -> bool:
    """Whether any of the turns teaches something worth learning at once.

    Args:
        turns: New turns, in order.
        before: The turns before them, oldest first (called at most once, and only when the
            first turn is a user turn whose reading depends on them).
    """
    earlier: list[InteractionRecord] = []
    for i, turn in enumerate(turns):
        if _agent(turn) and _agent_teaches(turn):
            return True
        if _user(turn):
            if _user_teaches(turn, earlier):
                return True
            if i == 0 and _might_react(turn) and _user_teaches(turn, list(before())):
                return True
        earlier.append(turn)
    return False


def _might_react(turn: InteractionRecord) -> bool:
    """Whether the turn would teach if it answered an agent turn (so the session's last turns
    matter): any signal, any statement of how things are, or a confirmed fix."""
    return bool(read_message(turn.content, reacting=True, context=None).signals) or confirms_fix(turn.content)


def _agent_teaches(turn: InteractionRecord) -> bool:
    """An expert answer that differs from the agent's, or a tool call that failed."""
    expert = turn.expert_content.strip()
    if expert and expert != turn.content.strip():
        return True
    return any(
        failed(str(tool.get("status") or ""), tool.get("tool_data") if isinstance(tool, dict) else None)
        for tool in turn.tools_used
    )


def _user_teaches(turn: InteractionRecord, earlier: Sequence[InteractionRecord]) -> bool:
    """Signals in the user's words (a reaction to an answer reads more as a correction, given
    the request and the answer), or a confirmation that the agent's tool calls fixed a problem."""
    previous = earlier[-1] if earlier else None
    reacting = _agent(previous)
    context = " ".join(t.content for t in earlier[-2:]) if reacting else ""
    signals = read_message(turn.content, reacting=reacting, context=context).signals
    if any(s.kind != "indifferent" for s in signals):
        return True
    return reacting and previous is not None and bool(previous.tools_used) and confirms_fix(turn.content)
