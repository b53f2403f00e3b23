"""Crediting or blaming each learning injected into a judged session.

Every agent turn lists what it was given (``retrieved_learnings``); each (turn, learning) pair
gets two verdicts, as in Reflexio 0.2.32: *relevance* (was it about this turn?) and *impact*
(positive, negative or neutral for the session, with a reason and, for playbooks, a
diagnosis).

Without a model the verdicts come from explicit evidence only:

* relevant when the learning's topic words occur in the request it was injected for or in
  the answer that followed;
* negative when, after it was injected, the user contradicted what it says (read with the
  rule extractor's comparison of two statements), or when the session failed and the user's
  complaint (a correction, or a flat denial of what the agent said) was about its topic
  without agreeing with it;
* neutral when the user *restated* it in a failed session (the learning was right and the
  agent did not apply it: an application failure, not a content defect), and whenever there
  is no evidence either way;
* positive when the session succeeded, it was relevant and nobody pushed back on it.

With a model, the session judge's own call (``evaluate_session``) also judges the first 25
learnings of the session (relevance and impact together), and each further call
(``judge_learnings``) up to 25 more, with the transcript and each learning's text bounded, so a
judged session costs one call plus one per 25 learnings beyond the first 25. Every learning
must be answered: those a model leaves out are asked again once, and then stay unjudged rather than
guessed. At most 1,000 learnings of a session are judged; more is refused without a call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from reflexio import ranking
from reflexio.errors import ReflexioError
from reflexio.learn import prompts
from reflexio.learn.evaluate import ESCALATION, corrects, is_reaction
from reflexio.learn.llm_extract import NO_LEARNINGS, is_agent, is_user, judge_session, render_conversation
from reflexio.learn.llm_schemas import LearningVerdictItem, LearningVerdictsOutput, SessionEvaluationOutput
from reflexio.learn.rules.compare import Relation, gist, relate
from reflexio.learn.rules.signals import read_message
from reflexio.learn.rules.text import overlap
from reflexio.llm import LLM, Role
from reflexio.models.org_config import DEFAULT_SUCCESS_PROMPT, Config
from reflexio.models.prompt import estimate_tokens
from reflexio.records import InteractionRecord, Learning, LearningKind

__all__ = [
    "CHUNK_SIZE",
    "MAX_CANDIDATES",
    "Injection",
    "TooManyLearnings",
    "Verdict",
    "injections",
    "judge_offline",
    "judge_session_with_learnings",
    "judge_with_llm",
]

log = logging.getLogger(__name__)

#: Learnings judged per model call (Reflexio's chunk size).
CHUNK_SIZE: Final = 25
#: More injected learnings than this in one session are not judged at all.
MAX_CANDIDATES: Final = 1000
#: Bounds of what a model reads: each learning's text, and the transcript.
LEARNING_TOKENS: Final = 256
TRANSCRIPT_TOKENS: Final = 8000

Impact = Literal["positive", "negative", "neutral"]


class TooManyLearnings(ReflexioError):
    """The session lists more injected learnings than are ever judged (no model is called)."""


@dataclass(frozen=True, slots=True)
class Injection:
    """One learning given to one agent turn."""

    interaction_id: int
    kind: str
    learning_id: str

    @property
    def ref(self) -> str:
        """The reference a judge answers by (Reflexio's ``learning_ref``)."""
        return f"{self.interaction_id}:{self.kind}:{self.learning_id}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Relevance and impact of one injection (``None`` when a model failed to judge it).

    Attributes:
        contradicted_by: The user turn that contradicted the learning, when one did (the
            evidence reflection uses to supersede it with what that turn taught).
    """

    injection: Injection
    is_relevant: bool | None
    relevance_reason: str
    impact: Impact | None
    impact_reason: str
    diagnosis: dict[str, Any] | None = None
    contradicted_by: int | None = None
    judge: str = "rules"

    def result(self) -> dict[str, Any]:
        """The stored verdict, in the fields of ``RetrievedLearningEvaluationResult``."""
        return {
            "is_relevant": self.is_relevant,
            "relevance_reason": self.relevance_reason,
            "impact": self.impact,
            "impact_reason": self.impact_reason,
            "diagnosis": self.diagnosis,
            "diagnosis_evidence_complete": self.diagnosis is not None,
            "contradicted_by": self.contradicted_by,
            "judge": self.judge,
        }


def injections(turns: Sequence[InteractionRecord]) -> list[Injection]:
    """Every (turn, learning) the session's agent turns list, once each, in turn order.

    Raises:
        TooManyLearnings: More than ``MAX_CANDIDATES`` of them.
    """
    seen: dict[Injection, None] = {}
    for turn in turns:
        for ref in turn.retrieved_learnings:
            kind, learning_id = str(ref.get("kind", "")), str(ref.get("learning_id", ""))
            if kind and learning_id:
                seen[Injection(turn.id, kind, learning_id)] = None
    if len(seen) > MAX_CANDIDATES:
        raise TooManyLearnings(
            f"the session lists {len(seen)} injected learnings; at most {MAX_CANDIDATES} are judged"
        )
    return list(seen)


# -- the offline judge ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Reading:
    """What the user said about a learning after it was injected."""

    contradicted_by: int | None = None
    complained: list[int] = field(default_factory=list)
    restated: list[int] = field(default_factory=list)


def _topic(row: Learning) -> frozenset[str]:
    return frozenset(ranking.word_set(f"{row.trigger or ''} {row.content}"))


def _topical(shared: frozenset[str], topic: frozenset[str]) -> bool:
    """Whether a reply is about the learning: two shared topic words (one for a tiny topic)."""
    return len(shared) >= 2 or (len(shared) == 1 and len(topic) <= 3)


def _context(turns: Sequence[InteractionRecord], at: int) -> str:
    """The request an injected turn answered, and the answer itself."""
    request = next((t.content for t in reversed(turns[:at]) if is_user(t)), "")
    return f"{request} {turns[at].content}"


def _read_reactions(turns: Sequence[InteractionRecord], at: int, row: Learning) -> _Reading:
    topic = _topic(row)
    said = gist(row.content, row.trigger, row.pitfall)
    out = _Reading()
    answer: str | None = turns[at].content  # the agent turn the next user turn replies to
    for turn in turns[at + 1 :]:
        if not is_user(turn):
            answer = turn.content if is_agent(turn) else answer
            continue
        shared = overlap(topic, frozenset(ranking.word_set(turn.content)))
        if _topical(shared, topic):
            reading = read_message(turn.content, reacting=answer is not None)
            relation = relate(gist(turn.content), said, restated=reading.restated, reversal=reading.reversal)
            reacted = corrects(turn.content, answer) if answer is not None else is_reaction(reading)
            if relation is Relation.CONTRADICTS and out.contradicted_by is None:
                out.contradicted_by = turn.id
            elif relation is Relation.SAME:
                out.restated.append(turn.id)
            elif reacted or ESCALATION.search(turn.content):
                out.complained.append(turn.id)
        answer = None
    return out


def _offline_one(
    turns: Sequence[InteractionRecord], at: int, injection: Injection, row: Learning, success: bool
) -> Verdict:
    topic = _topic(row)
    shared = topic & frozenset(ranking.word_set(_context(turns, at)))
    relevant = bool(shared)
    relevance = (
        f"shares {', '.join(sorted(shared)[:5])} with the turn it was given to"
        if relevant
        else "none of its topic words occur in the request or the answer"
    )
    seen = _read_reactions(turns, at, row)
    playbook = row.kind is not LearningKind.PROFILE
    if seen.contradicted_by is not None:
        impact: Impact = "negative"
        reason = f"the user contradicted it after it was given (interaction {seen.contradicted_by})"
        diagnosis = _diagnosis(playbook, "content_defect", reason, [seen.contradicted_by])
    elif not success and seen.complained and not seen.restated:
        impact = "negative"
        reason = "the session failed and the user complained about what it says"
        diagnosis = _diagnosis(playbook, "content_defect", reason, seen.complained)
    elif not success and seen.restated:
        impact = "neutral"
        reason = "the user restated it: the learning was right but the agent did not apply it"
        diagnosis = _diagnosis(playbook, "application_failure", reason, seen.restated)
    elif success and relevant:
        impact, reason = "positive", "the session succeeded with it and nobody pushed back on it"
        diagnosis = _diagnosis(playbook, "no_issue", reason, [])
    else:
        impact = "neutral"
        reason = "no evidence that it helped or hurt" + ("" if relevant else " (not about this turn)")
        diagnosis = _diagnosis(playbook, "unknown", reason, [])
    return Verdict(
        injection, relevant, relevance, impact, reason, diagnosis, contradicted_by=seen.contradicted_by
    )


def _diagnosis(playbook: bool, category: str, reason: str, evidence: Sequence[int]) -> dict[str, Any] | None:
    """Reflexio's diagnosis (playbooks only; profiles carry none)."""
    if not playbook:
        return None
    return {"category": category, "reason": reason, "evidence_interaction_ids": list(evidence)[:20]}


def judge_offline(
    turns: Sequence[InteractionRecord],
    found: Mapping[tuple[str, str], Learning],
    success: bool,
    wanted: Sequence[Injection] | None = None,
) -> list[Verdict]:
    """Verdicts from explicit evidence for every injection whose learning still exists.

    Args:
        turns: The session's turns, oldest first.
        found: The injected learnings by (kind, wire id), tombstones included; refs to
            learnings that no longer exist are skipped.
        success: The session's outcome (reported, or judged).
        wanted: Only these injections (default: all of the session's).
    """
    index = {t.id: i for i, t in enumerate(turns)}
    out = []
    for injection in wanted if wanted is not None else injections(turns):
        row = found.get((injection.kind, injection.learning_id))
        if row is not None and injection.interaction_id in index:
            out.append(_offline_one(turns, index[injection.interaction_id], injection, row, success))
    return out


# -- the model judge -----------------------------------------------------------------------------


def _clip_tokens(text: str, tokens: int) -> str:
    limit = tokens * 4
    return text if len(text) <= limit else text[:limit] + " [...]"


def _transcript(turns: Sequence[InteractionRecord]) -> str:
    """The conversation within ``TRANSCRIPT_TOKENS``, dropping the oldest turns first."""
    kept: list[InteractionRecord] = []
    budget = TRANSCRIPT_TOKENS
    for turn in reversed(turns):
        cost = estimate_tokens(turn.content) + 16
        if kept and cost > budget:
            break
        kept.append(turn)
        budget -= cost
    text = render_conversation(list(reversed(kept)))
    return ("[earlier turns left out]\n" if len(kept) < len(turns) else "") + _clip_tokens(
        text, TRANSCRIPT_TOKENS
    )


def _learning_line(injection: Injection, row: Learning) -> str:
    body = (
        row.content
        if row.kind is LearningKind.PROFILE
        else f"When: {row.trigger or '(any)'} | Do: {row.content}"
    )
    return f"[{injection.ref}] ({row.kind.value}) {_clip_tokens(body, LEARNING_TOKENS)}"


def _ask(
    llm: LLM,
    config: Config,
    turns: Sequence[InteractionRecord],
    chunk: Sequence[tuple[Injection, Learning]],
    session: Mapping[str, Any],
) -> dict[str, Any]:
    success = config.agent_success_config
    values = {
        "success_definition": success.success_definition_prompt if success else DEFAULT_SUCCESS_PROMPT,
        "session_verdict": _verdict_line(session),
        "learnings": "\n".join(_learning_line(i, row) for i, row in chunk),
        "conversation": _transcript(turns),
    }
    call = prompts.load("judge_learnings").call(
        Role.EVALUATION,
        values,
        output=LearningVerdictsOutput,
        inputs={
            "turns": tuple(turns),
            "injections": tuple(i for i, _ in chunk),
            "found": {(i.kind, i.learning_id): row for i, row in chunk},
            "success": bool(session.get("is_success")),
        },
        max_tokens=4096,
    )
    answer = llm.complete(call).value
    return {item.learning_ref: item for item in answer.verdicts}


def _verdict_line(session: Mapping[str, Any]) -> str:
    if session.get("is_success"):
        return "the session succeeded"
    why = session.get("failure_reason") or ""
    return f"the session failed ({session.get('failure_type') or 'unspecified'}): {why}"


def _from_item(injection: Injection, row: Learning, item: Any) -> Verdict:
    diagnosis = item.diagnosis.model_dump(mode="json") if item.diagnosis is not None else None
    if row.kind is LearningKind.PROFILE:
        diagnosis = None
    contradicted = None
    if item.impact == "negative" and diagnosis and diagnosis["category"] == "content_defect":
        contradicted = next(iter(diagnosis["evidence_interaction_ids"]), None)
    return Verdict(
        injection,
        item.is_relevant,
        item.relevance_reason,
        item.impact,
        item.impact_reason,
        diagnosis,
        contradicted_by=contradicted,
        judge="llm",
    )


def _pairs(
    turns: Sequence[InteractionRecord], found: Mapping[tuple[str, str], Learning]
) -> list[tuple[Injection, Learning]]:
    return [
        (i, found[(i.kind, i.learning_id)]) for i in injections(turns) if (i.kind, i.learning_id) in found
    ]


def judge_session_with_learnings(
    llm: LLM,
    config: Config,
    turns: Sequence[InteractionRecord],
    found: Mapping[tuple[str, str], Learning],
) -> tuple[SessionEvaluationOutput, dict[str, LearningVerdictItem]]:
    """One call that judges the session and its first ``CHUNK_SIZE`` injected learnings.

    Returns the session verdict and the learning verdicts by ``learning_ref`` (only those the
    call was asked about: a ref the model invents is dropped). ``judge_with_llm(..., first=)``
    asks the rest.

    Raises:
        TooManyLearnings: More than ``MAX_CANDIDATES`` injections (no call is made).
        LLMError: The call failed.
    """
    chunk = _pairs(turns, found)[:CHUNK_SIZE]
    lines = "\n".join(_learning_line(i, row) for i, row in chunk) or NO_LEARNINGS
    inputs = {
        "injections": tuple(i for i, _ in chunk),
        "found": {(i.kind, i.learning_id): r for i, r in chunk},
    }
    answer = judge_session(llm, config, turns, learnings=lines, inputs=inputs)
    asked = {i.ref for i, _ in chunk}
    verdicts = {item.learning_ref: item for item in answer.verdicts if item.learning_ref in asked}
    return SessionEvaluationOutput.model_validate(answer.model_dump(exclude={"verdicts"})), verdicts


def judge_with_llm(
    llm: LLM,
    config: Config,
    turns: Sequence[InteractionRecord],
    found: Mapping[tuple[str, str], Learning],
    session: Mapping[str, Any],
    *,
    first: Mapping[str, LearningVerdictItem] | None = None,
) -> list[Verdict]:
    """Verdicts from a model, ``CHUNK_SIZE`` learnings per call, each learning answered once.

    A learning the model leaves out of its answer is asked again in one more call; if it is
    still missing it is stored unjudged (``impact=None``), never guessed.

    Args:
        first: What the session judge answered for the first ``CHUNK_SIZE`` learnings
            (``judge_session_with_learnings``): those count as asked, so only the rest, and
            any it left out, cost a call here.

    Raises:
        TooManyLearnings: More than ``MAX_CANDIDATES`` injections (no call is made).
        LLMError: A call failed (the caller falls back to the offline judge).
    """
    pairs = _pairs(turns, found)
    answered: dict[str, Any] = dict(first or {})
    start = CHUNK_SIZE if first is not None else 0
    for at in range(start, len(pairs), CHUNK_SIZE):
        answered |= _ask(llm, config, turns, pairs[at : at + CHUNK_SIZE], session)
    missing = [(i, row) for i, row in pairs if i.ref not in answered]
    for at in range(0, len(missing), CHUNK_SIZE):
        answered |= _ask(llm, config, turns, missing[at : at + CHUNK_SIZE], session)
    out = []
    for injection, row in pairs:
        item = answered.get(injection.ref)
        if item is None:
            log.warning("the judge left learning %s unjudged", injection.ref)
            out.append(Verdict(injection, None, "", None, "the judge gave no verdict", judge="llm"))
        else:
            out.append(_from_item(injection, row, item))
    return out


def with_judge(verdicts: Sequence[Verdict], judge: str) -> list[Verdict]:
    """The same verdicts attributed to another judge (the rules standing in for a failed model)."""
    return [replace(v, judge=judge) for v in verdicts]
