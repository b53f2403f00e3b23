"""One window in, Changes out: propose learnings, compare with what is known, decide.

Two seams make the pipeline work with or without an LLM:

* a ``Proposer`` reads a window and proposes profiles and user playbooks (the offline rule
  extractor in ``learn.rules``, or the LLM extractor in ``learn.llm_extract``);
* a ``Judge`` decides, for each proposal and the most similar existing learnings of that user,
  whether to add it, rewrite an existing one, supersede one (a contradiction: the old one
  becomes a tombstone linked to its successor) or keep what exists (a duplicate).

The pipeline owns everything else: which existing learnings are relevant (a real search,
filtered to the user, kind and current status before ranking), de-duplication inside the
window, provenance (interaction ids, request, agent version, source) and turning decisions into
``Changes`` that the job driver commits exactly once. Nothing here is hard-deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from reflexio import ranking
from reflexio.filters import CandidateQuery, LearningFilter, RequestFilter
from reflexio.learn import standing
from reflexio.learn.changes import Changes, Supersede
from reflexio.learn.windows import Window
from reflexio.models.org_config import Config
from reflexio.records import (
    NEVER_EXPIRES,
    Learning,
    LearningKind,
    LearningStatus,
    RequestRecord,
    Vector,
    now,
)
from reflexio.storage import Storage

__all__ = [
    "Decision",
    "Judge",
    "LearnContext",
    "Proposal",
    "Proposer",
    "Verdict",
    "learn_window",
]

log = logging.getLogger(__name__)

#: Kinds each extractor produces.
KINDS_OF_EXTRACTOR = {"profile": LearningKind.PROFILE, "playbook": LearningKind.USER_PLAYBOOK}
#: How many similar existing learnings a judge sees per proposal.
SIMILAR_LIMIT = 5
#: Minimum fused search score for an existing learning to count as "similar".
SIMILAR_THRESHOLD = 0.25


@dataclass(slots=True)
class Proposal:
    """A learning proposed from a window, before it is compared with existing ones.

    Attributes:
        kind: ``PROFILE`` or ``USER_PLAYBOOK``.
        content: The fact (profiles) or the instruction (playbooks).
        trigger: For playbooks: the situation in which the instruction applies.
        rationale: Why (which expectation was violated, or why a recipe transfers).
        pitfall: What goes wrong without the rule.
        blocking_issue: ``{kind, details}`` when the agent was blocked.
        ttl: Profile time to live (``one_day`` … ``infinity``).
        custom_features: Extra structured facts (indexed for search).
        source_interaction_ids: The turns this comes from (provenance).
        track: Which signal produced it (e.g. "correction", "tool_failure", "expert",
            "recipe", "preference", "fact"), recorded as the history reason.
        tags: Tags the learning is stored with (``learn.standing.STANDING_TAG`` marks a
            standing preference, served for every query of its user).
    """

    kind: LearningKind
    content: str
    trigger: str | None = None
    rationale: str | None = None
    pitfall: str | None = None
    blocking_issue: dict[str, Any] | None = None
    ttl: str = "infinity"
    custom_features: dict[str, Any] | None = None
    source_interaction_ids: list[int] = field(default_factory=list)
    track: str = ""
    tags: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """What the proposal would be searched by (as ``Learning.search_text``)."""
        return "\n".join(p for p in (self.trigger, self.content) if p)


class Verdict(StrEnum):
    """What to do with a proposal given the similar learnings that exist."""

    ADD = "add"  # new knowledge
    UPDATE = "update"  # same knowledge, better or more complete wording: rewrite ``target``
    SUPERSEDE = "supersede"  # contradicts ``target``: retire it, add the proposal as successor
    KEEP = "keep"  # already known: nothing to write


@dataclass(frozen=True, slots=True)
class Decision:
    """A judge's verdict on one proposal; ``target`` is an existing learning id.

    ``remainder``, for ``SUPERSEDE``: what of the target stays true (the unrelated facts of a
    compound profile); the target is then rewritten to it instead of being retired.
    """

    verdict: Verdict
    target: int | None = None
    content: str | None = None
    reason: str = ""
    remainder: str | None = None


@dataclass(frozen=True, slots=True)
class LearnContext:
    """What a proposer may read besides the window."""

    config: Config
    existing: dict[LearningKind, list[Learning]]
    requests: dict[str, RequestRecord]


class Proposer(Protocol):
    """Reads a window and proposes learnings of the given kinds."""

    def propose(self, window: Window, kinds: Sequence[LearningKind], ctx: LearnContext) -> list[Proposal]:
        """Proposals, each with provenance; an empty list when the window teaches nothing."""
        ...


class Judge(Protocol):
    """Decides how each proposal relates to the similar learnings that already exist."""

    def decide(self, proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> list[Decision]:
        """One decision per proposal (same order); targets must come from ``similar``."""
        ...


def learn_window(
    storage: Storage, config: Config, window: Window, proposer: Proposer, judge: Judge
) -> Changes:
    """The learnings a window yields, as Changes (nothing is written here)."""
    kinds = [KINDS_OF_EXTRACTOR[e] for e in window.extractors if e in KINDS_OF_EXTRACTOR]
    if not kinds or not window.new_turns:
        return Changes(reason="nothing to learn")
    ctx = _context(storage, config, window, kinds)
    proposals = _dedupe(proposer.propose(window, kinds, ctx))
    proposals = [p for p in proposals if p.kind in kinds and p.content.strip()]
    if not proposals:
        return Changes(reason="no learnable signal")
    vectors = _vectors(storage, proposals)
    similar = [
        _with_known(_similar(storage, window, p, v), ctx.existing.get(p.kind, []))
        for p, v in zip(proposals, vectors, strict=True)
    ]
    decisions = judge.decide(proposals, similar)
    return _changes(window, ctx, proposals, similar, decisions)


def _context(storage: Storage, config: Config, window: Window, kinds: Sequence[LearningKind]) -> LearnContext:
    existing = {
        kind: storage.list_learnings(
            window.org_id,
            LearningFilter(
                kinds=(kind,),
                user_id=window.user_id,
                statuses=(LearningStatus.CURRENT,),
                active_at=int(now()),
            ),
            limit=20,
        )
        for kind in kinds
    }
    request_ids = tuple(dict.fromkeys(t.request_id for t in window.turns))
    requests = storage.list_requests(
        window.org_id, RequestFilter(request_ids=request_ids), limit=len(request_ids)
    )
    return LearnContext(config=config, existing=existing, requests={r.request_id: r for r in requests})


def _dedupe(proposals: Sequence[Proposal]) -> list[Proposal]:
    """Drop proposals that restate an earlier proposal of the same window."""
    kept: list[Proposal] = []
    for p in proposals:
        words = ranking.word_set(p.text)
        if not any(q.kind is p.kind and ranking.jaccard(words, ranking.word_set(q.text)) > 0.8 for q in kept):
            kept.append(p)
    return kept


def _vectors(storage: Storage, proposals: Sequence[Proposal]) -> list[Vector | None]:
    """The proposals' vectors, in one embedder call (None without an embedder).

    Embedded as the learnings they would become, not as queries: they are compared with
    stored learnings for near-duplicates, in a job nobody waits for, and a query's window
    (its head and tail) would drop the middle of a long trigger and instruction.
    """
    embedder = getattr(storage, "embedder", None)
    if embedder is None:
        return [None for _ in proposals]
    return list(embedder.embed([p.text for p in proposals], kind="document"))


#: Most of the user's other current learnings a judge also sees, after the similar ones.
KNOWN_LIMIT = 20


def _with_known(similar: list[Learning], known: Sequence[Learning]) -> list[Learning]:
    """The similar learnings, then the user's other current ones of the kind (the newest).

    Search finds what shares words or meaning; "I switched to a Mac" and "uses Windows", or
    "Fahrenheit instead" and "prefers Celsius", share neither, yet one overturns the other.
    """
    ids = {row.id for row in similar}
    return [*similar, *[row for row in known if row.id not in ids][: max(0, KNOWN_LIMIT - len(similar))]]


def _similar(storage: Storage, window: Window, p: Proposal, vector: Vector | None) -> list[Learning]:
    """The user's current learnings of the proposal's kind that are most like it."""
    embedder = getattr(storage, "embedder", None)
    query = CandidateQuery(
        filters=(
            LearningFilter(kinds=(p.kind,), user_id=window.user_id, statuses=(LearningStatus.CURRENT,)),
        ),
        text=p.text,
        vector=vector,
        embed_model=getattr(embedder, "name", ""),
        limit=SIMILAR_LIMIT * 2,
    )
    scored = [
        (
            ranking.fused_score(c.vector_score, c.fts_norm, fts_best=c.fts_best, fts_floor=c.fts_floor),
            c.learning,
        )
        for c in storage.search_candidates(window.org_id, query)
    ]
    scored.sort(key=lambda pair: -pair[0])
    return [row for score, row in scored if score >= SIMILAR_THRESHOLD][:SIMILAR_LIMIT]


def _changes(
    window: Window,
    ctx: LearnContext,
    proposals: Sequence[Proposal],
    similar: Sequence[Sequence[Learning]],
    decisions: Sequence[Decision],
) -> Changes:
    changes = Changes(reason="; ".join(sorted({p.track for p in proposals if p.track})))
    retired: set[int] = set()
    for proposal, near, decision in zip(proposals, similar, decisions, strict=True):
        targets = {row.id: row for row in near}
        target = targets.get(decision.target or -1)
        if decision.verdict is Verdict.ADD or (decision.verdict is not Verdict.KEEP and target is None):
            changes.added.append(_row(window, ctx, proposal))
        elif decision.verdict is Verdict.UPDATE and target is not None and target.id not in retired:
            changes.updated.append(_updated(target, proposal, decision))
            retired.add(target.id)
        elif decision.verdict is Verdict.SUPERSEDE and target is not None and target.id not in retired:
            changes.added.append(_row(window, ctx, proposal))
            if decision.remainder:  # only part of it is overturned: keep the rest
                changes.updated.append(target.copy(content=decision.remainder))
            else:
                changes.superseded.append(Supersede(target.id, len(changes.added) - 1, decision.reason))
            retired.add(target.id)
    _retire_overridden_standing(changes, ctx, retired)
    return changes


def _standing_facets(row: Learning) -> frozenset[standing.Facet]:
    tool = (row.blocking_issue or {}).get("kind") == "tool_failure"
    framed = standing.is_standing_text(row.kind.value, row.content, tool=tool)
    return framed or (standing.facets(row.content) if standing.STANDING_TAG in row.tags else frozenset())


def _retire_overridden_standing(changes: Changes, ctx: LearnContext, retired: set[int]) -> None:
    """A new standing preference retires the user's older one that gives a facet another value.

    "Fahrenheit instead" and "prefers Celsius" share no word a judge could compare, yet both
    would be served for every query; one-valued facets (language, units, time zone, currency,
    length, formality) hold the newer value. The older learning of the same kind is superseded
    by the new one; one of the other kind (a rule against a profile) is archived.
    """
    known = [row for rows in ctx.existing.values() for row in rows]
    for index, new in enumerate(list(changes.added)):
        if standing.STANDING_TAG not in new.tags:
            continue
        mine = _standing_facets(new)
        for old in known:
            if old.id in retired or not standing.conflicting(mine, _standing_facets(old)):
                continue
            reason = f"a newer standing preference replaces it: {new.content}"
            if old.kind is new.kind:
                changes.superseded.append(Supersede(old.id, index, reason))
            else:
                changes.archived.append(old.id)
            retired.add(old.id)


def _updated(target: Learning, proposal: Proposal, decision: Decision) -> Learning:
    ids = list(dict.fromkeys([*target.source_interaction_ids, *proposal.source_interaction_ids]))
    return target.copy(
        content=decision.content or proposal.content,
        trigger=proposal.trigger or target.trigger,
        rationale=proposal.rationale or target.rationale,
        pitfall=proposal.pitfall or target.pitfall,
        source_interaction_ids=ids,
        tags=list(dict.fromkeys([*target.tags, *proposal.tags])),
    )


def _row(window: Window, ctx: LearnContext, p: Proposal) -> Learning:
    """A new learning with provenance from the window's newest request."""
    last = window.new_turns[-1]
    request = ctx.requests.get(last.request_id)
    profile = p.kind is LearningKind.PROFILE
    return Learning(
        org_id=window.org_id,
        kind=p.kind,
        user_id=window.user_id,
        content=p.content.strip(),
        trigger=p.trigger,
        rationale=p.rationale,
        pitfall=p.pitfall,
        blocking_issue=p.blocking_issue,
        ttl=p.ttl if profile else "infinity",
        expires_at=expires_at(p.ttl) if profile else NEVER_EXPIRES,
        custom_features=p.custom_features,
        tags=list(p.tags),
        agent_version=request.agent_version if request else "",
        playbook_name="" if profile else "playbook",
        source=(request.source or None) if request else None,
        request_id=last.request_id,
        source_interaction_ids=p.source_interaction_ids or [t_.id for t_ in window.new_turns],
        extractor_names=["profile"] if profile else None,
    )


#: Profile time-to-live values in seconds; anything else never expires.
TTL_SECONDS = {
    "one_day": 86_400,
    "one_week": 7 * 86_400,
    "one_month": 30 * 86_400,
    "one_quarter": 90 * 86_400,
    "one_year": 365 * 86_400,
}


def expires_at(ttl: str) -> int:
    """When a profile written now with this time to live expires."""
    seconds = TTL_SECONDS.get(ttl)
    return NEVER_EXPIRES if seconds is None else int(now()) + seconds
