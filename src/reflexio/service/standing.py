"""Standing learnings in search: a user's preferences that apply to every answer.

A learning tagged ``STANDING_TAG`` (language, units, time zone, length, tone, format,
accessibility; see ``learn.standing``) is served for any query of its user, not only for
queries that share its words: after the kind's ``top_k`` hits, at most ``STANDING_LIMIT`` per
kind (the most relevant when there are more), once per session like any learning, and first
when a token budget cuts. Its score is its real relevance to the query, computed as for any
hit: the tag, not the score, is why it is served.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from reflexio import ranking
from reflexio.filters import Candidate, CandidateQuery, LearningFilter
from reflexio.filters import SearchMode as StoreMode
from reflexio.models import UnifiedSearchRequest
from reflexio.models.prompt import STANDING_TAG
from reflexio.records import Learning, LearningKind, Vector
from reflexio.storage import Storage

__all__ = ["STANDING_LIMIT", "Wanted", "add_standing", "scope"]

#: Standing learnings served per kind beyond ``top_k`` (the most relevant when a user has more).
STANDING_LIMIT = 5

Hits = list[list[tuple[Learning, float]]]
_AGENT = LearningKind.AGENT_PLAYBOOK


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the search asked for, as far as standing learnings care."""

    text: str
    vector: Vector | None
    embed_model: str
    top_k: int
    exclude: frozenset[tuple[str, str]]
    weights: ranking.FusionWeights


def scope(f: LearningFilter, req: UnifiedSearchRequest) -> LearningFilter | None:
    """The user's standing learnings of a user-scoped kind, in the same scope as its search.

    None for agent playbooks (agent-wide, no one user's standing) and when the caller filters
    by tags (then only the tags asked for are served).
    """
    if req.tags or f.user_id is None or _AGENT in (f.kinds or ()):
        return None
    return replace(f, tags=(STANDING_TAG,))


def add_standing(
    storage: Storage,
    org_id: str,
    scopes: Sequence[LearningFilter | None],
    hits: Hits,
    wanted: Wanted,
    score: Callable[[Candidate], float],
) -> tuple[Hits, set[int]]:
    """Add to each kind's hits its standing learnings that the query did not bring.

    The lookup is a candidate search of the standing scopes with no floor, so each comes back
    scored by ``score`` as any hit is; without a query vector (full-text mode, or the embedder
    is down) the full-text arm cannot find what shares no word with the query, so they are read
    by scope instead.

    Returns:
        The hits, and the ids of every standing learning among them (first in a budget).
    """
    found = _found(storage, org_id, scopes, wanted, score)
    out: Hits = []
    for group, extra in zip(hits, found, strict=True):
        served = {row.id for row, _ in group}
        fresh = [
            (r, s) for r, s in extra if r.id not in served and (r.kind.value, r.wire_id) not in wanted.exclude
        ]
        out.append([*group, *sorted(fresh, key=lambda pair: -pair[1])[:STANDING_LIMIT]])
    ids = {row.id for group in out for row, _ in group if STANDING_TAG in row.tags and row.kind is not _AGENT}
    return out, ids


def _found(
    storage: Storage,
    org_id: str,
    scopes: Sequence[LearningFilter | None],
    wanted: Wanted,
    score: Callable[[Candidate], float],
) -> Hits:
    """Per filter: its standing learnings with their relevance (none without a standing scope)."""
    chosen = [(i, f) for i, f in enumerate(scopes) if f is not None]
    found: Hits = [[] for _ in scopes]
    if wanted.vector is None:
        for i, f in chosen:
            # get_learnings (by id) rather than list_learnings: ordering by updated_at makes SQLite
            # walk the whole org when the user has none (165 ms at 10k learnings per kind).
            newest = sorted(storage.get_learnings(org_id, f), key=lambda r: (-r.updated_at, -r.id))
            rows = newest[: STANDING_LIMIT + len(wanted.exclude)]
            scores = _full_text(storage, org_id, rows, wanted, score)
            found[i] = [(r, scores.get(r.id, 0.0)) for r in rows]
        return found
    query = CandidateQuery(
        filters=tuple(f for _, f in chosen),
        text=wanted.text,
        vector=wanted.vector,
        embed_model=wanted.embed_model,
        limit=STANDING_LIMIT + wanted.top_k + len(wanted.exclude),
        mode=StoreMode.HYBRID,
        weights=wanted.weights,
    )
    for c in storage.search_candidates(org_id, query):
        found[chosen[c.filter_index][0]].append((c.learning, round(score(c), 6)))
    return found


def _full_text(
    storage: Storage,
    org_id: str,
    rows: Sequence[Learning],
    wanted: Wanted,
    score: Callable[[Candidate], float],
) -> dict[int, float]:
    """Each row's full-text relevance to the query (0 when it shares no word with it)."""
    if not rows:
        return {}
    query = CandidateQuery(
        filters=(LearningFilter(ids=tuple(r.id for r in rows)),),
        text=wanted.text,
        limit=len(rows),
        mode=StoreMode.FTS,
        weights=wanted.weights,
    )
    return {c.learning.id: round(score(c), 6) for c in storage.search_candidates(org_id, query)}
