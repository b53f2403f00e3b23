"""What the offline extractor missed before issue 15: corrected facts, reversed and terse
preferences, success recipes, compound facts half superseded, standing preferences.

Each case runs the real pipeline (proposer, judge, ``learn_window``, ``apply_changes``) on the
memory backend, so the assertions are about the learnings a user ends up with.
"""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.embed import Embedder
from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.learn.changes import apply_changes
from reflexio.learn.pipeline import learn_window
from reflexio.learn.rules import RuleJudge, RuleProposer
from reflexio.learn.rules.signals import read_message
from reflexio.learn.standing import STANDING_TAG
from reflexio.learn.windows import Window
from reflexio.models.org_config import Config
from reflexio.records import Audit, InteractionRecord, Learning, LearningKind, LearningStatus, RequestRecord
from reflexio.storage import Storage, open_storage

PROFILE, PLAYBOOK = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK


@pytest.fixture
def store(embedder: Embedder) -> Storage:
    return open_storage("memory://", embedder)


def turn(role: str, content: str, **extra: Any) -> InteractionRecord:
    return InteractionRecord(
        org_id="o", request_id="r1", user_id="u", session_id="s", role=role, content=content, **extra
    )


def learn(
    store: Storage, *turns: InteractionRecord, known: tuple[tuple[LearningKind, str], ...] = ()
) -> list[Learning]:
    """Seed ``known`` learnings, learn from the turns, return the user's current learnings."""
    seeded = [
        Learning(
            org_id="o",
            kind=kind,
            user_id="u",
            content=text,
            playbook_name="playbook" if kind is PLAYBOOK else "",
        )
        for kind, text in known
    ]
    if seeded:
        store.save_learnings(seeded, Audit(actor="test"))
    request = RequestRecord(org_id="o", request_id="r1", user_id="u", session_id="s", agent_version="v1")
    with store.transaction() as tx:
        tx.insert_request(request, list(turns))
    stored = store.list_interactions("o", InteractionFilter(user_id="u"))
    window = Window("o", "u", ("profile", "playbook"), tuple(stored), 0)
    changes = learn_window(store, Config(), window, RuleProposer(), RuleJudge())
    with store.transaction() as tx:
        apply_changes(tx, "o", changes, Audit(actor="test"))
    return store.list_learnings(
        "o", LearningFilter(user_id="u", statuses=(LearningStatus.CURRENT,)), limit=50
    )


def texts(rows: list[Learning], kind: LearningKind | None = None) -> list[str]:
    return [f"{r.trigger or ''} {r.content}".strip() for r in rows if kind is None or r.kind is kind]


def test_a_factual_correction_of_the_agent_becomes_a_rule_with_the_corrected_fact(store: Storage) -> None:
    rows = learn(
        store,
        turn("User", "How long is the return window on jackets?"),
        turn("Assistant", "Jackets can be returned within 60 days."),
        turn("User", "Not right. Jackets are returnable for 14 days only, and only unworn."),
    )
    rules = texts(rows, PLAYBOOK)
    assert any("14 days" in r and "unworn" in r for r in rules), rules
    assert texts(rows, PROFILE) == []  # not "Wants unworn only"


def test_a_statement_about_what_the_answer_was_about_corrects_it_without_a_cue(store: Storage) -> None:
    rows = learn(
        store,
        turn("User", "Which time zone is the Phoenix office in?"),
        turn("Assistant", "Phoenix follows Pacific Time."),
        turn("User", "Phoenix stays on Mountain Standard Time all year."),
    )
    assert any("mountain standard time" in r.lower() for r in texts(rows, PLAYBOOK)), texts(rows)


def test_a_complaint_is_not_a_corrected_fact(store: Storage) -> None:
    rows = learn(
        store,
        turn("User", "Summarise the memo."),
        turn("Assistant", "The memo says budgets are frozen."),
        turn("User", "That is useless and wrong."),
    )
    assert rows == []


@pytest.mark.parametrize(
    ("old", "said", "new", "gone"),
    [
        ("Prefers metric units", "Actually I prefer imperial units now.", "imperial", "metric"),
        ("Prefers email over phone calls", "I prefer phone calls over email.", "phone", "email over"),
        ("Prefers aisle seats", "Changed my mind, window seats from now on.", "window", "aisle"),
        ("Uses Windows", "I switched to a Mac last month.", "mac", "windows"),
        ("Drinks coffee", "I quit coffee, I only drink tea now.", "tea", "drinks coffee"),
    ],
)
def test_a_reversed_preference_supersedes_the_old_one(
    store: Storage, old: str, said: str, new: str, gone: str
) -> None:
    rows = learn(
        store,
        turn("User", "Help me plan."),
        turn("Assistant", "Sure."),
        turn("User", said),
        known=((PROFILE, old),),
    )
    current = " | ".join(texts(rows)).lower()
    assert new in current and gone not in current, current


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Japan time, please.", "japan time"),
        ("Kilometres please.", "kilometres"),
        ("Shorter, please.", "shorter answers"),
        ("En español, por favor.", "spanish"),
        ("Numbered list, please.", "numbered list"),
    ],
)
def test_a_terse_preference_is_learned_and_standing(store: Storage, said: str, expected: str) -> None:
    rows = learn(
        store, turn("User", "When is the review?"), turn("Assistant", "At 09:00 UTC."), turn("User", said)
    )
    [row] = rows
    assert expected in row.content.lower() and STANDING_TAG in row.tags


@pytest.mark.parametrize("said", ["Thanks!", "The blue one.", "Perfect.", "Ugh, a middle seat.", "Tuesday."])
def test_acknowledgements_and_choices_are_not_preferences(store: Storage, said: str) -> None:
    rows = learn(store, turn("User", "Which one?"), turn("Assistant", "Blue or red?"), turn("User", said))
    assert rows == []


def test_a_confirmed_fix_after_tool_calls_becomes_a_recipe(store: Storage) -> None:
    fixed = turn(
        "Assistant",
        "I cleared the DNS cache and restarted the resolver.",
        tools_used=[
            {"tool_name": "shell.run", "tool_data": {"cmd": "resolvectl flush-caches"}, "status": "success"},
            {"tool_name": "service.restart", "tool_data": {"name": "systemd-resolved"}, "status": "ok"},
        ],
    )
    rows = learn(
        store,
        turn("User", "My laptop can't resolve internal hostnames."),
        fixed,
        turn("User", "Works again, brilliant!"),
    )
    [rule] = texts(rows, PLAYBOOK)
    assert "flush-caches" in rule and "service.restart" in rule and "internal hostnames" in rule


def test_thanks_after_an_ordinary_task_is_no_recipe(store: Storage) -> None:
    booked = turn(
        "Assistant",
        "Booked for 8pm.",
        tools_used=[{"tool_name": "booking.create", "tool_data": {}, "status": "ok"}],
    )
    assert (
        learn(store, turn("User", "Book a table for two at 8."), booked, turn("User", "Great, thank you."))
        == []
    )


def test_superseding_one_fact_of_a_compound_profile_keeps_the_others(store: Storage) -> None:
    rows = learn(
        store,
        turn("User", "Any meetups near me?"),
        turn("Assistant", "There's one in Oslo."),
        turn("User", "I live in Bergen now."),
        known=((PROFILE, "Lives in Oslo; works as a data engineer"),),
    )
    current = sorted(texts(rows))
    assert any("Bergen" in t for t in current) and any(t == "Works as a data engineer" for t in current), (
        current
    )
    assert not any("Oslo" in t for t in current)


def test_a_standing_preference_given_another_value_supersedes_across_kinds(store: Storage) -> None:
    rows = learn(
        store,
        turn("User", "What's the forecast?"),
        turn("Assistant", "75°F and sunny."),
        turn("User", "Celsius, please."),
        known=((PLAYBOOK, "Always give temperatures in Fahrenheit"),),
    )
    current = " | ".join(texts(rows)).lower()
    assert "celsius" in current and "fahrenheit" not in current, current


def test_a_sentence_is_split_where_a_new_clause_starts() -> None:
    reading = read_message("Light mode actually, dark mode hurts my eyes lately.", reacting=True)
    assert [s.text for s in reading.signals] == ["wants light mode"]
    reading = read_message("Mornings don't work for me any more, afternoons are better now.", reacting=True)
    assert [s.text for s in reading.signals] == ["does not want mornings", "prefers afternoons"]
