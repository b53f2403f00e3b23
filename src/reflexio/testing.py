"""Fakes shipped as products: ``ScriptedLLM``, a deterministic ``LLM`` for tests, CI and demos.

A scripted model answers through the same seam production uses (``reflexio.llm.LLM``), so code
under test never knows it is under test. Its answers are validated against the call's output
model exactly like a live model's, so a script cannot pass with an answer production would
refuse; unlike a live model it fails *loudly*: a missing rule or an answer that does not fit
the schema raises ``ScriptError`` (an ``AssertionError``, which production code never catches).

``rules_script()`` builds a scripted model whose extraction answers come from the offline rule
extractor, so the loop simulator can exercise the whole LLM path with realistic outputs.
"""

from __future__ import annotations

import importlib
import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from reflexio import ranking
from reflexio.embed import Embedder
from reflexio.learn.aggregate import CentralAggregator
from reflexio.learn.attribution import judge_offline
from reflexio.learn.llm_extract import is_agent, is_user
from reflexio.learn.shadow import offline_answer
from reflexio.learn.standing import STANDING_TAG
from reflexio.llm import LLMCall, LLMResult, Usage

__all__ = [
    "RecordedCall",
    "ScriptError",
    "ScriptedLLM",
    "rules_learning_verdicts",
    "rules_script",
    "rules_session_judgement",
]

M = TypeVar("M", bound=BaseModel)

#: A predicate on a call's inputs (the prompt's variables and the domain objects behind them).
Predicate = Callable[[Mapping[str, Any]], bool]


class ScriptError(AssertionError):
    """The script does not fit a call: no rule for it, or an answer that fails its schema."""


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One call a scripted model received, with what it answered (or raised)."""

    call: LLMCall[Any]
    result: LLMResult[Any] | None
    error: BaseException | None = None

    @property
    def prompt(self) -> str:
        """The prompt's name."""
        return self.call.prompt

    @property
    def inputs(self) -> Mapping[str, Any]:
        """What the prompt was rendered from."""
        return self.call.inputs

    @property
    def output(self) -> Any:
        """The validated output (None for free text or a raised error)."""
        return self.result.output if self.result is not None else None


@dataclass(slots=True)
class _Rule:
    prompt: str
    response: Any
    when: Predicate | None
    times: int | None


class ScriptedLLM:
    """An ``LLM`` that answers from rules chosen by prompt name and, optionally, by inputs.

    Example::

        llm = ScriptedLLM().on("gate", {"learnable": False})
        llm.on("gate", {"learnable": True}, when=lambda i: "Linux" in i["conversation"])

    The *latest* matching rule wins, so specific rules can be layered on a general script.
    Token counts are deterministic (characters / 4), cost is 0, and every call is recorded in
    ``calls``.
    """

    model = "scripted"

    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.calls: list[RecordedCall] = []

    def on(
        self, prompt: str, response: Any, *, when: Predicate | None = None, times: int | None = None
    ) -> Self:
        """Answer calls of ``prompt`` with ``response``.

        Args:
            prompt: The prompt's name.
            response: The answer: a pydantic model, a dict, a JSON string (free text for calls
                without an output model), an exception to raise, or a callable that receives
                the call's inputs and returns any of those.
            when: Only for calls whose inputs satisfy this predicate.
            times: Only this many times (then the rule is used up).
        """
        with self._lock:
            self._rules.append(_Rule(prompt, response, when, times))
        return self

    def complete(self, call: LLMCall[M]) -> LLMResult[M]:
        """Answer ``call`` from the script (see the class docstring)."""
        rule = self._match(call)
        raw = rule.response(call.inputs) if callable(rule.response) else rule.response
        if isinstance(raw, BaseException):
            self._record(RecordedCall(call, None, raw))
            raise raw
        text, output = _shaped(raw, call)
        usage = Usage(
            model=self.model,
            prompt_tokens=sum(len(m.get("content", "")) for m in call.messages) // 4,
            completion_tokens=len(text) // 4,
            attempts=1,
        )
        result = LLMResult(text, output, usage)
        self._record(RecordedCall(call, result))
        return result

    def calls_to(self, prompt: str) -> list[RecordedCall]:
        """The recorded calls of one prompt, in order."""
        return [c for c in self.calls if c.prompt == prompt]

    def _match(self, call: LLMCall[Any]) -> _Rule:
        with self._lock:
            for rule in reversed(self._rules):
                if rule.prompt != call.prompt or rule.times == 0:
                    continue
                if rule.when is not None and not rule.when(call.inputs):
                    continue
                if rule.times is not None:
                    rule.times -= 1
                return rule
        raise ScriptError(f"no scripted answer for prompt {call.prompt!r} with these inputs")

    def _record(self, recorded: RecordedCall) -> None:
        with self._lock:
            self.calls.append(recorded)


def _shaped(raw: Any, call: LLMCall[M]) -> tuple[str, M | None]:
    """(text, validated output) of a scripted answer, or ScriptError."""
    if call.output is None:
        if isinstance(raw, str):
            return raw, None
        raise ScriptError(f"call {call.prompt!r} wants free text, the script gave {type(raw).__name__}")
    if isinstance(raw, BaseModel):
        data: Any = raw.model_dump(mode="json")
    elif isinstance(raw, str):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ScriptError(f"scripted answer for {call.prompt!r} is not JSON: {exc}") from exc
    elif isinstance(raw, Mapping):
        data = dict(raw)
    else:
        raise ScriptError(f"scripted answer for {call.prompt!r} has unusable type {type(raw).__name__}")
    try:
        output = call.output.model_validate(data)
    except PydanticValidationError as exc:
        raise ScriptError(
            f"scripted answer for {call.prompt!r} does not fit {call.output.__name__}: {exc}"
        ) from exc
    return json.dumps(output.model_dump(mode="json"), ensure_ascii=False), output


# -- the rule extractor behind the LLM seam -------------------------------------------------------

#: Relations the extraction answer uses, by the verdict a rule judge gives.
_RELATION_OF = {"add": "new", "keep": "same", "update": "refines", "supersede": "contradicts"}
_TRACKS = frozenset({"correction", "tool_failure", "recipe", "expert"})
_TTLS = frozenset({"one_day", "one_week", "one_month", "one_quarter", "one_year", "infinity"})


def rules_script(embedder: Embedder | None = None) -> ScriptedLLM:
    """A scripted model whose answers the offline rule extractor computes from each call's inputs.

    Extraction delegates to ``reflexio.learn.rules.RuleProposer`` and converts its proposals to
    the extraction schema; relations to known learnings and merge verdicts come from the rule
    judge (``RuleJudge``) when the module has one. The gate says yes when the rules find
    anything; session evaluation counts the user's reactions to the agent (and judges the
    learnings its call lists as the offline judge does); query rewriting
    returns the query unchanged; aggregation answers with the deterministic aggregator's rule;
    the learning and shadow judges answer with the offline judges' verdicts; a revision is
    declined (rules cannot rewrite a rule). With ``embedder``, the aggregator compares
    instructions by meaning as the offline one in the service does (a model reads paraphrases
    as one rule).
    """
    rules = importlib.import_module("reflexio.learn.rules")
    proposer = rules.RuleProposer()
    judge = rules.RuleJudge() if hasattr(rules, "RuleJudge") else None

    def propose(inputs: Mapping[str, Any]) -> list[Any]:
        return list(proposer.propose(inputs["window"], inputs["learning_kinds"], inputs["context"]))

    def gate(inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {"learnable": bool(propose(inputs)), "reason": "rule extractor"}

    def extract(inputs: Mapping[str, Any]) -> dict[str, Any]:
        existing = inputs["context"].existing
        out: dict[str, list[dict[str, Any]]] = {"profiles": [], "playbooks": []}
        for proposal in propose(inputs):
            near = _nearest(proposal, existing.get(proposal.kind, []))
            verdict, target = _verdict(judge, proposal, near)
            item = _extract_item(proposal, verdict, target)
            out["profiles" if proposal.kind.value == "profile" else "playbooks"].append(item)
        return out

    def merge(inputs: Mapping[str, Any]) -> dict[str, Any]:
        decisions = []
        for number, (proposal, near) in enumerate(
            zip(inputs["proposals"], inputs["similar"], strict=True), 1
        ):
            verdict, target = _verdict(judge, proposal, near)
            decisions.append({"item": number, "verdict": verdict, "existing_id": target, "reason": "rules"})
        return {"decisions": decisions}

    script = ScriptedLLM()
    script.on("gate", gate).on("extract", extract).on("merge", merge)
    script.on("evaluate_session", rules_session_judgement)
    script.on("rewrite_query", lambda inputs: {"query": inputs["query"]})
    script.on("aggregate", lambda inputs: _aggregate(inputs, embedder))
    script.on("judge_learnings", rules_learning_verdicts)
    script.on("compare_shadow", lambda inputs: offline_answer(inputs["all_turns"], inputs["indexes"]))
    script.on(
        "revise_learning", {"trigger": None, "content": None, "rationale": "rules cannot rewrite a rule"}
    )
    return script


def rules_learning_verdicts(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The offline judge's verdicts in the model's answer shape."""
    verdicts = judge_offline(inputs["turns"], inputs["found"], inputs["success"], inputs["injections"])
    return {
        "verdicts": [
            {
                "learning_ref": v.injection.ref,
                "is_relevant": bool(v.is_relevant),
                "relevance_reason": v.relevance_reason,
                "impact": v.impact or "neutral",
                "impact_reason": v.impact_reason,
                "diagnosis": v.diagnosis,
            }
            for v in verdicts
        ]
    }


#: A model reads paraphrases as one rule; the stand-in links members whose stored vectors are
#: this similar (the bundled embedder's clustering threshold plus the service's direction
#: margin), or whose instructions alone are as similar as the clustering threshold.
_PARAPHRASE_SIMILARITY = 0.55
_INSTRUCTION_SIMILARITY = 0.45


def _aggregate(inputs: Mapping[str, Any], embedder: Embedder | None) -> dict[str, Any]:
    """The deterministic aggregator's rule for the cluster, in the aggregation schema."""
    embed = None if embedder is None else (lambda texts: embedder.embed(texts, kind="document"))
    aggregator = CentralAggregator(
        link_similarity=_PARAPHRASE_SIMILARITY, embed=embed, instruction_similarity=_INSTRUCTION_SIMILARITY
    )
    draft = aggregator.aggregate(inputs["evidence"], min_users=int(inputs["min_users"]))
    if draft is None:
        return {"playbook": None}
    return {
        "playbook": {
            "rationale": draft.rationale or "",
            "trigger": draft.trigger or draft.content,
            "content": draft.content,
            "pitfall": draft.pitfall,
            "blocking_issue": draft.blocking_issue,
            "member_ids": list(draft.member_ids),
        }
    }


def _nearest(proposal: Any, rows: Sequence[Any], limit: int = 5) -> list[Any]:
    """Known learnings that share words with the proposal, most overlapping first."""
    words = ranking.word_set(proposal.text)
    scored = [(ranking.jaccard(words, ranking.word_set(row.search_text)), row) for row in rows]
    return [row for score, row in sorted(scored, key=lambda pair: -pair[0]) if score > 0.1][:limit]


def _verdict(judge: Any, proposal: Any, near: Sequence[Any]) -> tuple[str, int | None]:
    if not near:
        return "add", None
    if judge is None:
        same = ranking.jaccard(ranking.word_set(proposal.text), ranking.word_set(near[0].search_text)) >= 0.8
        return ("keep", near[0].id) if same else ("add", None)
    decision = judge.decide([proposal], [list(near)])[0]
    verdict = str(decision.verdict.value)
    return verdict, decision.target if verdict != "add" else None


def _extract_item(proposal: Any, verdict: str, target: int | None) -> dict[str, Any]:
    common = {
        "evidence": list(proposal.source_interaction_ids),
        "relation": _RELATION_OF[verdict],
        "existing_id": target,
        "standing": STANDING_TAG in proposal.tags,
    }
    if proposal.kind.value == "profile":
        return {
            "content": proposal.content,
            "type": "preference" if proposal.track == "preference" else "fact",
            "ttl": proposal.ttl if proposal.ttl in _TTLS else "infinity",
            "features": {str(k): str(v) for k, v in (proposal.custom_features or {}).items()},
            **common,
        }
    return {
        "track": proposal.track if proposal.track in _TRACKS else "correction",
        "rationale": proposal.rationale or "",
        "trigger": proposal.trigger or "In conversations with this user",
        "content": proposal.content,
        "pitfall": proposal.pitfall,
        "blocking_issue": proposal.blocking_issue,
        **common,
    }


def rules_session_judgement(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The session verdict, and the offline judge's verdicts on the learnings the call lists."""
    verdict = _evaluate(inputs["turns"])
    if inputs.get("injections"):
        listed = {**inputs, "success": verdict["is_success"]}
        verdict["verdicts"] = rules_learning_verdicts(listed)["verdicts"]
    return verdict


def _evaluate(turns: Sequence[Any]) -> dict[str, Any]:
    reactions = sum(1 for before, turn in itertools.pairwise(turns) if is_agent(before) and is_user(turn))
    return {
        "is_success": reactions == 0,
        "failure_type": None if reactions == 0 else "wrong_answer",
        "failure_reason": None if reactions == 0 else f"the user corrected the agent {reactions} time(s)",
        "is_escalated": False,
        "number_of_correction_per_session": reactions,
    }
