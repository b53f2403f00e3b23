"""A search result renders as a prompt block whose attribution matches its text exactly."""

from __future__ import annotations

import pytest

from reflexio.models import (
    AgentPlaybookView,
    ProfileView,
    RetrievedLearning,
    UnifiedSearchViewResponse,
    UserPlaybookView,
    estimate_tokens,
    rule_line,
)


def profile(profile_id: str, content: str, score: float | None) -> ProfileView:
    return ProfileView(
        profile_id=profile_id, user_id="u", content=content, last_modified_timestamp=1,
        generated_from_request_id="r", score=score,
    )  # fmt: skip


def agent_rule(rule_id: int, trigger: str | None, content: str, score: float | None) -> AgentPlaybookView:
    return AgentPlaybookView(
        agent_playbook_id=rule_id, agent_version="v", trigger=trigger, content=content, score=score
    )


def user_rule(rule_id: int, trigger: str | None, content: str, score: float | None) -> UserPlaybookView:
    return UserPlaybookView(
        user_playbook_id=rule_id, agent_version="v", request_id="r", trigger=trigger,
        content=content, score=score,
    )  # fmt: skip


def context() -> UnifiedSearchViewResponse:
    return UnifiedSearchViewResponse(
        success=True,
        profiles=[profile("p-tea", "Prefers tea over coffee.", 0.9)],
        agent_playbooks=[agent_rule(7, "the user asks for a laptop", "ask about budget first", 0.8)],
        user_playbooks=[user_rule(3, None, "Answer in French.", 0.95)],
    )


def refs(*pairs: tuple[str, str]) -> list[RetrievedLearning]:
    return [
        RetrievedLearning.model_validate({"kind": kind, "learning_id": learning_id})
        for kind, learning_id in pairs
    ]


def test_estimate_tokens_is_ceil_of_quarter_length() -> None:
    assert [estimate_tokens(text) for text in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_renders_rules_and_facts_with_matching_attribution() -> None:
    block = context().to_prompt()
    assert block.text == (
        "Rules to follow:\n"
        "- Answer in French.\n"
        "- When the user asks for a laptop: ask about budget first\n"
        "\n"
        "Facts about the user:\n"
        "- Prefers tea over coffee."
    )
    assert block.retrieved_learnings == refs(
        ("user_playbook", "3"), ("agent_playbook", "7"), ("profile", "p-tea")
    )
    assert block.tokens == estimate_tokens(block.text)


def test_budget_keeps_the_best_scored_items_whole() -> None:
    full = context().to_prompt()
    block = context().to_prompt(max_tokens=full.tokens - 1)
    # The lowest-scored item (the agent rule, 0.8) is the one dropped, entirely.
    assert block.retrieved_learnings == refs(("user_playbook", "3"), ("profile", "p-tea"))
    assert "laptop" not in block.text
    assert block.tokens <= full.tokens - 1


def test_a_skipped_large_item_does_not_stop_smaller_ones() -> None:
    search = UnifiedSearchViewResponse(
        success=True,
        profiles=[profile("big", "x" * 400, 0.99), profile("small", "likes cats", 0.5)],
    )
    block = search.to_prompt(max_tokens=20)
    assert block.retrieved_learnings == refs(("profile", "small"))
    assert block.tokens <= 20


def test_attribution_always_matches_the_text() -> None:
    for budget in range(context().to_prompt().tokens + 2):
        block = context().to_prompt(max_tokens=budget)
        assert block.tokens <= budget
        lines = [line for line in block.text.splitlines() if line.startswith("- ")]
        assert len(block.retrieved_learnings) == len(lines)


def test_zero_budget_and_empty_results_give_an_empty_block() -> None:
    assert context().to_prompt(max_tokens=0).retrieved_learnings == []
    empty = UnifiedSearchViewResponse(success=True).to_prompt()
    assert (empty.text, empty.retrieved_learnings, empty.tokens) == ("", [], 0)


def test_unscored_items_come_after_scored_ones() -> None:
    search = UnifiedSearchViewResponse(
        success=True,
        agent_playbooks=[agent_rule(1, None, "unscored rule", None)],
        profiles=[profile("p", "scored fact", 0.1)],
    )
    budget = estimate_tokens("Facts about the user:\n- scored fact")
    assert search.to_prompt(max_tokens=budget).retrieved_learnings == refs(("profile", "p"))


def test_items_without_text_are_neither_rendered_nor_attributed() -> None:
    search = UnifiedSearchViewResponse(success=True, user_playbooks=[user_rule(5, None, "   ", 0.9)])
    assert search.to_prompt().retrieved_learnings == []


def test_multiline_content_renders_on_one_line() -> None:
    search = UnifiedSearchViewResponse(success=True, profiles=[profile("p", "Works at\n  Acme", 0.5)])
    assert search.to_prompt().text.endswith("- Works at Acme")


def test_negative_budget_is_an_error() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        context().to_prompt(max_tokens=-1)


@pytest.mark.parametrize(
    ("trigger", "line"),
    [
        ("the user asks for a laptop", "When the user asks for a laptop: do it"),
        ("When the user asks: what to pack", "When the user asks: what to pack: do it"),
        ("when a fix is reported as done", "When a fix is reported as done: do it"),
        ("Before restarting any server", "Before restarting any server: do it"),
        ("If the build fails", "If the build fails: do it"),
        ("In conversations with this user", "In conversations with this user: do it"),
        ("Whenever, asked about refunds", "Whenever, asked about refunds: do it"),
        ("  ", "do it"),
    ],
)
def test_a_trigger_that_opens_its_own_clause_gets_no_second_when(trigger: str, line: str) -> None:
    assert rule_line(trigger, "do it") == line
