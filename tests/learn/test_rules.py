"""The offline rule extractor through its seams: ``RuleProposer``, ``RuleJudge`` and ``learn_window``.

Windows are built from plain turns (roles as callers send them), judged against learnings that
exist, and finally run through the real pipeline on the memory backend, so supersede, keep and
update decisions are checked as stored rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from reflexio.embed import Embedder
from reflexio.filters import LearningFilter
from reflexio.learn import pipeline
from reflexio.learn.changes import Changes, apply_changes
from reflexio.learn.pipeline import Decision, LearnContext, Proposal, Verdict, learn_window
from reflexio.learn.rules import RuleJudge, RuleProposer
from reflexio.learn.windows import Window
from reflexio.models.org_config import Config
from reflexio.records import Audit, InteractionRecord, Learning, LearningKind, LearningStatus
from reflexio.storage import Storage

PROFILE, PLAYBOOK = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK
BOTH = (PROFILE, PLAYBOOK)


def turn(role: str, content: str = "", n: int = 0, **extra: Any) -> InteractionRecord:
    return InteractionRecord(
        org_id="o",
        request_id=extra.pop("request_id", "r1"),
        user_id="u",
        session_id=extra.pop("session_id", "s1"),
        id=n,
        role=role,
        content=content,
        **extra,
    )


def window(*turns: InteractionRecord, new_from: int = 0) -> Window:
    numbered = tuple(
        t if t.id else InteractionRecord(**{**_fields(t), "id": i + 1}) for i, t in enumerate(turns)
    )
    return Window("o", "u", ("profile", "playbook"), numbered, new_from)


def _fields(t: InteractionRecord) -> dict[str, Any]:
    return {name: getattr(t, name) for name in t.__dataclass_fields__}


def ctx(existing: dict[LearningKind, list[Learning]] | None = None) -> LearnContext:
    return LearnContext(config=Config(), existing=existing or {PROFILE: [], PLAYBOOK: []}, requests={})


def propose(
    w: Window, kinds: Sequence[LearningKind] = BOTH, context: LearnContext | None = None
) -> list[Proposal]:
    return RuleProposer().propose(w, kinds, context or ctx())


def learning(
    kind: LearningKind, content: str, trigger: str | None = None, n: int = 1, **extra: Any
) -> Learning:
    return Learning(org_id="o", kind=kind, user_id="u", content=content, trigger=trigger, id=n, **extra)


def decide(p: Proposal, *near: Learning) -> Decision:
    return RuleJudge().decide([p], [list(near)])[0]


# -- the proposer ------------------------------------------------------------------------------


def test_a_stated_fact_becomes_a_profile_with_its_taste_and_context() -> None:
    w = window(
        turn("User", "Recommend a laptop for me."),
        turn("Assistant", "The MacBook Air is a great all-round choice."),
        turn("User", "I only ever use Linux. Please don't suggest Macs."),
    )
    (p,) = propose(w)
    assert p.kind is PROFILE
    assert p.content == "Only ever uses Linux; does not want Macs suggested"
    assert p.custom_features == {"context": "Recommend a laptop for me."}
    assert p.source_interaction_ids == [1, 2, 3]
    assert p.ttl == "infinity"


def test_a_correction_becomes_a_playbook_triggered_by_the_corrected_request() -> None:
    w = window(
        turn("user", "Restart the staging web server."),
        turn("agent", "Restarted staging-web-1 and staging-web-2."),
        turn("USER", "Please ask me before you take any action on servers."),
    )
    (p,) = propose(w)
    assert p.kind is PLAYBOOK
    assert p.trigger == "When the user asks to restart the staging web server"
    assert p.content == "Ask the user for confirmation before you take any action on servers"
    assert p.pitfall == "The agent answered: Restarted staging-web-1 and staging-web-2."
    assert p.track == "correction"
    assert "ask me before" in (p.rationale or "")


@pytest.mark.parametrize(
    ("request_text", "trigger"),
    [
        ("I want a refund for my headphones.", "When the user wants a refund for their headphones"),
        (
            "The login endpoint returns 500, can you fix it?",
            "When the user asks to fix it: the login endpoint returns 500",
        ),
        (
            "Could you book me a table at Nopa for Friday?",
            "When the user asks to book them a table at Nopa for Friday",
        ),
        ("What's the best way to store basil?", "When the user asks: what's the best way to store basil"),
    ],
)
def test_triggers_are_situations_in_the_requests_words(request_text: str, trigger: str) -> None:
    w = window(
        turn("User", request_text),
        turn("Assistant", "Done."),
        turn("User", "Always double-check with me first."),
    )
    (p,) = propose(w)
    assert p.trigger == trigger


def test_only_new_turns_teach() -> None:
    w = window(
        turn("User", "I'm vegan."),
        turn("Assistant", "Noted."),
        turn("User", "Find me a ramen place near Shibuya."),
        new_from=2,
    )
    assert propose(w) == []


def test_a_reply_in_another_session_is_not_a_correction() -> None:
    w = window(
        turn("User", "Summarise the report."),
        turn("Assistant", "Here is the summary."),
        turn("User", "Check the invoices before the audit.", session_id="s2"),
        new_from=2,
    )
    assert propose(w) == []


def test_kinds_are_respected_and_tastes_become_rules_without_profiles() -> None:
    w = window(
        turn("User", "Recommend a laptop."),
        turn("Assistant", "The MacBook Air."),
        turn("User", "I only ever use Linux. Please don't suggest Macs."),
    )
    (rule,) = propose(w, kinds=[PLAYBOOK])
    assert rule.kind is PLAYBOOK and rule.content == "Do not suggest Macs"
    assert [p.kind for p in propose(w, kinds=[PROFILE])] == [PROFILE]


def test_fact_explaining_an_instruction_gets_no_request_context() -> None:
    w = window(
        turn("User", "Summarise my portfolio."),
        turn("Assistant", "Up 2% to $49,210."),
        turn("User", "Please give me the values in euros, not dollars. I live in Lyon."),
    )
    by_kind = {p.kind: p for p in propose(w)}
    assert by_kind[PLAYBOOK].content == "Give the user the values in euros"
    assert by_kind[PLAYBOOK].pitfall == "Dollars"
    assert by_kind[PROFILE].content == "Lives in Lyon"
    assert by_kind[PROFILE].custom_features is None


def test_team_convention_in_a_reply_is_a_rule() -> None:
    w = window(
        turn("User", "Write a helper that lists csv files."),
        turn("Assistant", "def csv_files(root): return [os.path.join(...)]"),
        turn("User", "We don't use os.path in this codebase. Use pathlib for anything touching files."),
    )
    (p,) = propose(w)
    assert p.kind is PLAYBOOK
    assert "pathlib" in p.content and "os.path" in p.content


def test_expert_answer_teaches_what_the_agent_left_out() -> None:
    w = window(
        turn("User", "What can I take for a tension headache?"),
        turn(
            "Assistant",
            "Ibuprofen usually helps with tension headaches.",
            expert_content=(
                "Ibuprofen usually helps with tension headaches. Take it with food to protect your stomach. "
                "Do not exceed 1,200 mg in 24 hours, and see a doctor if headaches last more than a week."
            ),
        ),
    )
    (p,) = propose(w)
    assert p.track == "expert"
    assert "with food" in p.content and "doctor" in p.content
    assert "usually helps" not in p.content
    assert p.trigger == "When the user asks: what can they take for a tension headache"


def test_expert_answer_that_only_rewords_teaches_nothing() -> None:
    w = window(
        turn("User", "When does the store open?"),
        turn("Assistant", "The store opens at 9am.", expert_content="Our store opens at 9 am."),
    )
    assert propose(w) == []


def test_expert_points_join_the_users_correction_of_the_same_answer() -> None:
    w = window(
        turn("User", "The login endpoint returns 500, can you fix it?"),
        turn(
            "Assistant",
            "I changed the handler; the issue is fixed.",
            expert_content="I updated the handler, then ran the targeted test and checked the server log. "
            "Not verified: the production config.",
        ),
        turn(
            "User", "Did you actually run the test? Run it and check the server log before claiming it works."
        ),
    )
    (p,) = propose(w)
    assert p.content.startswith("Run the test and check the server log before claiming it works")
    assert "production config" in p.content


def tool(name: str, status: str, **data: Any) -> dict[str, Any]:
    return {"tool_name": name, "tool_data": data, "status": status}


def test_failed_tool_call_fixed_by_other_arguments() -> None:
    calls = [
        tool(
            "hotels.search",
            "failed",
            checkin="12/06",
            city="Lisbon",
            error="invalid date format, expected YYYY-MM-DD",
        ),
        tool("hotels.search", "ok", checkin="2025-06-12", city="Lisbon"),
    ]
    w = window(
        turn("User", "Find me a hotel in Lisbon from June 12."),
        turn("Assistant", "Found one.", tools_used=calls),
    )
    (p,) = propose(w)
    assert p.track == "tool_failure"
    assert p.content.startswith("Call hotels.search with checkin=2025-06-12, not checkin=12/06")
    assert "YYYY-MM-DD" in p.content
    assert p.blocking_issue is not None and p.blocking_issue["kind"] == "external_dependency"
    assert p.blocking_issue["tool"] == "hotels.search"
    assert p.trigger == "When the user asks to find them a hotel in Lisbon from June 12"


def test_failed_tool_call_fixed_by_another_tool() -> None:
    calls = [tool("weather.lookup", "timeout", city="Oslo"), tool("geo.resolve", "success", q="Oslo")]
    w = window(
        turn("User", "Will it rain in Oslo tomorrow?"), turn("Assistant", "Light rain.", tools_used=calls)
    )
    (p,) = propose(w)
    assert p.content.startswith("Use geo.resolve (q=Oslo) instead of weather.lookup")


@pytest.mark.parametrize(
    "status", ["error", "ERROR", "failed", "timeout", "Timed out", "500", "403", "denied"]
)
def test_failure_statuses(status: str) -> None:
    w = window(
        turn("User", "Ping db-1."),
        turn("Assistant", "Could not.", tools_used=[tool("net.ping", status, host="db-1")]),
    )
    (p,) = propose(w)
    assert "net.ping" in p.content


@pytest.mark.parametrize("status", ["success", "ok", "OK", "200", "done", ""])
def test_successful_tool_calls_teach_nothing(status: str) -> None:
    w = window(
        turn("User", "Ping db-1."),
        turn("Assistant", "Up.", tools_used=[tool("net.ping", status, host="db-1")]),
    )
    assert propose(w) == []


@pytest.mark.parametrize(
    "reply",
    [
        "Thanks, that's perfect!",
        "Great. Now can you also add a dark mode?",
        "My boss says never use tabs.",
        "If I were you I'd never deploy on a Friday.",
        "I don't mind Macs.",
        "Never mind.",
        "Ok",
    ],
)
def test_replies_without_a_lesson_teach_nothing(reply: str) -> None:
    w = window(
        turn("User", "Recommend a laptop."), turn("Assistant", "The MacBook Air."), turn("User", reply)
    )
    assert propose(w) == []


def test_indifference_is_kept_when_it_retracts_an_aversion() -> None:
    w = window(
        turn("User", "Recommend a laptop."),
        turn("Assistant", "A ThinkPad."),
        turn("User", "Actually I don't mind Macs."),
    )
    known = ctx({PROFILE: [learning(PROFILE, "Uses Linux; does not want Macs suggested")], PLAYBOOK: []})
    (p,) = propose(w, context=known)
    assert p.content == "Is fine with Macs"


def test_a_later_instruction_in_the_window_overrides_an_earlier_one() -> None:
    w = window(
        turn("User", "Rotate the staging logs."),
        turn("Assistant", "Shall I rotate them?"),
        turn("User", "Always ask me before you touch staging."),
        turn("User", "Clear the staging cache."),
        turn("Assistant", "May I clear it?"),
        turn("User", "Actually, stop asking me about routine staging tasks, just do them."),
    )
    (p,) = propose(w)
    assert p.content == "Just do routine staging tasks without asking"


def test_a_rule_already_known_as_a_profile_is_not_repeated() -> None:
    w = window(
        turn("User", "Recommend a laptop."),
        turn("Assistant", "A MacBook."),
        turn("User", "Again: no Macs, I use Linux."),
    )
    known = ctx({PROFILE: [], PLAYBOOK: [learning(PLAYBOOK, "Do not suggest Macs; the user uses Linux")]})
    assert propose(w, kinds=[PROFILE], context=known) == []


def test_proposals_are_deterministic() -> None:
    w = window(
        turn("User", "Book me a flight to Denver on Friday."),
        turn("Assistant", "Booked seat 23E.", tools_used=[tool("flights.book", "error", seat="23E")]),
        turn(
            "User", "Ugh, a middle seat. I always sit by the window. From now on, always pick a window seat."
        ),
        turn("User", "Also, what's the baggage allowance?"),
        turn(
            "Assistant",
            "One carry-on.",
            expert_content="One carry-on and one personal item; checked bags cost $35.",
        ),
    )
    first = propose(w)
    assert first  # the window teaches something: the comparison below is not of two empty lists
    for _ in range(20):
        assert propose(w) == first


# -- the judge --------------------------------------------------------------------------------


def proposal(
    kind: LearningKind, content: str, trigger: str | None = None, said: str = "", **extra: Any
) -> Proposal:
    return Proposal(
        kind=kind, content=content, trigger=trigger, rationale=f'The user said: "{said}"', **extra
    )


def test_a_reversed_instruction_supersedes_the_old_one() -> None:
    old = learning(
        PLAYBOOK,
        "Ask the user for confirmation before you take any action on servers",
        "When the user asks to restart the staging web server",
    )
    new = proposal(
        PLAYBOOK,
        "Just do routine staging tasks like this without asking",
        "When the user asks to rotate the staging logs",
        said="Stop asking me for confirmation on routine staging tasks like this, just do them.",
        pitfall="Asking the user for confirmation on routine staging tasks like this",
    )
    assert decide(new, old) == Decision(
        Verdict.SUPERSEDE, target=old.id, reason=f"contradicts learning {old.id}"
    )


def test_a_restated_instruction_is_kept() -> None:
    old = learning(
        PLAYBOOK,
        "Run the test and check the server log before claiming it works",
        "When the user asks to fix the login endpoint",
    )
    new = proposal(
        PLAYBOOK,
        "Verify with a test before you say it works",
        "When the user asks to fix the signup form",
        said="Again: verify with a test before you say it works.",
    )
    assert decide(new, old).verdict is Verdict.KEEP


def test_an_unrelated_rule_sharing_a_light_verb_is_added() -> None:
    old = learning(
        PLAYBOOK, "Do not use emojis in emails to customers", "When the user asks to draft a customer email"
    )
    new = proposal(
        PLAYBOOK,
        "Use bullet points in weekly reports",
        "When the user asks for the weekly report",
        said="Use bullet points in weekly reports.",
    )
    assert decide(new, old).verdict is Verdict.ADD


def test_a_partial_override_on_another_topic_keeps_both() -> None:
    old = learning(
        PLAYBOOK,
        "Ask the user for confirmation before deploying to production",
        "When the user asks to deploy",
    )
    new = proposal(
        PLAYBOOK,
        "Just fix typos without asking",
        "When the user asks to fix a typo in the docs",
        said="Don't ask me about typo fixes, just fix them.",
        pitfall="Asking the user about typo fixes",
    )
    assert decide(new, old).verdict is Verdict.ADD


def test_currency_switch_supersedes() -> None:
    old = learning(PLAYBOOK, "Give the user the values in euros", pitfall="Dollars")
    new = proposal(
        PLAYBOOK,
        "Show all amounts in US dollars",
        said="I've moved, from now on show all amounts in US dollars instead of euros.",
        pitfall="Euros",
    )
    assert decide(new, old).verdict is Verdict.SUPERSEDE


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("Lives in San Francisco", "Lives in Austin now", "I live in Austin now."),
        ("Lives in Berlin", "Lives in Lisbon (moved recently)", "I moved to Lisbon recently."),
        ("Their budget is $300 max", "Their budget is now $700", "My budget is now $700."),
        ("Likes steak", "Is vegetarian", "I'm vegetarian these days."),
        ("Does not eat meat; is vegetarian", "Is pescatarian now", "I'm pescatarian now."),
        (
            "Does not eat meat; is vegetarian",
            "Has started eating fish again",
            "I've started eating fish again.",
        ),
        ("Uses Linux only; does not want Macs suggested", "Is fine with Macs", "Actually I don't mind Macs."),
        (
            "Works as a backend developer",
            "Works as a full-stack developer",
            "I work as a full-stack developer now.",
        ),
    ],
)
def test_changed_facts_supersede(old: str, new: str, said: str) -> None:
    row = learning(PROFILE, old)
    assert decide(proposal(PROFILE, new, said=said), row).verdict is Verdict.SUPERSEDE


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "Only ever uses Linux; does not want Macs suggested",
            "Runs Linux; does not want Macs",
            "No Macs, I run Linux.",
        ),
        (
            "Only ever uses Linux; does not want Macs suggested",
            "Wants Linux only",
            "Again, Linux only please.",
        ),
        ("Is vegetarian", "Is vegetarian", "I'm vegetarian, remember?"),
    ],
)
def test_restated_facts_are_kept(old: str, new: str, said: str) -> None:
    assert decide(proposal(PROFILE, new, said=said), learning(PROFILE, old)).verdict is Verdict.KEEP


def test_a_fact_with_new_detail_updates_the_old_one() -> None:
    old = learning(PROFILE, "Is allergic to peanuts")
    new = proposal(
        PROFILE,
        "Is allergic to peanuts and cashews, carries an epipen",
        said="I'm allergic to peanuts and cashews, I carry an epipen.",
    )
    d = decide(new, old)
    assert d.verdict is Verdict.UPDATE and d.target == old.id
    assert d.content is not None and "cashews" in d.content and "peanuts" in d.content


def test_unrelated_facts_are_added() -> None:
    assert (
        decide(proposal(PROFILE, "Has two kids"), learning(PROFILE, "Lives in Lisbon")).verdict is Verdict.ADD
    )
    assert decide(proposal(PROFILE, "Has two kids")).verdict is Verdict.ADD


def test_a_tool_failing_again_keeps_its_lesson() -> None:
    issue = {"kind": "tool_failure", "details": "x", "tool": "hotels.search"}
    old = learning(
        PLAYBOOK, "Call hotels.search with checkin=2025-06-12, not checkin=12/06", blocking_issue=issue
    )
    new = proposal(
        PLAYBOOK,
        "hotels.search failed with checkin=04/07; change the call",
        blocking_issue=issue,
        track="tool_failure",
    )
    assert decide(new, old).verdict is Verdict.KEEP


def test_no_target_is_retired_twice() -> None:
    old = learning(PROFILE, "Does not eat meat; is vegetarian")
    a = proposal(PROFILE, "Has started eating fish again", said="Actually I've started eating fish again.")
    b = proposal(PROFILE, "Is pescatarian now", said="I'm pescatarian now.")
    first, second = RuleJudge().decide([a, b], [[old], [old]])
    assert first.verdict is Verdict.SUPERSEDE and first.target == old.id
    assert second.verdict is Verdict.ADD


# -- through the pipeline, as stored rows -------------------------------------------------------


@pytest.fixture
def store(memory_storage: Storage) -> Storage:
    return memory_storage


def learn(store: Storage, *turns: InteractionRecord, first_id: int) -> Changes:
    numbered = tuple(InteractionRecord(**{**_fields(t), "id": first_id + i}) for i, t in enumerate(turns))
    changes = learn_window(
        store, Config(), Window("o", "u", ("profile", "playbook"), numbered, 0), RuleProposer(), RuleJudge()
    )
    apply_changes(store, "o", changes, Audit(actor="test"))
    return changes


def current(store: Storage, kind: LearningKind) -> list[str]:
    rows = store.list_learnings(
        "o", LearningFilter(kinds=(kind,), user_id="u", statuses=(LearningStatus.CURRENT,)), limit=50
    )
    return sorted(r.content for r in rows)


def test_pipeline_supersedes_a_reversed_rule_and_keeps_a_restatement(store: Storage) -> None:
    learn(
        store,
        turn("User", "Restart the staging web server."),
        turn("Agent", "Restarted both."),
        turn("User", "Please ask me before you take any action on servers."),
        first_id=1,
    )
    learn(
        store,
        turn("User", "Rotate the staging logs."),
        turn("Agent", "About to rotate, shall I?"),
        turn("User", "Stop asking me for confirmation on routine staging tasks like this, just do them."),
        first_id=4,
    )
    changes = learn(
        store,
        turn("User", "Restart the staging worker."),
        turn("Agent", "Shall I?"),
        turn("User", "I told you, routine staging work doesn't need my confirmation."),
        first_id=7,
    )
    assert current(store, PLAYBOOK) == ["Just do routine staging tasks like this without asking"]
    assert not changes.added
    old = store.list_learnings(
        "o", LearningFilter(kinds=(PLAYBOOK,), statuses=(LearningStatus.SUPERSEDED,)), limit=50
    )
    assert [r.content for r in old] == ["Ask the user for confirmation before you take any action on servers"]


def test_pipeline_moves_a_profile_when_the_user_moves(store: Storage) -> None:
    learn(
        store,
        turn("User", "Find me a dentist."),
        turn("Agent", "Here are three in Boston."),
        turn("User", "I live in Austin, not Boston."),
        first_id=1,
    )
    learn(
        store,
        turn("User", "Any good bakeries nearby?"),
        turn("Agent", "Try Easy Tiger in Austin."),
        turn("User", "I moved to Denver last week."),
        first_id=4,
    )
    assert current(store, PROFILE) == ["Lives in Denver (moved last week)"]


def test_a_long_proposal_is_compared_by_the_vector_its_learning_is_stored_with(
    store: Storage, embedder: Embedder
) -> None:
    """Not by a query's head and tail: the middle of a long rule tells near-duplicates apart."""
    proposal = Proposal(
        LearningKind.USER_PLAYBOOK,
        trigger="the user asks to deploy the billing service on a Friday afternoon " * 3,
        content="Run the migrations on staging first, then ask before touching production " * 3,
    )
    stored_as = embedder.embed([proposal.text], kind="document")[0]
    assert embedder.embed([proposal.text], kind="query")[0] @ stored_as < 0.999  # past a query's window
    np.testing.assert_array_equal(pipeline._vectors(store, [proposal])[0], stored_as)
