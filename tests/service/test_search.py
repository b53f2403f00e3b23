"""Retrieval behaviour on every backend: thresholds, scores, approval, session dedup, budgets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest

from reflexio import ranking
from reflexio.config import Settings
from reflexio.embed import EmbedderUnavailable
from reflexio.filters import CandidateQuery, LearningFilter
from reflexio.models import ConversationTurn, PlaybookStatus, SearchMode, UnifiedSearchRequest
from reflexio.records import Approval, Audit, Learning, LearningKind, LearningStatus
from reflexio.service import search
from reflexio.service.core import Core, open_core
from reflexio.testing import ScriptedLLM
from tests.conftest import SEARCH_BACKENDS, search_index_mb, storage_url

P, U, A = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK, LearningKind.AGENT_PLAYBOOK


@pytest.fixture(params=SEARCH_BACKENDS)  # PostgreSQL also with every search in SQL
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    budget = str(search_index_mb(request.param))
    env = {"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path), "REFLEXIO_SEARCH_INDEX_MB": budget}
    c = open_core(Settings.from_env(env))
    c.storage.save_learnings(
        [
            Learning(
                org_id="o",
                kind=P,
                user_id="u1",
                content="Only uses Linux; does not want Mac laptops suggested",
            ),
            Learning(org_id="o", kind=P, user_id="u1", content="Keeps bees on the roof"),
            Learning(org_id="o", kind=P, user_id="u2", content="Uses Windows laptops at work"),
            Learning(
                org_id="o",
                kind=U,
                user_id="u1",
                agent_version="v1",
                trigger="recommending laptops",
                content="List Linux-friendly laptops first",
            ),
            Learning(
                org_id="o",
                kind=A,
                agent_version="v1",
                trigger="laptop recommendations",
                content="Ask about the operating system before recommending a laptop",
                approval=Approval.APPROVED,
            ),
            Learning(
                org_id="o",
                kind=A,
                agent_version="v1",
                trigger="laptop recommendations",
                content="Always recommend the most expensive laptop",
                approval=Approval.REJECTED,
            ),
            Learning(
                org_id="o",
                kind=A,
                agent_version="v1",
                trigger="laptop recommendations",
                content="Mention laptop warranty options",
                approval=Approval.PENDING,
            ),
            Learning(
                org_id="o",
                kind=P,
                user_id="u1",
                content="Used to prefer macOS laptops",
                status=LearningStatus.SUPERSEDED,
            ),
        ],
        Audit(),
    )
    yield c
    c.close()


def ask(core: Core, query: str = "Which laptop should I buy?", **kw: Any) -> Any:
    kw.setdefault("user_id", "u1")
    kw.setdefault("agent_version", "v1")
    return search.search(core, "o", UnifiedSearchRequest(query=query, **kw))


def everything(result: Any) -> list[Any]:
    return [*result.profiles, *result.user_playbooks, *result.agent_playbooks]


def test_every_result_has_a_score_and_the_threshold_holds(core: Core) -> None:
    loose = everything(ask(core, threshold=0.0))
    assert loose and all(v.score is not None for v in loose)
    strict = everything(ask(core, threshold=0.3))
    assert all(v.score >= 0.3 for v in strict)
    assert len(strict) < len(loose)
    assert everything(ask(core, threshold=1.0)) == []


def test_scope_status_and_approval_are_filtered_before_ranking(core: Core) -> None:
    result = ask(
        core, threshold=0.0, agent_playbook_status_filter=[PlaybookStatus.APPROVED, PlaybookStatus.REJECTED]
    )
    texts = [v.content for v in everything(result)]
    assert "Always recommend the most expensive laptop" not in texts  # rejected is never served
    assert "Mention laptop warranty options" not in texts  # pending was not asked for
    assert "Uses Windows laptops at work" not in texts  # another user's profile
    assert "Used to prefer macOS laptops" not in texts  # a tombstone
    default = [v.content for v in everything(ask(core, threshold=0.0))]
    assert "Mention laptop warranty options" in default  # approved + pending by default


def test_a_session_is_not_served_the_same_learning_twice_unless_asked(core: Core) -> None:
    first = {v.content for v in everything(ask(core, threshold=0.0, session_id="s1"))}
    again = {v.content for v in everything(ask(core, threshold=0.0, session_id="s1"))}
    assert first and not (first & again)
    repeated = {
        v.content for v in everything(ask(core, threshold=0.0, session_id="s1", include_already_served=True))
    }
    assert first <= repeated


def test_a_token_budget_keeps_the_best_learnings_that_fit(core: Core) -> None:
    full = everything(ask(core, threshold=0.0))
    budget = everything(ask(core, threshold=0.0, max_tokens=30))
    assert 0 < len(budget) < len(full)
    assert sum(len(v.content) for v in budget) <= 30 * 4 + 40 * len(budget)
    assert max(v.score for v in budget) == max(v.score for v in full)


def test_top_k_applies_per_kind(core: Core) -> None:
    result = ask(core, threshold=0.0, top_k=1)
    assert len(result.profiles) <= 1 and len(result.agent_playbooks) <= 1 and len(result.user_playbooks) <= 1


def test_a_strong_hit_lifts_what_was_learned_with_it(core: Core) -> None:
    """Siblings of the best hit (same request) outrank strangers that match a little better."""
    core.storage.save_learnings(
        [
            Learning(
                org_id="o", kind=P, user_id="u3", content="Training for a marathon in Berlin", request_id="r1"
            ),
            Learning(
                org_id="o", kind=P, user_id="u3", content="Recovering from a shoulder injury", request_id="r1"
            ),
            Learning(
                org_id="o", kind=P, user_id="u3", content="Recovering from a knee injury", request_id="r2"
            ),
        ],
        Audit(),
    )

    def order(cohesion: float) -> list[str]:
        where = LearningFilter(kinds=(P,), user_id="u3")
        plan = search.Plan(
            text="marathon training injury", filters=(where,), top_k=3, threshold=0.0, cohesion=cohesion
        )
        return [row.content for row, _ in search.rank(core, "o", plan).hits[0]]

    default = search.Plan.__dataclass_fields__["cohesion"].default
    assert isinstance(default, float)
    lifted = order(default)
    assert lifted[0] == "Training for a marathon in Berlin"
    # On its own words the stranger (a knee, for a marathon) matches better ...
    plain = order(0.0)
    assert plain.index("Recovering from a knee injury") < plain.index("Recovering from a shoulder injury")
    # ... but the injury learned together with the marathon comes first.
    assert lifted.index("Recovering from a shoulder injury") < lifted.index("Recovering from a knee injury")


def test_a_paraphrase_the_vector_arm_ranks_first_beats_rows_sharing_a_common_word(core: Core) -> None:
    """Rows that share only the query's common words ("person", "plane") with it must not bury
    the fact that answers it in other words (issue 19; bench/needle measures it at scale)."""
    haystack = [
        f"The user describes themselves as a {trait} person" for trait in ("people", "creative", "practical")
    ] + [
        f"The user likes to read {genre} books on the plane to {city}"
        for genre in ("mystery", "fantasy", "history")
        for city in ("Berlin", "Lisbon", "Tokyo", "Madrid", "Oslo", "Rome", "Dublin", "Vienna")
    ]
    fact = "The user is terrified of flying"
    rows = [Learning(org_id="o", kind=P, user_id="u7", content=c) for c in [fact, *haystack]]
    core.storage.save_learnings(rows, Audit())
    where = LearningFilter(kinds=(P,), user_id="u7")

    def ranked(mode: str) -> list[str]:
        plan = search.Plan(
            text="Is this person scared to get on a plane?",
            filters=(where,),
            top_k=5,
            threshold=search.DEFAULT_THRESHOLD,
            mode=SearchMode(mode),
        )
        return [row.content for row, _ in search.rank(core, "o", plan).hits[0]]

    assert ranked("vector")[0] == fact
    assert fact not in ranked("fts")  # it shares no word with the question
    assert fact in ranked("hybrid")[:2]


def _at_cosine(toward: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector whose cosine with the unit vector ``toward`` is ``cosine``."""
    other = rng.standard_normal(size=toward.shape)
    other -= float(np.dot(other, toward)) * toward
    other /= np.linalg.norm(other)
    return np.asarray(cosine * toward + np.sqrt(1 - cosine**2) * other, dtype=np.float32)


def test_the_vector_arms_first_hit_is_served_first_though_rows_matching_two_words_score_more(
    core: Core,
) -> None:
    """The needle that score fusion alone lost (bench/needle's "noise"): the vector arm ranks
    the fact first by a small margin, while seven rows that hold two of the question's words
    (the scope's best full-text matches) are nearly as close in meaning and fuse higher."""
    question = "Would a noisy rock concert bother them?"
    toward = core.embedder.embed([question], kind="query")[0]
    toward = toward / np.linalg.norm(toward)
    rng = np.random.default_rng(3)
    model = core.embedder.name
    fact = "The user can't stand loud music"

    def row(content: str, cosine: float) -> Learning:
        vector = _at_cosine(toward, cosine, rng)
        made = Learning(
            org_id="o", kind=P, user_id="u8", content=content, embedding=vector, embed_model=model
        )
        return made.copy(text_hash=made.computed_text_hash())  # its vector is current: kept

    concerts = [
        row(f"Took their sister to an indie rock concert in city {i}", 0.43 - i / 100) for i in range(7)
    ]
    others = [row(f"Finds the office too noisy on day {i}", 0.2) for i in range(30)]
    core.storage.save_learnings([row(fact, 0.45), *concerts, *others], Audit())
    where = LearningFilter(kinds=(P,), user_id="u8")

    def plan_of(mode: str) -> search.Plan:
        return search.Plan(text=question, filters=(where,), top_k=5, threshold=0.15, mode=SearchMode(mode))

    def ranked(mode: str) -> list[str]:
        return [row.content for row, _ in search.rank(core, "o", plan_of(mode)).hits[0]]

    assert ranked("vector")[0] == fact
    hybrid = ranked("hybrid")
    assert fact in hybrid[: ranking.LEADER_SLOTS]
    assert hybrid[0].startswith("Took their sister")  # the fused order is kept above it
    query = CandidateQuery(filters=(where,), text=question, vector=toward, embed_model=model, limit=40)
    fused = sorted(
        (
            (search._score(c, plan_of("hybrid")), c.learning.content)
            for c in core.storage.search_candidates("o", query)
        ),
        reverse=True,
    )
    assert [content for _, content in fused].index(fact) >= ranking.LEADER_SLOTS  # by score alone: buried


class _Down:
    name, dim = "down", 256

    def embed(self, texts: Any, *, kind: str = "document") -> np.ndarray:
        raise EmbedderUnavailable("the embedding service is down")


def test_a_failing_embedder_degrades_to_full_text(core: Core) -> None:
    core.embedder = _Down()
    result = ask(core, "linux laptop", threshold=0.0)
    assert result.degraded and result.search_mode_effective == "fts"
    assert any("Linux" in v.content for v in everything(result))


def test_reformulation_rewrites_the_query_from_the_conversation(core: Core) -> None:
    llm = ScriptedLLM().on("rewrite_query", {"query": "Which laptop suits a Linux user?"})
    core.llm = llm
    history = [
        ConversationTurn(role="user", content="I run Linux"),
        ConversationTurn(role="assistant", content="Noted"),
    ]
    result = ask(
        core, "which one then?", threshold=0.0, enable_reformulation=True, conversation_history=history
    )
    assert result.reformulated_query == "Which laptop suits a Linux user?"
    assert any("Linux" in v.content for v in everything(result))
    assert len(llm.calls) == 1
    assert core.storage.llm_usage("o").calls == 1
    plain = ask(core, "which one then?", threshold=0.0)
    assert plain.reformulated_query is None and len(llm.calls) == 1


class _Ask(TypedDict, total=False):
    """The knobs of a search this test varies."""

    threshold: float
    top_k: int


class _NoShortcuts:
    """The storage, asked for every candidate (no floor, no pool): the reference answer."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def search_candidates(self, org_id: str, query: Any) -> Any:
        return self._inner.search_candidates(org_id, replace(query, floor=None, pool=None))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_backends_may_drop_what_ranking_drops_without_changing_an_answer(core: Core) -> None:
    core.storage.save_learnings(
        [
            Learning(
                org_id="o",
                kind=A,
                agent_version="v1",
                trigger=f"laptop question {i}",
                content=f"For laptops, mention topic {i} of {' '.join(WORDS[i % 7 :][:3])}",
            )
            for i in range(40)
        ],
        Audit(),
    )
    # The ten best rules were served in session s9 already: the next one must still come,
    # though a backend may keep only the best few candidates per kind.
    best = ask(core, threshold=0.0, top_k=10, entity_types=["agent_playbooks"]).agent_playbooks
    assert len(best) == 10
    for session in ("s9", "s10"):  # a search adds to its session's exposures: one each
        core.storage.add_exposures("o", session, [("agent_playbook", str(v.agent_playbook_id)) for v in best])
    asks: list[_Ask] = [{"threshold": 0.0, "top_k": 2}, {"threshold": 0.2}, {"top_k": 1}]
    shortcut = [everything(ask(core, **kw)) for kw in asks[:2]] + [
        everything(ask(core, top_k=1, session_id="s9"))
    ]
    real = core.storage
    core.storage = _NoShortcuts(real)
    try:
        reference = [everything(ask(core, **kw)) for kw in asks[:2]]
        reference.append(everything(ask(core, top_k=1, session_id="s10")))
    finally:
        core.storage = real
    assert [[(v.content, v.score) for v in r] for r in shortcut] == [
        [(v.content, v.score) for v in r] for r in reference
    ]
    assert shortcut[2]


WORDS = ["battery", "screen", "keyboard", "weight", "price", "ports", "warranty", "linux", "fans", "hinge"]


def test_approval_required_serves_approved_agent_playbooks_only(core: Core) -> None:
    from reflexio.models import SearchAgentPlaybookRequest

    config = core.org_config("o").model_copy(update={"approval_required": True})
    core.storage.put_org_config("o", config.model_dump(mode="json"))
    core.forget_config("o")
    asked_for_pending = ask(core, threshold=0.0, agent_playbook_status_filter=[PlaybookStatus.PENDING])
    assert asked_for_pending.agent_playbooks == []
    served = [v.content for v in ask(core, threshold=0.0).agent_playbooks]
    assert served == ["Ask about the operating system before recommending a laptop"]
    one_kind = search.search_agent_playbooks(
        core, "o", SearchAgentPlaybookRequest(query="laptop", agent_version="v1", threshold=0.0)
    )
    assert [v.content for v in one_kind.agent_playbooks] == served
