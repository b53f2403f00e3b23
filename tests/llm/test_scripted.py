"""ScriptedLLM: scripted answers are validated like live ones and every call is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from reflexio.learn.llm_schemas import GateOutput
from reflexio.llm import LLMCall, LLMUnavailableError, Role
from reflexio.testing import ScriptedLLM, ScriptError


def call(prompt: str = "gate", output: type[BaseModel] | None = GateOutput, **inputs: Any) -> LLMCall[Any]:
    return LLMCall(
        role=Role.GATE,
        prompt=prompt,
        version="1.0.0",
        messages=({"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 40}),
        output=output,
        inputs=inputs,
    )


def test_answers_in_any_form_are_validated_against_the_output_model() -> None:
    for answer in ({"learnable": True}, '{"learnable": true}', GateOutput(learnable=True)):
        result = ScriptedLLM().on("gate", answer).complete(call())
        assert result.output == GateOutput(learnable=True)
        assert result.usage.prompt_tokens == 20 and result.usage.cost_usd == 0.0


def test_an_answer_that_does_not_fit_the_schema_fails_loudly() -> None:
    with pytest.raises(ScriptError, match="does not fit GateOutput"):
        ScriptedLLM().on("gate", {"learnable": "maybe"}).complete(call())
    with pytest.raises(ScriptError, match="not JSON"):
        ScriptedLLM().on("gate", "yes").complete(call())
    with pytest.raises(ScriptError, match="free text"):
        ScriptedLLM().on("gate", {"a": 1}).complete(call(output=None))


def test_a_call_without_a_rule_fails_loudly() -> None:
    with pytest.raises(ScriptError, match="no scripted answer"):
        ScriptedLLM().on("extract", {}).complete(call())


def test_the_latest_matching_rule_wins_and_predicates_choose() -> None:
    llm = ScriptedLLM().on("gate", {"learnable": False})
    llm.on("gate", {"learnable": True}, when=lambda inputs: "Linux" in inputs["conversation"])
    assert llm.complete(call(conversation="I use Linux")).value.learnable
    assert not llm.complete(call(conversation="hello")).value.learnable


def test_rules_can_be_used_up() -> None:
    llm = ScriptedLLM().on("gate", {"learnable": False}).on("gate", {"learnable": True}, times=1)
    assert [llm.complete(call()).value.learnable for _ in range(3)] == [True, False, False]


def test_callables_build_answers_from_inputs_and_errors_can_be_scripted() -> None:
    llm = ScriptedLLM().on("gate", lambda inputs: {"learnable": inputs["n"] > 1})
    assert llm.complete(call(n=2)).value.learnable
    llm.on("gate", LLMUnavailableError("provider down"), times=1)
    with pytest.raises(LLMUnavailableError):
        llm.complete(call(n=2))


def test_every_call_is_recorded() -> None:
    llm = ScriptedLLM().on("gate", {"learnable": True}).on("note", "plain text")
    llm.complete(call(n=1))
    assert llm.complete(call("note", output=None)).text == "plain text"
    assert [c.prompt for c in llm.calls] == ["gate", "note"]
    assert llm.calls_to("gate")[0].inputs == {"n": 1} and llm.calls_to("gate")[0].output.learnable
