"""Retrieval: the one search behind ``/api/search`` and the per-kind search routes.

A search is planned as one ``LearningFilter`` per kind (scope and status applied before
ranking), sent to storage as a single ``CandidateQuery``, then ranked here with the pure
functions of ``reflexio.ranking``: fused score, threshold, session dedup, near-duplicate
collapse, ``top_k`` per kind and an optional token budget across kinds. It never calls an LLM.

A user's *standing* learnings (tag ``STANDING_TAG``: language, units, time zone, length, tone,
format, accessibility) apply to every answer, so the unified search serves them for any query
of that user (``service.standing``), after the kind's ``top_k``, first in a token budget, and
with their real relevance as their score: they are there because of the tag, not because they
match.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from reflexio import ranking, telemetry
from reflexio.errors import ReflexioError
from reflexio.filters import Candidate, CandidateQuery, LearningFilter
from reflexio.filters import SearchMode as StoreMode
from reflexio.models import (
    PlaybookStatus,
    SearchAgentPlaybookRequest,
    SearchAgentPlaybooksViewResponse,
    SearchMode,
    SearchProfilesViewResponse,
    SearchUserPlaybookRequest,
    SearchUserPlaybooksViewResponse,
    SearchUserProfileRequest,
    UnifiedSearchRequest,
    UnifiedSearchViewResponse,
)
from reflexio.records import Approval, Learning, LearningKind, LearningStatus, Vector, now
from reflexio.service import exposure, quotas, revisions, standing, views
from reflexio.service.core import HOT_PATH_CONFIG_AGE, Core

__all__ = [
    "DEFAULT_THRESHOLD",
    "Plan",
    "Ranked",
    "rank",
    "search",
    "search_agent_playbooks",
    "search_profiles",
    "search_user_playbooks",
    "warm_up",
]

log = logging.getLogger(__name__)

#: Fused-score floor when neither the request nor the org config names one. Scores mix cosine
#: similarity with the share of the query matched lexically; unrelated learnings score near 0.
DEFAULT_THRESHOLD = 0.15

#: How many candidates each arm brings per kind, relative to ``top_k``.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
#: Best-scored candidates per kind kept for near-duplicate collapse (which keeps top_k).
POOL_FACTOR = 3

_KIND_OF_ENTITY = {
    "profiles": LearningKind.PROFILE,
    "user_playbooks": LearningKind.USER_PLAYBOOK,
    "agent_playbooks": LearningKind.AGENT_PLAYBOOK,
}


@dataclass(frozen=True, slots=True)
class Plan:
    """What to retrieve: one filter per kind plus the ranking knobs."""

    text: str
    filters: tuple[LearningFilter, ...]
    top_k: int
    threshold: float
    mode: SearchMode = SearchMode.HYBRID
    exclude: frozenset[tuple[str, str]] = frozenset()
    max_tokens: int | None = None
    weights: ranking.FusionWeights = field(default_factory=ranking.FusionWeights)
    fusion: str = "calibrated"
    #: How far a strong hit lifts the learnings extracted from its request (0 turns it off).
    cohesion: float = ranking.COHESION_WEIGHT
    #: Whether near-duplicates fold into the best of them: an agent wants distinct lessons, a
    #: reviewer weighing evidence wants every user who taught the same one.
    collapse: bool = True
    #: Per filter of ``filters``: the scope of the standing learnings served whatever the
    #: query (None: none for that filter).
    standing: tuple[LearningFilter | None, ...] = ()


@dataclass(slots=True)
class Ranked:
    """Ranked results per filter of the plan, with timings and degradation."""

    hits: list[list[tuple[Learning, float]]]
    mode_effective: SearchMode
    degraded: bool = False
    timings: dict[str, float] = field(default_factory=dict)


def rank(core: Core, org_id: str, plan: Plan) -> Ranked:
    """Retrieve and rank learnings for a plan; the heart of every search route."""
    timings: dict[str, float] = {}
    vector, mode, degraded = _query_vector(core, plan, timings)
    started = time.perf_counter()
    query = CandidateQuery(
        filters=plan.filters,
        text=plan.text,
        vector=vector,
        embed_model=core.embedder.name,
        limit=max(plan.top_k * CANDIDATE_FACTOR, MIN_CANDIDATES),
        mode=StoreMode(mode.value),
        floor=plan.threshold if plan.fusion == "calibrated" else None,
        weights=plan.weights,
        pool=plan.top_k * POOL_FACTOR + len(plan.exclude),  # the excluded may all rank first
    )
    candidates = core.storage.search_candidates(org_id, query)
    timings["candidates_ms"] = (time.perf_counter() - started) * 1000
    span = telemetry.current()
    if span.is_recording():
        span.set_attributes(_arms(core, mode, degraded, candidates, timings))
    started = time.perf_counter()
    per_filter: list[list[Candidate]] = [[] for _ in plan.filters]
    # beside the approved version it revises, a pending revision is not served (asking for
    # pending playbooks only is a reviewer's preview: it is)
    beside = {n for n, f in enumerate(plan.filters) if f.approvals and Approval.APPROVED in f.approvals}
    unserved = revisions.pending_revisions(
        core.storage, org_id, (c.learning for c in candidates if c.filter_index in beside)
    )
    for candidate in candidates:
        if candidate.learning.id not in unserved:
            per_filter[candidate.filter_index].append(candidate)
    hits = [_rank_one(group, plan) for group in per_filter]
    first: set[int] = set()
    if any(f is not None for f in plan.standing):
        wanted = standing.Wanted(
            plan.text, vector, core.embedder.name, plan.top_k, plan.exclude, plan.weights
        )
        hits, first = standing.add_standing(
            core.storage, org_id, plan.standing, hits, wanted, lambda c: _score(c, plan)
        )
    if plan.max_tokens is not None:
        hits = _pack(hits, plan.max_tokens, first)
    timings["rank_ms"] = (time.perf_counter() - started) * 1000
    return Ranked(hits=hits, mode_effective=mode, degraded=degraded, timings=timings)


def _query_vector(
    core: Core, plan: Plan, timings: dict[str, float]
) -> tuple[Vector | None, SearchMode, bool]:
    if plan.mode is SearchMode.FTS or not plan.text.strip():
        return None, plan.mode, False
    started = time.perf_counter()
    try:
        vector = core.embedder.embed([plan.text], kind="query")[0]
    except ReflexioError as exc:  # a hosted embedder is down: full text still answers
        log.warning("query embedding failed, searching full text only: %s", exc)
        telemetry.current().record_exception(exc)
        return None, SearchMode.FTS, True
    finally:
        timings["embed_ms"] = (time.perf_counter() - started) * 1000
    return vector, plan.mode, False


def _arms(
    core: Core, mode: SearchMode, degraded: bool, candidates: Sequence[Candidate], timings: dict[str, float]
) -> dict[str, str | int | float | bool]:
    """What each retrieval arm did, as attributes of the search's span.

    Attributes of one span rather than a span per arm (embedding, candidates): on a server
    that exports traces, every span costs its creation on the request path and its protobuf
    encoding on the exporting thread, and per-arm spans made up half of a search's spans
    (bench/results/otel.json). The arms' timings keep what their spans' durations told.
    """
    arms: dict[str, str | int | float | bool] = {
        "reflexio.search.mode": mode.value,
        "reflexio.search.degraded": degraded,
        "reflexio.search.candidates_ms": round(timings["candidates_ms"], 3),
        # a candidate may come from both arms
        "reflexio.search.fts_hits": sum(1 for c in candidates if c.fts_rank is not None),
        "reflexio.search.vector_hits": sum(1 for c in candidates if c.vector_rank is not None),
        "reflexio.search.candidates": len(candidates),
    }
    if "embed_ms" in timings:  # the query was embedded (or that was tried)
        arms["reflexio.embedder"] = core.embedder.name
        arms["reflexio.search.embed_ms"] = round(timings["embed_ms"], 3)
    return arms


def _score(candidate: Candidate, plan: Plan) -> float:
    if plan.fusion == "rrf":
        return ranking.rrf_scores([(candidate.vector_rank, candidate.fts_rank)], weights=plan.weights)[0]
    return ranking.fused_score(
        candidate.vector_score,
        candidate.fts_norm,
        plan.weights,
        fts_best=candidate.fts_best,
        fts_floor=candidate.fts_floor,
    )


def _rank_one(group: Sequence[Candidate], plan: Plan) -> list[tuple[Learning, float]]:
    """The top_k of one filter's candidates: scored, cut, lifted by cohesion, deduplicated.

    The threshold and the pool apply to a learning's own score, so a backend that drops what
    falls below them (``CandidateQuery.floor`` and ``pool``, the vector arm's first hit
    excepted from the pool) never changes the answer; the cohesion lift then reorders the
    pool and is the score reported, and a hybrid search seats the vector arm's first hit
    within the first places (``ranking.seat_leaders``).
    """
    scored = [(c.learning, _score(c, plan), c.vector_rank == 1) for c in group]
    scored = [
        (row, s, leads)
        for row, s, leads in scored
        if s >= plan.threshold and (row.kind.value, row.wire_id) not in plan.exclude
    ]
    scored.sort(key=lambda t: (-t[1], -t[0].updated_at, -t[0].id))
    size = plan.top_k * POOL_FACTOR
    ranked = scored[:size] + [t for t in scored[size:] if t[2]]  # the vector arm's first hit stays
    lifted = ranking.cohesion_boost(
        [s for _, s, _ in ranked], [row.request_id for row, _, _ in ranked], weight=plan.cohesion
    )
    ranked = sorted(
        ((row, s, leads) for (row, _, leads), s in zip(ranked, lifted, strict=True)),
        key=lambda t: (-t[1], -t[0].updated_at, -t[0].id),
    )
    pool = [(row, s) for row, s, _ in ranked]
    if plan.mode is SearchMode.HYBRID:  # the vector arm's first hit within the first places
        seated = ranking.seat_leaders([s for _, s in pool], [leads for _, _, leads in ranked])
        pool = [(pool[i][0], s) for i, s in seated]
    if not plan.collapse:
        return [(row, round(s, 6)) for row, s in pool[: plan.top_k]]
    kept = ranking.collapse_near_duplicates(
        pool, [row.search_text for row, _ in pool], [row.embedding for row, _ in pool], keep=plan.top_k
    )
    return [(row, round(s, 6)) for row, s in kept]


def _pack(
    hits: list[list[tuple[Learning, float]]], max_tokens: int, first: AbstractSet[int] = frozenset()
) -> list[list[tuple[Learning, float]]]:
    """Keep the best learnings across kinds that fit in ``max_tokens`` together (``first``,
    the standing learnings, before any other)."""
    flat = sorted(
        ((s, i, j) for i, group in enumerate(hits) for j, (_, s) in enumerate(group)),
        key=lambda t: (hits[t[1]][t[2]][0].id not in first, -t[0]),
    )
    sizes = [ranking.estimate_tokens(hits[i][j][0].search_text) for _, i, j in flat]
    kept = {(i, j) for _, i, j in ranking.pack_to_budget(flat, sizes, max_tokens)}
    return [[pair for j, pair in enumerate(group) if (i, j) in kept] for i, group in enumerate(hits)]


# -- plans for the wire requests --------------------------------------------------------------


def _threshold(core: Core, org_id: str, requested: float | None) -> float:
    if requested is not None:
        return requested
    configured = core.org_config(org_id, max_age=HOT_PATH_CONFIG_AGE).search_threshold
    return DEFAULT_THRESHOLD if configured is None else configured


def _approvals(statuses: Sequence[PlaybookStatus] | PlaybookStatus | None) -> tuple[Approval, ...]:
    """Approval filter for agent playbooks: default approved + pending; rejected never served."""
    if statuses is None or (not isinstance(statuses, str) and not statuses):
        return (Approval.APPROVED, Approval.PENDING)
    chosen = [statuses] if isinstance(statuses, str) else list(statuses)
    return tuple(
        Approval(PlaybookStatus(s).value) for s in chosen if PlaybookStatus(s) is not PlaybookStatus.REJECTED
    )


def _served_approvals(
    core: Core, org_id: str, statuses: Sequence[PlaybookStatus] | PlaybookStatus | None
) -> tuple[Approval, ...]:
    """The approvals a search may serve: as asked, approved only when the org requires approval."""
    approvals = _approvals(statuses)
    if core.org_config(org_id, max_age=HOT_PATH_CONFIG_AGE).approval_required:
        return tuple(a for a in approvals if a is Approval.APPROVED)
    return approvals


def unified_filters(
    req: UnifiedSearchRequest, at: int, approvals: tuple[Approval, ...] | None = None
) -> list[tuple[str, LearningFilter]]:
    """One filter per requested kind; rejected rules are never served.

    Profiles and user playbooks are one user's learnings: they are served to that user only, so
    without ``user_id`` those two kinds are not searched at all (Reflexio served every user's
    user playbooks to a caller who named none). ``approvals`` overrides the request's agent
    playbook status filter (``approval_required``).
    """
    wanted: list[str] = list(req.entity_types or _KIND_OF_ENTITY)
    tags = tuple(req.tags) if req.tags else None
    current = (LearningStatus.CURRENT,)
    out: list[tuple[str, LearningFilter]] = []
    if "profiles" in wanted and req.user_id:
        out.append(
            (
                "profiles",
                LearningFilter(
                    kinds=(LearningKind.PROFILE,),
                    user_id=req.user_id,
                    statuses=current,
                    source=req.source or None,
                    tags=tags,
                    active_at=at,
                ),
            )
        )
    if "user_playbooks" in wanted and req.user_id:
        out.append(
            (
                "user_playbooks",
                LearningFilter(
                    kinds=(LearningKind.USER_PLAYBOOK,),
                    user_id=req.user_id,
                    agent_version=req.agent_version or None,
                    playbook_name=req.playbook_name or None,
                    statuses=current,
                    source=req.source or None,
                    tags=tags,
                ),
            )
        )
    if "agent_playbooks" in wanted:
        if approvals is None:
            approvals = _approvals(req.agent_playbook_status_filter)
        if approvals:
            out.append(
                (
                    "agent_playbooks",
                    LearningFilter(
                        kinds=(LearningKind.AGENT_PLAYBOOK,),
                        agent_version=req.agent_version or None,
                        playbook_name=req.playbook_name or None,
                        statuses=current,
                        approvals=approvals,
                        tags=tags,
                    ),
                )
            )
    return out


def search(core: Core, org_id: str, req: UnifiedSearchRequest) -> UnifiedSearchViewResponse:
    """Unified search: the few learnings that matter for this query, per kind, scored.

    A user in the holdout arm of a running retrieval experiment gets nothing; otherwise the
    per-learning holdout may withhold some learnings from this session (``service.exposure``),
    and every learning served or withheld is recorded for the session.
    """
    quotas.charge(core, org_id, "searches")
    started = time.perf_counter()
    with telemetry.operation("reflexio.search", **{"reflexio.org": org_id, "reflexio.top_k": req.top_k}):
        out = _unified(core, org_id, req)
    telemetry.SEARCH_MS.record((time.perf_counter() - started) * 1000, {"org": org_id})
    return out


def warm_up(core: Core, org_id: str) -> None:
    """Run one search of the org the way a caller's would (query embedding, index, ranking).

    For a server's warm-up: not a caller's search, so it counts against no quota and feeds no
    latency metric, and without a session it records no exposure.
    """
    _unified(core, org_id, UnifiedSearchRequest(query="warm up the index"))


def _unified(core: Core, org_id: str, req: UnifiedSearchRequest) -> UnifiedSearchViewResponse:
    config = core.org_config(org_id, max_age=HOT_PATH_CONFIG_AGE)
    experiment = exposure.assignment(config, req.user_id, required=True)
    if experiment is not None and experiment.arm == "holdout":
        return UnifiedSearchViewResponse(success=True, degraded=False, experiment=experiment)
    named = unified_filters(
        req, int(now()), _served_approvals(core, org_id, req.agent_playbook_status_filter)
    )
    exclude: frozenset[tuple[str, str]] = frozenset()
    if req.session_id and not req.include_already_served:
        exclude = frozenset(core.storage.list_exposures(org_id, req.session_id))
    query = _reformulated(core, org_id, req) if req.enable_reformulation else req.query
    holdout = exposure.Holdout.of(org_id, config, req.session_id, req.user_id)
    top_k = req.top_k or 5
    plan = Plan(
        text=query,
        filters=tuple(f for _, f in named),
        top_k=top_k + (exposure.SPARE if holdout.active else 0),
        threshold=_threshold(core, org_id, req.threshold),
        mode=SearchMode(req.search_mode),
        exclude=exclude,
        max_tokens=None if holdout.active else req.max_tokens,
        standing=tuple(standing.scope(f, req) for _, f in named),
    )
    ranked = rank(core, org_id, plan) if named else Ranked(hits=[], mode_effective=plan.mode)
    ranked.hits = [holdout.serve(hits, top_k) for hits in ranked.hits]
    if holdout.active and req.max_tokens is not None:
        ranked.hits = _pack(ranked.hits, req.max_tokens)
    out = UnifiedSearchViewResponse(
        success=True,
        degraded=ranked.degraded,
        search_mode_effective=ranked.mode_effective.value,
        reformulated_query=query if query != req.query else None,
        experiment=experiment,
    )
    for (entity, _), hits in zip(named, ranked.hits, strict=True):
        if entity == "profiles":
            out.profiles = [views.profile_view(row, s) for row, s in hits]
        elif entity == "user_playbooks":
            out.user_playbooks = [views.user_playbook_view(row, s) for row, s in hits]
        else:
            out.agent_playbooks = [views.agent_playbook_view(row, s) for row, s in hits]
    if req.session_id:
        core.storage.record_exposures(holdout.decisions)
    return out


def _reformulated(core: Core, org_id: str, req: UnifiedSearchRequest) -> str:
    """The query rewritten into a standalone one from the conversation (opt-in, needs an LLM).

    Without an LLM provider, or on any failure, the query is used as typed: search never
    fails because rewriting did.
    """
    from reflexio.learn.reformulate import rewrite_query
    from reflexio.learn.usage import metered
    from reflexio.service.learners import org_llm

    llm = org_llm(core, core.org_config(org_id))
    if llm is None:
        return req.query
    return rewrite_query(metered(llm, core.storage, org_id), req.query, req.conversation_history)


def _run_single(
    core: Core,
    org_id: str,
    f: LearningFilter,
    text: str | None,
    top_k: int,
    threshold: float | None,
    mode: SearchMode,
) -> list[tuple[Learning, float]]:
    """A one-kind search; without a query it lists the newest matching rows, unscored.

    Either way it counts against the org's monthly search quota (a 429 past it).
    """
    quotas.charge(core, org_id, "searches")
    if not text or not text.strip():
        return [(row, 0.0) for row in core.storage.list_learnings(org_id, f, limit=top_k)]
    plan = Plan(
        text=text, filters=(f,), top_k=top_k, threshold=_threshold(core, org_id, threshold), mode=mode
    )
    with telemetry.operation("reflexio.search", **{"reflexio.org": org_id, "reflexio.top_k": top_k}):
        return rank(core, org_id, plan).hits[0]


#: Why a profile search without ``user_id`` finds nothing: one user's facts are never served to another.
_PROFILES_NEED_A_USER = "profiles are searched per user: pass user_id (no search reads every user's profiles)"


def search_profiles(core: Core, org_id: str, req: SearchUserProfileRequest) -> SearchProfilesViewResponse:
    """Search one user's current, unexpired profiles; without a user, nobody's."""
    if req.user_id is None:
        return SearchProfilesViewResponse(success=True, user_profiles=[], msg=_PROFILES_NEED_A_USER)
    f = LearningFilter(
        kinds=(LearningKind.PROFILE,),
        user_id=req.user_id,
        statuses=(LearningStatus.CURRENT,),
        source=req.source or None,
        tags=tuple(req.tags) if req.tags else None,
        request_id=req.generated_from_request_id or None,
        updated_after=views.epoch(req.start_time),
        updated_before=views.epoch(req.end_time),
        active_at=int(now()),
    )
    hits = _run_single(
        core, org_id, f, req.query, req.top_k or 10, req.threshold, SearchMode(req.search_mode)
    )
    if req.custom_feature:
        hits = [(r, s) for r, s in hits if req.custom_feature in str(r.custom_features or {})]
    return SearchProfilesViewResponse(success=True, user_profiles=[views.profile_view(r, s) for r, s in hits])


def search_user_playbooks(
    core: Core, org_id: str, req: SearchUserPlaybookRequest
) -> SearchUserPlaybooksViewResponse:
    """Search user playbooks (current ones unless a status filter says otherwise)."""
    f = LearningFilter(
        kinds=(LearningKind.USER_PLAYBOOK,),
        user_id=req.user_id or None,
        agent_version=req.agent_version or None,
        playbook_name=req.playbook_name or None,
        statuses=views.learning_statuses(req.status_filter) or (LearningStatus.CURRENT,),
        source=req.source or None,
        tags=tuple(req.tags) if req.tags else None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    hits = _run_single(
        core, org_id, f, req.query, req.top_k or 10, req.threshold, SearchMode(req.search_mode)
    )
    return SearchUserPlaybooksViewResponse(
        success=True, user_playbooks=[views.user_playbook_view(r, s) for r, s in hits]
    )


def search_agent_playbooks(
    core: Core, org_id: str, req: SearchAgentPlaybookRequest
) -> SearchAgentPlaybooksViewResponse:
    """Search agent playbooks (approved and pending unless asked otherwise; never rejected)."""
    f = LearningFilter(
        kinds=(LearningKind.AGENT_PLAYBOOK,),
        agent_version=req.agent_version or None,
        playbook_name=req.playbook_name or None,
        statuses=views.learning_statuses(req.status_filter) or (LearningStatus.CURRENT,),
        approvals=_served_approvals(core, org_id, req.playbook_status_filter),
        tags=tuple(req.tags) if req.tags else None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    hits = _run_single(
        core, org_id, f, req.query, req.top_k or 10, req.threshold, SearchMode(req.search_mode)
    )
    return SearchAgentPlaybooksViewResponse(
        success=True, agent_playbooks=[views.agent_playbook_view(r, s) for r, s in hits]
    )
