"""Query rewriting: a standalone query from the history, the original on any doubt."""

from __future__ import annotations

from reflexio.learn.reformulate import rewrite_query
from reflexio.llm import LLMUnavailableError
from reflexio.models.api_search import ConversationTurn
from reflexio.testing import ScriptedLLM

HISTORY = [
    ConversationTurn(role="user", content="Which ThinkPad runs Fedora best?"),
    ConversationTurn(role="assistant", content="The X1 Carbon Gen 12."),
]


def test_a_follow_up_becomes_standalone() -> None:
    llm = ScriptedLLM().on("rewrite_query", {"query": "  X1 Carbon Gen 12 battery life on Fedora  "})
    assert rewrite_query(llm, "and its battery?", HISTORY) == "X1 Carbon Gen 12 battery life on Fedora"
    (call,) = llm.calls
    assert call.inputs["query"] == "and its battery?" and "X1 Carbon Gen 12." in call.inputs["history"]


def test_without_history_there_is_no_call() -> None:
    llm = ScriptedLLM()
    assert rewrite_query(llm, "laptops for Linux", None) == "laptops for Linux"
    assert rewrite_query(llm, "laptops for Linux", []) == "laptops for Linux"
    assert llm.calls == []


def test_failures_fall_back_to_the_original() -> None:
    llm = ScriptedLLM().on("rewrite_query", LLMUnavailableError("rate limited"))
    assert rewrite_query(llm, "and its battery?", HISTORY) == "and its battery?"


def test_implausible_rewrites_are_refused() -> None:
    for answer in ("line one\nline two", "x" * 400):
        llm = ScriptedLLM().on("rewrite_query", {"query": answer})
        assert rewrite_query(llm, "and its battery?", HISTORY) == "and its battery?"
