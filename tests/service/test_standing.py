"""Standing preferences: marked when learned, served for every query of their user, replaced whole."""

from __future__ import annotations

from reflexio.filters import LearningFilter
from reflexio.jobs import Worker
from reflexio.learn.llm_schemas import ExtractOutput
from reflexio.models import (
    AddUserProfileRequest,
    FinalizeSessionRequest,
    InteractionData,
    PublishUserInteractionRequest,
    UnifiedSearchRequest,
    UserProfile,
)
from reflexio.models.prompt import STANDING_TAG
from reflexio.records import LearningStatus
from reflexio.service import profiles, search
from reflexio.service import publish as pub
from reflexio.service.core import Core
from reflexio.service.workers import handlers
from reflexio.testing import ScriptedLLM

QUERY = "Remind me about the quarterly review."


def add_profile(
    core: Core, profile_id: str, content: str, user: str = "u1", tags: list[str] | None = None
) -> None:
    profile = UserProfile(
        profile_id=profile_id,
        user_id=user,
        content=content,
        last_modified_timestamp=1_700_000_000,
        generated_from_request_id="manual",
        tags=tags,
    )
    profiles.add_user_profiles(core, "o", AddUserProfileRequest(user_profiles=[profile]))


def find(core: Core, user: str = "u1", **extra: object) -> dict[str, float]:
    found = search.search(core, "o", UnifiedSearchRequest(query=QUERY, user_id=user, **extra))
    scores = {p.content: p.score or 0.0 for p in found.profiles}
    return scores | {p.content: p.score or 0.0 for p in found.user_playbooks}


def converse(core: Core, user: str, turns: list[tuple[str, str]], session: str = "s1") -> None:
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=session,
        agent_version="assistant@1",
        interaction_data_list=[InteractionData(role=role, content=text) for role, text in turns],
    )
    pub.publish(core, "o", req)
    pub.finalize_session(core, "o", FinalizeSessionRequest(user_id=user, session_id=session))
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


def test_a_standing_learning_is_served_whatever_the_query_and_scored_by_its_relevance(core: Core) -> None:
    add_profile(core, "tz", "Wants times in JST", tags=[STANDING_TAG])
    add_profile(core, "laptop", "Only ever uses Linux")
    add_profile(core, "other", "Wants answers in French", user="u2", tags=[STANDING_TAG])
    served = find(core)
    assert list(served) == ["Wants times in JST"]  # nothing else matches the query
    assert 0.0 <= served["Wants times in JST"] < search.DEFAULT_THRESHOLD  # its honest relevance
    assert list(find(core, user="u2")) == ["Wants answers in French"]
    assert find(core, tags=["work"]) == {}  # a tag filter serves only the tags asked for


def test_full_text_search_serves_standing_learnings_that_share_no_word_with_the_query(core: Core) -> None:
    add_profile(core, "tz", "Wants times in JST", tags=[STANDING_TAG])
    assert find(core, search_mode="fts") == {"Wants times in JST": 0.0}  # no word matches: relevance 0


def test_session_dedup_and_the_token_budget_apply_to_standing_learnings(core: Core) -> None:
    add_profile(core, "tz", "Wants times in JST", tags=[STANDING_TAG])
    add_profile(core, "review", "Leads the quarterly review with the finance team every quarter")
    assert set(find(core, session_id="chat")) == {
        "Wants times in JST",
        "Leads the quarterly review with the finance team every quarter",
    }
    assert find(core, session_id="chat") == {}  # served once per session, like any learning
    assert list(find(core, max_tokens=6)) == ["Wants times in JST"]  # first in the budget


def test_a_standing_preference_told_to_the_agent_is_served_in_a_later_session(core: Core) -> None:
    converse(
        core,
        "u1",
        [
            ("User", "When is my call with the Osaka team?"),
            ("Assistant", "Your call is at 02:00 UTC on Thursday."),
            ("User", "Please always give me times in JST."),
        ],
    )
    served = find(core, session_id="s2")
    assert any("JST" in text for text in served), served
    rows = core.storage.list_learnings("o", LearningFilter(user_id="u1"), limit=10)
    assert all(STANDING_TAG in r.tags for r in rows if "JST" in r.content)


def test_a_new_value_of_a_standing_preference_retires_the_old_one_without_shared_words(core: Core) -> None:
    converse(
        core, "u1", [("User", "What's the forecast?"), ("Assistant", "75°F."), ("User", "I prefer Celsius.")]
    )
    converse(
        core,
        "u1",
        [
            ("User", "And tomorrow?"),
            ("Assistant", "20°C."),
            ("User", "Fahrenheit from now on, I moved to Texas."),
        ],
        session="s2",
    )
    current = core.storage.list_learnings(
        "o", LearningFilter(user_id="u1", statuses=(LearningStatus.CURRENT,)), limit=10
    )
    texts = " | ".join(r.content for r in current).lower()
    assert "fahrenheit" in texts and "celsius" not in texts, texts


def test_the_llm_extractor_marks_what_it_calls_standing(core: Core) -> None:
    output = {
        "profiles": [{"content": "Wants answers in Spanish", "type": "preference", "standing": True}],
        "playbooks": [],
    }
    ExtractOutput.model_validate(output)
    core.llm = ScriptedLLM().on("extract", output).on("evaluate_session", {"is_success": True})
    converse(
        core, "u1", [("User", "Hola"), ("Assistant", "Hello!"), ("User", "Please always answer in Spanish.")]
    )
    [row] = core.storage.list_learnings("o", LearningFilter(user_id="u1"), limit=10)
    assert row.tags == [STANDING_TAG]
    assert core.llm.calls[0].call.version == "1.1.0"
