"""Prompt files: one active version each, declared variables, and every prompt renders."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from reflexio.learn import prompts
from reflexio.learn.prompts import PromptError
from reflexio.llm import LLMCall, Role

#: Sample values with characters that broke the original's str.format rendering (W30).
TRICKY = 'JSON {"a": 1} and ${not_a_variable} and $5 and {braces}'

EXPECTED = {
    "gate",
    "extract",
    "merge",
    "evaluate_session",
    "rewrite_query",
    "aggregate",
    "judge_learnings",
    "compare_shadow",
    "revise_learning",
}


def test_the_prompt_bank() -> None:
    assert set(prompts.names()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_prompt_renders_with_sample_inputs(name: str) -> None:
    prompt = prompts.load(name)
    assert prompt.version and prompt.description and prompt.variables
    values = {v: f"<{v}> {TRICKY}" for v in prompt.variables}
    system, user = prompt.render(values)
    assert system["role"] == "system" and user["role"] == "user"
    text = system["content"] + user["content"]
    for v in prompt.variables:
        assert f"<{v}> {TRICKY}" in text  # inserted verbatim, never re-parsed
    assert "$" not in (system["content"] + user["content"]).replace(TRICKY, "")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_active_version_is_also_loadable_by_number(name: str) -> None:
    active = prompts.load(name)
    numbered = prompts.load(name, active.version)
    assert (numbered.version, numbered.system.template) == (active.version, active.system.template)


def test_rendering_checks_the_variables() -> None:
    prompt = prompts.load("rewrite_query")
    with pytest.raises(PromptError, match="missing"):
        prompt.render({"query": "q"})
    with pytest.raises(PromptError, match="unknown"):
        prompt.render({"query": "q", "history": "h", "extra": "x"})


def test_unknown_prompts_and_versions() -> None:
    with pytest.raises(PromptError):
        prompts.load("no_such_prompt")
    with pytest.raises(PromptError):
        prompts.load("gate", "9.9.9")


def test_a_call_carries_name_version_and_inputs() -> None:
    prompt = prompts.load("rewrite_query")
    call: LLMCall[BaseModel] = prompt.call(
        Role.QUERY_REWRITE, {"query": "q", "history": "h"}, output=None, inputs={"extra": 1}
    )
    assert (call.prompt, call.version, call.role) == ("rewrite_query", prompt.version, Role.QUERY_REWRITE)
    assert call.inputs == {"query": "q", "history": "h", "extra": 1}
