"""The two aggregators: deterministic (no provider) and one validated LLM call per cluster."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from reflexio.embed import EmbedderUnavailable, Vectors
from reflexio.learn.aggregate import CentralAggregator, Evidence, LLMAggregator, directions, render_members
from reflexio.llm import LLMOutputError
from reflexio.records import Vector
from reflexio.testing import ScriptedLLM, ScriptError, rules_script


def _vec(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


REFUND = [
    Evidence(
        1,
        "ann",
        "Ask for the order number before issuing a refund.",
        "When a customer asks for a refund",
        vector=_vec(1, 0.1, 0),
    ),
    Evidence(
        2,
        "bob",
        "Confirm the order number with the customer before refunding.",
        "When the customer wants a refund for a purchase",
        rationale="Refunded the wrong order.",
        vector=_vec(1, 0, 0),
    ),
    Evidence(
        3,
        "cid",
        "Check the order number before refunding anything.",
        "When someone asks for money back",
        pitfall="The wrong purchase gets refunded.",
        vector=_vec(1, 0, 0.1),
    ),
    Evidence(
        4,
        "ann",
        "Never offer store credit instead of refunds.",
        "When a customer asks for a refund",
        vector=_vec(0.7, 0.7, 0),
    ),
]


def test_directions_split_members_that_say_different_things() -> None:
    groups = directions(REFUND, 0.6)
    assert [[m.id for m in g] for g in groups] == [[1, 2, 3], [4]]


def test_central_aggregator_writes_the_majority_rule_from_its_central_member() -> None:
    draft = CentralAggregator().aggregate(REFUND, min_users=2)
    assert draft is not None
    assert draft.content == "Confirm the order number with the customer before refunding."
    assert draft.member_ids == (1, 2, 3)
    assert draft.trigger is not None and "refund" in draft.trigger
    assert draft.rationale == "Refunded the wrong order. Taught independently by 3 users (3 user playbooks)."
    assert draft.pitfall == "The wrong purchase gets refunded."
    assert draft.blocking_issue is None


def test_central_aggregator_needs_min_users_behind_the_majority() -> None:
    assert CentralAggregator().aggregate(REFUND, min_users=4) is None
    assert CentralAggregator().aggregate([], min_users=1) is None


def test_central_aggregator_without_vectors_uses_shared_words() -> None:
    plain = [Evidence(m.id, m.user_id, m.content, m.trigger) for m in REFUND[:3]]
    draft = CentralAggregator().aggregate(plain, min_users=2)
    assert draft is not None and draft.member_ids == (1, 2, 3)


def test_blocking_issue_kept_only_when_every_member_shares_its_kind() -> None:
    issue = {"kind": "missing_tool", "details": "no refund tool"}
    same = [Evidence(i, f"u{i}", "Escalate refunds to a human.", blocking_issue=issue) for i in (1, 2)]
    draft = CentralAggregator().aggregate(same, min_users=2)
    assert draft is not None and draft.blocking_issue == issue
    mixed = [same[0], Evidence(3, "u3", "Escalate refunds to a human.")]
    draft = CentralAggregator().aggregate(mixed, min_users=2)
    assert draft is not None and draft.blocking_issue is None


def test_prompt_shows_members_by_number_and_anonymous_author() -> None:
    text = render_members(REFUND)
    assert "[1] (user A)" in text and "[2] (user B)" in text and "[4] (user A)" in text
    assert "ann" not in text and "Rationale: Refunded the wrong order." in text


def _answer(member_ids: list[int], **extra: object) -> dict[str, object]:
    return {
        "playbook": {
            "rationale": "Several customers were refunded on the wrong order.",
            "trigger": "A customer asks for a refund",
            "content": "Ask for the order number before issuing any refund.",
            "member_ids": member_ids,
            **extra,
        }
    }


def test_llm_aggregator_makes_one_validated_call_citing_members() -> None:
    llm = ScriptedLLM().on("aggregate", _answer([1, 2, 3]))
    draft = LLMAggregator(llm, agent_context="a shop's support agent").aggregate(REFUND, min_users=2)
    assert draft is not None and draft.member_ids == (1, 2, 3)
    assert draft.content == "Ask for the order number before issuing any refund."
    [call] = llm.calls_to("aggregate")
    assert call.call.version == "1.0.0" and call.inputs["user_count"] == 3
    assert "a shop's support agent" in call.call.messages[0]["content"]


def test_llm_citations_outside_the_cluster_are_dropped_and_the_gate_rechecked() -> None:
    llm = ScriptedLLM().on("aggregate", _answer([1, 99]))
    assert LLMAggregator(llm).aggregate(REFUND, min_users=2) is None  # only ann is left
    llm = ScriptedLLM().on("aggregate", _answer([1, 2, 99]))
    draft = LLMAggregator(llm).aggregate(REFUND, min_users=2)
    assert draft is not None and draft.member_ids == (1, 2)


def test_llm_null_answer_means_no_rule_for_everyone() -> None:
    llm = ScriptedLLM().on("aggregate", {"playbook": None})
    assert LLMAggregator(llm).aggregate(REFUND, min_users=2) is None


def test_an_answer_outside_the_schema_is_refused_like_a_live_one() -> None:
    llm = ScriptedLLM().on("aggregate", {"playbook": {"trigger": "x", "content": "", "member_ids": [1]}})
    with pytest.raises(ScriptError, match="does not fit AggregateOutput"):
        LLMAggregator(llm).aggregate(REFUND, min_users=2)
    llm = ScriptedLLM().on("aggregate", LLMOutputError("no JSON"))
    with pytest.raises(LLMOutputError):
        LLMAggregator(llm).aggregate(REFUND, min_users=2)


def test_rules_script_aggregates_like_the_deterministic_aggregator() -> None:
    draft = LLMAggregator(rules_script()).aggregate(REFUND, min_users=2)
    central = CentralAggregator(link_similarity=0.55).aggregate(REFUND, min_users=2)  # the script's reading
    assert draft is not None and central is not None
    assert (draft.content, draft.member_ids) == (central.content, central.member_ids)


def test_paraphrases_with_similar_vectors_are_one_direction() -> None:
    policy = [
        Evidence(1, "h1", "Include the link to the policy page when you answer.", vector=_vec(1, 0.2, 0)),
        Evidence(2, "h2", "Always add the policy link so I can check it.", vector=_vec(1, 0.3, 0)),
    ]
    assert len(directions(policy, 0.6)) == 2  # few shared words
    assert [[m.id for m in g] for g in directions(policy, 0.6, link_similarity=0.9)] == [[1, 2]]
    assert CentralAggregator(link_similarity=0.9).aggregate(policy, min_users=2) is not None
    assert CentralAggregator().aggregate(policy, min_users=2) is None


MEDS = [
    Evidence(
        1,
        "amal",
        "Check for interactions with my other medications first.",
        "When asked about ibuprofen",
        vector=_vec(1, 0, 0),
    ),
    Evidence(
        2,
        "bo",
        "Ask about the user's other medication first.",
        "When asked for a cold remedy",
        vector=_vec(0.6, 0.8, 0),
    ),
]


def _by_content(known: dict[str, Vector]) -> tuple[list[list[str]], Callable[[Sequence[str]], Vectors]]:
    calls: list[list[str]] = []

    def embed(texts: Sequence[str]) -> Vectors:
        calls.append(list(texts))
        return np.stack([known[t] for t in texts])

    return calls, embed


def test_instructions_taught_on_different_requests_are_one_direction_by_their_own_vectors() -> None:
    # stored vectors hold the triggers too (0.6 apart here); the instructions alone mean the same
    calls, embed = _by_content({MEDS[0].content: _vec(1, 0.1, 0), MEDS[1].content: _vec(1, 0.2, 0)})
    assert CentralAggregator(link_similarity=0.9).aggregate(MEDS, min_users=2) is None
    draft = CentralAggregator(link_similarity=0.9, embed=embed).aggregate(MEDS, min_users=2)
    assert draft is not None and draft.member_ids == (1, 2)
    assert calls == [[m.content for m in MEDS]]


def test_instructions_are_embedded_only_when_words_and_stored_vectors_leave_directions_apart() -> None:
    calls, embed = _by_content({})
    draft = CentralAggregator(link_similarity=0.55, embed=embed).aggregate(REFUND, min_users=2)
    assert draft is not None and calls == []  # one direction already: nothing to embed


def test_different_instructions_stay_apart_and_a_failing_embedder_falls_back_to_words() -> None:
    _, embed = _by_content({MEDS[0].content: _vec(1, 0, 0), MEDS[1].content: _vec(0, 1, 0)})
    assert CentralAggregator(link_similarity=0.9, embed=embed).aggregate(MEDS, min_users=2) is None

    def down(texts: Sequence[str]) -> Vectors:
        raise EmbedderUnavailable("the hosted embedder is down")

    assert CentralAggregator(link_similarity=0.9, embed=down).aggregate(MEDS, min_users=2) is None


def test_instructions_own_vectors_link_at_their_own_similarity() -> None:
    # the stored vectors' bar carries a margin for shared triggers; the instructions' need not
    _, embed = _by_content({MEDS[0].content: _vec(1, 0, 0), MEDS[1].content: _vec(1, 0.9, 0)})
    assert CentralAggregator(link_similarity=0.9, embed=embed).aggregate(MEDS, min_users=2) is None
    aggregator = CentralAggregator(link_similarity=0.9, instruction_similarity=0.7, embed=embed)
    draft = aggregator.aggregate(MEDS, min_users=2)
    assert draft is not None and draft.member_ids == (1, 2)
