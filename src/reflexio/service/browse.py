"""What people browsing an org look at: pages of learnings, users, sessions, one learning's story.

These are the reads behind the dashboard (and anything else that shows an org to a person).
Every read is a page: a listing asks storage for one row more than it shows (so "next" is
exact without counting), and a count is asked for only where a person needs the number. A
query ranks through the same search as ``/api/search``, so the scores shown are the scores
the agent would get.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from reflexio.errors import NotFoundError
from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.records import (
    Approval,
    EvaluationRecord,
    InteractionRecord,
    Learning,
    LearningEvent,
    LearningKind,
    LearningStatus,
    OutcomeRecord,
    RequestRecord,
)
from reflexio.service.core import Core
from reflexio.service.learning_access import listed

__all__ = [
    "Footprint",
    "LearningQuery",
    "LearningStory",
    "Page",
    "SessionStory",
    "SessionSummary",
    "count_learnings",
    "find_learning",
    "learning_story",
    "list_learnings",
    "list_sessions",
    "recent_users",
    "session_story",
    "user_footprint",
]

T = TypeVar("T")

#: Requests read per storage call while collecting the sessions or users of a page.
_SCAN_BATCH = 500
#: Requests scanned at most to fill one page of sessions or users (a bound on a page's cost).
_SCAN_LIMIT = 5_000
#: History events shown for one learning.
_HISTORY_LIMIT = 200
#: Turns shown for one session.
_SESSION_TURNS = 2_000


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; ``has_more`` says whether a next page exists."""

    items: list[T]
    page: int
    per_page: int
    has_more: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class LearningQuery:
    """What a person filters learnings by; every field left empty means "any"."""

    kinds: tuple[LearningKind, ...] = ()
    text: str = ""
    statuses: tuple[LearningStatus, ...] | None = None
    approvals: tuple[Approval, ...] | None = None
    agent_version: str | None = None
    user_id: str | None = None
    tag: str | None = None
    created_after: int | None = None
    created_before: int | None = None

    def where(self, kind: LearningKind | None = None) -> LearningFilter:
        """The storage filter for one kind (or all the query's kinds)."""
        return LearningFilter(
            kinds=(kind,) if kind else self.kinds,
            statuses=self.statuses,
            approvals=self.approvals,
            agent_version=self.agent_version,
            user_id=self.user_id,
            tags=(self.tag,) if self.tag else None,
            created_after=self.created_after,
            created_before=self.created_before,
        )


def list_learnings(
    core: Core, org_id: str, query: LearningQuery, *, page: int = 1, per_page: int = 50
) -> Page[tuple[Learning, float | None]]:
    """A page of learnings: the most recently changed first, or ranked by ``query.text``.

    A ranked listing is one search for ``page * per_page + 1`` hits (search has no offset),
    so deep pages of a query cost more; a person rarely reads past the first few.
    """
    start = (page - 1) * per_page
    if query.text.strip():
        hits = listed(core, org_id, query.where(), query.text, start + per_page + 1)
        return Page(hits[start : start + per_page], page, per_page, len(hits) > start + per_page)
    rows = core.storage.list_learnings(org_id, query.where(), limit=per_page + 1, offset=start)
    return Page([(row, None) for row in rows[:per_page]], page, per_page, len(rows) > per_page)


def count_learnings(core: Core, org_id: str, query: LearningQuery) -> int:
    """How many learnings the query's filters select (the text plays no part)."""
    return core.storage.count_learnings(org_id, query.where())


def find_learning(core: Core, org_id: str, kind: LearningKind, wire_id: str) -> Learning:
    """One learning by the id its kind shows (a profile's ``profile_id``, a playbook's number).

    Raises:
        NotFoundError: No such learning in the org.
    """
    if kind is LearningKind.PROFILE:
        where = LearningFilter(kinds=(kind,), profile_ids=(wire_id,))
    elif wire_id.isdigit():
        where = LearningFilter(kinds=(kind,), ids=(int(wire_id),))
    else:
        raise NotFoundError(f"no {kind.value.replace('_', ' ')} {wire_id!r}")
    rows = core.storage.get_learnings(org_id, where)
    if not rows:
        raise NotFoundError(f"no {kind.value.replace('_', ' ')} {wire_id!r} in this org")
    return rows[0]


@dataclass(frozen=True, slots=True)
class LearningStory:
    """A learning with what a reviewer needs around it.

    Attributes:
        learning: The row as it is now.
        history: Its events, oldest first (created, rewritten, approved, archived...).
        sources: The interactions it cites that still exist.
        cited: How many interactions it cites (more than ``sources`` once some are deleted).
        verdicts: Judgements of the learning in sessions it was injected into, newest first.
    """

    learning: Learning
    history: list[LearningEvent]
    sources: list[InteractionRecord]
    cited: int
    verdicts: list[EvaluationRecord] = field(default_factory=list)


def learning_story(core: Core, org_id: str, row: Learning) -> LearningStory:
    """The history, sources and verdicts of one learning of the org."""
    events = core.storage.list_events(
        org_id, learning_ids=[row.id], kinds=[row.kind.value], limit=_HISTORY_LIMIT
    )
    cited = tuple(sorted(set(row.source_interaction_ids)))
    sources = core.storage.list_interactions(org_id, InteractionFilter(ids=cited)) if cited else []
    return LearningStory(learning=row, history=events[::-1], sources=sources, cited=len(cited))


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session in a listing: who, which agent, how many publishes, when it was last active,
    and how it went.

    Attributes:
        outcome: What the agent's systems reported (``success``, ``failure``...), else the
            judge's verdict (``succeeded`` / ``failed``); None while neither exists.
        outcome_source: ``reported`` or ``judge`` (None with no outcome).
    """

    session_id: str
    user_id: str
    agent_version: str
    requests: int
    last_active: int
    outcome: str | None = None
    outcome_source: str | None = None


def list_sessions(
    core: Core, org_id: str, where: RequestFilter, *, page: int = 1, per_page: int = 50
) -> Page[SessionSummary]:
    """Sessions by their newest matching request, newest first.

    Sessions are collected from requests in batches, reading at most ``_SCAN_LIMIT`` requests
    past the page's start; a session whose requests are all older than that is on a later
    page only through a narrower filter (a user, a time range).
    """
    found: dict[str, SessionSummary] = {}
    wanted = page * per_page + 1
    for batch in _request_batches(core, org_id, where, _SCAN_LIMIT + wanted * 4):
        for r in batch:
            seen = found.get(r.session_id)
            if seen is None:
                found[r.session_id] = SessionSummary(
                    r.session_id, r.user_id, r.agent_version, 1, r.created_at
                )
            else:
                found[r.session_id] = SessionSummary(
                    seen.session_id, seen.user_id, seen.agent_version, seen.requests + 1, seen.last_active
                )
        if len(found) >= wanted:
            break
    items = list(found.values())
    start = (page - 1) * per_page
    shown = _with_outcomes(core, org_id, items[start : start + per_page])
    return Page(shown, page, per_page, len(items) > start + per_page)


def _with_outcomes(core: Core, org_id: str, sessions: list[SessionSummary]) -> list[SessionSummary]:
    """The page's sessions with their outcome: a reported one first, else the judge's verdict
    (two queries for the page)."""
    if not sessions:
        return sessions
    ids = sorted({s.session_id for s in sessions})
    reported = {
        (o.user_id, o.session_id): o.outcome
        for o in core.storage.list_outcomes(org_id, session_ids=ids, limit=len(ids) * 4)[::-1]
    }
    judged: dict[tuple[str, str], str] = {}
    for row in sorted(core.storage.find_evaluations(org_id, kind="session", session_ids=ids), key=_made):
        judged[(row.user_id or "", row.session_id or "")] = (
            "succeeded" if row.result.get("is_success") else "failed"
        )
    out = []
    for s in sessions:
        key = (s.user_id, s.session_id)
        if key in reported:
            out.append(replace(s, outcome=reported[key], outcome_source="reported"))
        elif key in judged:
            out.append(replace(s, outcome=judged[key], outcome_source="judge"))
        else:
            out.append(s)
    return out


def _made(row: EvaluationRecord) -> float:
    return row.created_at


def recent_users(core: Core, org_id: str, *, prefix: str = "", limit: int = 100) -> list[tuple[str, int]]:
    """Users by their latest publish, newest first, with that publish's time.

    With ``prefix`` only user ids starting with it; an exact id always comes first when it
    has published at all (so a person who types a full id finds the user however old).
    """
    users: dict[str, int] = {}
    if prefix:
        exact = core.storage.list_requests(org_id, RequestFilter(user_id=prefix), limit=1)
        if exact:
            users[prefix] = exact[0].created_at
    for batch in _request_batches(core, org_id, RequestFilter(), _SCAN_LIMIT):
        for r in batch:
            if r.user_id.startswith(prefix):
                users.setdefault(r.user_id, r.created_at)
        if len(users) >= limit:
            break
    return list(users.items())[:limit]


def _request_batches(
    core: Core, org_id: str, where: RequestFilter, most: int
) -> Iterator[list[RequestRecord]]:
    """Requests newest first, a batch at a time, up to about ``most`` (read lazily)."""
    start = 0
    while start < most:
        batch = core.storage.list_requests(org_id, where, limit=_SCAN_BATCH, offset=start)
        yield batch
        if len(batch) < _SCAN_BATCH:
            return
        start += _SCAN_BATCH


@dataclass(frozen=True, slots=True)
class SessionStory:
    """A conversation as it happened, with its judgements.

    Attributes:
        session_id: The session.
        requests: Its publishes, oldest first.
        turns: Its interactions, oldest first.
        injected: For each answer (interaction id), the learnings the agent reported injecting,
            resolved to rows where they still exist.
        verdicts: Session judgements (success, failure type, corrections), newest first.
        learning_verdicts: Judgements of the learnings injected in it, newest first.
        outcomes: What the agent's systems reported, every revision, newest first.
    """

    session_id: str
    requests: list[RequestRecord]
    turns: list[InteractionRecord]
    injected: dict[int, list[tuple[str, str, Learning | None]]]
    verdicts: list[EvaluationRecord]
    learning_verdicts: list[EvaluationRecord]
    outcomes: list[OutcomeRecord] = field(default_factory=list)


def session_story(core: Core, org_id: str, session_id: str) -> SessionStory:
    """One session of the org, turn by turn.

    Raises:
        NotFoundError: The org has no session with this id.
    """
    requests = core.storage.list_requests(org_id, RequestFilter(session_id=session_id), limit=_SESSION_TURNS)
    if not requests:
        raise NotFoundError(f"no session {session_id!r} in this org")
    turns = core.storage.list_interactions(
        org_id, InteractionFilter(session_id=session_id), limit=_SESSION_TURNS
    )
    return SessionStory(
        session_id=session_id,
        requests=sorted(requests, key=lambda r: (r.created_at, r.request_id)),
        turns=turns,
        injected=_injected(core, org_id, turns),
        verdicts=core.storage.list_evaluations(org_id, kind="session", session_id=session_id),
        learning_verdicts=core.storage.list_evaluations(org_id, kind="learning", session_id=session_id),
        outcomes=core.storage.list_outcomes(org_id, session_ids=[session_id], latest_only=False),
    )


def _injected(
    core: Core, org_id: str, turns: list[InteractionRecord]
) -> dict[int, list[tuple[str, str, Learning | None]]]:
    """Each turn's reported learnings as (kind, wire id, row or None when gone)."""
    refs = {
        t.id: [(str(r.get("kind", "")), str(r.get("learning_id", ""))) for r in t.retrieved_learnings]
        for t in turns
        if t.retrieved_learnings
    }
    wanted = {ref for pairs in refs.values() for ref in pairs}
    profile_ids = tuple(i for k, i in wanted if k == LearningKind.PROFILE.value)
    numbers = tuple(int(i) for k, i in wanted if k != LearningKind.PROFILE.value and i.isdigit())
    rows: dict[tuple[str, str], Learning] = {}
    if profile_ids:
        for row in core.storage.get_learnings(
            org_id, LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=profile_ids)
        ):
            rows[(row.kind.value, row.wire_id)] = row
    if numbers:
        playbooks = (LearningKind.USER_PLAYBOOK, LearningKind.AGENT_PLAYBOOK)
        for row in core.storage.get_learnings(org_id, LearningFilter(kinds=playbooks, ids=numbers)):
            rows[(row.kind.value, row.wire_id)] = row
    return {tid: [(k, i, rows.get((k, i))) for k, i in pairs] for tid, pairs in refs.items()}


@dataclass(frozen=True, slots=True)
class Footprint:
    """What is stored about one user: what deleting them removes (counts capped at ``cap``)."""

    user_id: str
    profiles: int
    user_playbooks: int
    requests: int
    sessions: int
    interactions: int
    verdicts: int
    cap: int

    @property
    def empty(self) -> bool:
        """Whether nothing at all is stored about the user."""
        return not (
            self.profiles or self.user_playbooks or self.requests or self.interactions or self.verdicts
        )


def user_footprint(core: Core, org_id: str, user_id: str, *, cap: int = 10_000) -> Footprint:
    """Counts of a user's rows of each kind (tombstones included), each read at most ``cap`` deep."""
    storage = core.storage

    def learnings(kind: LearningKind) -> int:
        return storage.count_learnings(org_id, LearningFilter(kinds=(kind,), user_id=user_id))

    requests = storage.list_requests(org_id, RequestFilter(user_id=user_id), limit=cap)
    turns = storage.list_interactions(org_id, InteractionFilter(user_id=user_id), limit=cap)
    verdicts = storage.list_evaluations(org_id, kind="session", user_id=user_id, limit=cap)
    judged = storage.list_evaluations(org_id, kind="learning", user_id=user_id, limit=cap)
    return Footprint(
        user_id=user_id,
        profiles=learnings(LearningKind.PROFILE),
        user_playbooks=learnings(LearningKind.USER_PLAYBOOK),
        requests=len(requests),
        sessions=len({r.session_id for r in requests}),
        interactions=len(turns),
        verdicts=min(cap, len(verdicts) + len(judged)),
        cap=cap,
    )
