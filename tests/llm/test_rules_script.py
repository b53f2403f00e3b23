"""rules_script(): the rule extractor behind the LLM seam, for the loop simulator."""

from __future__ import annotations

import pytest

from reflexio.learn.llm_extract import window_learner
from reflexio.learn.reformulate import rewrite_query
from reflexio.models.api_search import ConversationTurn
from reflexio.models.org_config import Config
from reflexio.records import InteractionRecord, RequestRecord
from reflexio.storage import Storage
from reflexio.testing import rules_script
from tests.llm.support import turn, window

pytest.importorskip("reflexio.learn.rules")

CORRECTION = (
    turn(1, "User", "Restart the staging web server."),
    turn(2, "Assistant", "Restarted staging-web-1 and staging-web-2."),
    turn(3, "User", "Please ask me before you take any action on servers."),
)


def stored(storage: Storage, *turns: InteractionRecord) -> tuple[InteractionRecord, ...]:
    request = RequestRecord(org_id="o", request_id="r1", user_id="u1", session_id="s1")
    return tuple(storage.insert_request(request, turns))


def test_a_correction_is_learned_through_one_scripted_extraction_call(memory_storage: Storage) -> None:
    storage = memory_storage
    turns = stored(storage, *CORRECTION)
    llm = rules_script()
    changes = window_learner(storage, Config(), llm)(window(*turns))
    assert [c.prompt for c in llm.calls] == ["extract"]
    assert changes.added and all(row.source_interaction_ids for row in changes.added)
    assert any("ask" in row.content.lower() for row in changes.added)


def test_quiet_windows_cost_no_call(memory_storage: Storage) -> None:
    storage = memory_storage
    turns = stored(storage, turn(1, "User", "Update the README badge URL."), turn(2, "Assistant", "Done."))
    llm = rules_script()
    assert not window_learner(storage, Config(), llm)(window(*turns))
    assert llm.calls == []


def test_the_other_prompts_are_scripted_too() -> None:
    llm = rules_script()
    history = [ConversationTurn(role="user", content="hello")]
    assert rewrite_query(llm, "and the other one?", history) == "and the other one?"
