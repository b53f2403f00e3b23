"""Session evaluation: one call with the org's success definition, validated output."""

from __future__ import annotations

import pytest

from reflexio.learn.llm_extract import judge_session
from reflexio.models.org_config import Config
from reflexio.testing import ScriptedLLM, ScriptError
from tests.llm.support import turn

TURNS = [
    turn(1, "User", "Refund my keyboard please."),
    turn(2, "Agent", "Refunded order 1234."),
    turn(3, "User", "Wrong order! Ask for the order number first."),
]


def test_one_call_judges_the_session() -> None:
    verdict = {
        "is_success": False,
        "failure_type": "wrong_answer",
        "failure_reason": "Refunded the wrong order.",
        "number_of_correction_per_session": 1,
    }
    llm = ScriptedLLM().on("evaluate_session", verdict)
    success = {"success_definition_prompt": "Refund the right order."}
    config = Config.model_validate({"agent_success_config": success})
    result = judge_session(llm, config, TURNS)
    assert (result.is_success, result.failure_type, result.number_of_correction_per_session) == (
        False,
        "wrong_answer",
        1,
    )
    (call,) = llm.calls
    assert call.inputs["success_definition"] == "Refund the right order."
    assert "[#3] User" in call.inputs["conversation"]


def test_an_unknown_failure_type_is_refused() -> None:
    llm = ScriptedLLM().on("evaluate_session", {"is_success": False, "failure_type": "bad_vibes"})
    with pytest.raises(ScriptError):
        judge_session(llm, Config(), TURNS)
