"""Judging a session once it has gone idle: did the agent handle it?

Without an LLM the judgement comes from explicit evidence in the log: user turns that correct,
re-steer or flatly contradict the agent (read with the rule extractor's signal reader and
``rules.denials``; a "no" answering the agent's question is not one), tool calls that failed and
were never followed by a success, requests for a human, and whether the session ended on a
correction. The result has the shape of Reflexio's ``AgentSuccessEvaluationResult`` (the wire
model); ``service.judgement`` stores it as a ``session`` evaluation.
"""

from __future__ import annotations

import hashlib
import logging
import re

from reflexio import ranking
from reflexio.errors import ReflexioError
from reflexio.learn.llm_extract import judge_session
from reflexio.learn.rules.denials import answers_no, denies
from reflexio.learn.rules.evidence import failed
from reflexio.learn.rules.signals import Reading, read_message
from reflexio.llm import LLM
from reflexio.models.org_config import Config
from reflexio.records import InteractionRecord

log = logging.getLogger(__name__)

__all__ = ["ESCALATION", "corrects", "is_reaction", "judge_turns", "judged", "sampled"]

#: A user asking for a person (an escalation request).
ESCALATION = re.compile(
    r"\b(?:speak|talk|connect me) (?:to|with) (?:a |an )?(?:human|person|manager|agent|supervisor|someone)\b"
    r"|\b(?:escalate|real person|customer service rep)",
    re.IGNORECASE,
)
_AGENT_ROLES = {"agent", "assistant"}


def _is_user(turn: InteractionRecord) -> bool:
    return turn.role.strip().lower() == "user"


def is_reaction(reading: Reading) -> bool:
    """Whether a reply corrects, reverses or re-steers the agent (what counts as a correction)."""
    return reading.correction or reading.reversal or _instructs(reading)


def corrects(reply: str, answer: str) -> bool:
    """Whether a user's reply to an agent turn corrects, re-steers or denies it.

    A "no" that answers the turn's closing question ("Anything else?" / "No, thanks.") is an
    answer, not a correction: the rest of the reply is read without it. A reply that flatly
    contradicts what the turn claimed ("There is no courtesy waiver.") is a correction even
    with no cue word (``rules.denials``).
    """
    rest = answers_no(reply, answer)
    if rest is not None:
        if not rest:
            return False
        reply = rest
    return is_reaction(read_message(reply, reacting=True)) or denies(reply, answer)


def _repeats(text: str, earlier: list[frozenset[str]]) -> bool:
    """The user asking again for what they already asked in this session."""
    words = frozenset(ranking.word_set(text))
    return len(words) >= 3 and any(ranking.jaccard(words, before) >= 0.6 for before in earlier)


def judge_turns(turns: list[InteractionRecord]) -> dict[str, object]:
    """The success verdict for one session's turns (oldest first)."""
    corrections = 0
    last_was_correction = False
    escalated = False
    answer: str | None = None  # the agent turn the next user turn replies to
    requests: list[frozenset[str]] = []
    for turn in turns:
        if _is_user(turn):
            repeated = answer is not None and _repeats(turn.content, requests)
            correcting = answer is not None and (corrects(turn.content, answer) or repeated)
            corrections += int(correcting)
            last_was_correction = correcting
            escalated = escalated or bool(ESCALATION.search(turn.content))
            requests.append(frozenset(ranking.word_set(turn.content)))
            answer = None
        elif turn.role.strip().lower() in _AGENT_ROLES:
            answer = turn.content
            last_was_correction = False  # the agent answered the correction
    broken = _unresolved_tool_failure(turns)
    failure_type, reason = _failure(broken, last_was_correction, escalated, corrections)
    return {
        "is_success": failure_type is None,
        "failure_type": failure_type,
        "failure_reason": reason,
        "is_escalated": escalated,
        "number_of_correction_per_session": corrections,
        "evaluation_name": "rules",
    }


def sampled(org_id: str, user_id: str, session_id: str, rate: float) -> bool:
    """Deterministic sampling of sessions for the (paid) LLM judge, as Reflexio does."""
    digest = hashlib.sha256(f"{org_id}\0{user_id}\0{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def judged(turns: list[InteractionRecord], llm: LLM | None, config: Config | None) -> dict[str, object]:
    """The session verdict: the LLM's when one is given (and answers), the evidence rules' otherwise."""
    if llm is None or config is None or not turns:
        return judge_turns(turns)
    try:
        verdict = judge_session(llm, config, turns)
    except ReflexioError as exc:  # the provider is down: the evidence rules still judge
        log.warning("LLM session evaluation failed, judging by rules: %s", exc)
        return judge_turns(turns)
    return {**verdict.model_dump(mode="json", exclude={"verdicts"}), "evaluation_name": "llm"}


def _instructs(reading: Reading) -> bool:
    """A reply that tells the agent what to do or what not to offer re-steers it."""
    return any(s.kind in {"instruction", "taste"} for s in reading.signals)


_SYSTEM = re.compile(r"\b(?:timeout|timed out|unavailable|5\d\d|internal|server error|crash)", re.I)


def _unresolved_tool_failure(turns: list[InteractionRecord]) -> tuple[str, bool] | None:
    """(name, the system broke) of a tool whose last call in the session failed, if any."""
    last: dict[str, tuple[bool, bool]] = {}
    for turn in turns:
        for tool in turn.tools_used:
            status = str(tool.get("status", ""))
            last[str(tool.get("tool_name", ""))] = (
                failed(status, tool.get("tool_data")),
                bool(_SYSTEM.search(status)),
            )
    broken = [(name, system) for name, (bad, system) in last.items() if bad]
    return broken[0] if broken else None


def _failure(
    broken: tuple[str, bool] | None, ended_corrected: bool, escalated: bool, corrections: int
) -> tuple[str | None, str | None]:
    if broken:
        name, system = broken
        if system:
            return "system_error", f"the last call to {name!r} failed on the system's side"
        return "wrong_tool", f"the last call to {name!r} failed and was not recovered"
    if escalated:
        return "wrong_answer", "the user asked for a human"
    if ended_corrected:
        return "wrong_answer", f"the session ended on a user correction ({corrections} in total)"
    return None, None
