"""The LLM extractor: the pipeline's ``Proposer`` and ``Judge`` seams over an ``LLM``.

Calls are what an LLM extractor costs, so each window spends as few as it can:

1. A deterministic **pre-gate** (``signal_of``) reads the window's new turns. No user text
   beyond greetings, no reaction to the agent, no failed tool, no expert answer and no long
   tool chain: no call at all. A user *reacting* to the agent (where corrections live), a
   failed tool or an expert answer: straight to extraction. Anything else (a first-person
   statement, a successful multi-tool run): the cheap gate model decides first.
2. **One extraction call** serves every extractor sharing the window (profiles and playbooks
   together), and is shown the user's current learnings, so it also says how each item relates
   to them (new / same / refines / contradicts).
3. The ``LLMJudge`` reuses those relations when the extraction saw every similar learning the
   pipeline found, and makes **one merge call** per window only for proposals it did not see.
   Proposals with nothing similar are added without a call.

Failures: provider errors propagate, so the job retries later and the window is not lost. An
answer that stays invalid after its repair attempt skips the window's extraction (the failed
call is in the usage ledger; retrying the same window would fail the same way and stall every
later window of the user); an invalid gate answer counts as "learnable"; an invalid merge
answer adds the proposals (nothing is lost, at worst something is duplicated).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any

from reflexio import ranking
from reflexio.learn import prompts
from reflexio.learn.llm_schemas import (
    ExtractOutput,
    GateOutput,
    MergeOutput,
    PlaybookItem,
    ProfileItem,
    SessionJudgementOutput,
)
from reflexio.learn.pipeline import Decision, LearnContext, Proposal, Verdict, learn_window
from reflexio.learn.standing import STANDING_TAG
from reflexio.learn.windows import Window, WindowLearner
from reflexio.llm import LLM, LLMOutputError, Role
from reflexio.models.org_config import DEFAULT_SUCCESS_PROMPT, Config
from reflexio.records import InteractionRecord, Learning, LearningKind
from reflexio.storage import Storage

__all__ = [
    "NO_LEARNINGS",
    "Hint",
    "LLMJudge",
    "LLMProposer",
    "Signal",
    "judge_session",
    "llm_learner",
    "render_conversation",
    "signal_of",
    "window_learner",
]

log = logging.getLogger(__name__)

#: Output caps per prompt: room for reasoning models, a stop for runaway answers.
MAX_TOKENS = {"gate": 2048, "extract": 8192, "merge": 4096, "evaluate_session": 4096}
#: What the session judge reads when its agent was given no learnings.
NO_LEARNINGS = "(none)"
#: Longest turn text shown to a model; the rest is cut.
MAX_TURN_CHARS = 2000

_USER_ROLES = frozenset({"user", "human", "customer"})
_AGENT_ROLES = frozenset({"agent", "assistant", "ai", "bot", "model"})
_FAILED = ("error", "fail", "timeout", "timed out", "exception", "denied", "invalid", "refused", "forbidden")
_TRIVIAL_WORDS = frozenset({
    "hi", "hello", "hey", "thanks", "thank", "you", "ty", "ok", "okay", "k", "great", "cool", "perfect",
    "nice", "awesome", "good", "fine", "sure", "yes", "yep", "yeah", "got", "it", "that", "works", "sounds",
    "bye", "cheers", "much", "so", "very", "alright", "right", "np", "lgtm", "please",
})  # fmt: skip
_SELF_STATEMENT = re.compile(
    r"\b(i am|i'm|i use|i only|i prefer|i like|i love|i hate|i don't|i do not|i never|i always|"
    r"i work|i live|i run|my \w+ (is|are)|we use|we prefer|our \w+ (is|are)|call me)\b",
    re.IGNORECASE,
)
_KIND_NAMES = {LearningKind.PROFILE: "profiles", LearningKind.USER_PLAYBOOK: "playbooks"}
_RELATIONS = {"same": Verdict.KEEP, "refines": Verdict.UPDATE, "contradicts": Verdict.SUPERSEDE}


# -- the pre-gate --------------------------------------------------------------------------------


class Signal(IntEnum):
    """How much a window promises, from its new turns alone (no model involved)."""

    NONE = 0  # nothing to learn: no call
    WEAK = 1  # maybe: ask the gate model
    STRONG = 2  # a reaction, a failure or an expert answer: extract directly


def is_user(turn: InteractionRecord) -> bool:
    """Whether a turn was written by the user (roles are free-form; compared case-insensitively)."""
    return turn.role.strip().lower() in _USER_ROLES


def is_agent(turn: InteractionRecord) -> bool:
    """Whether a turn was written by the agent."""
    return turn.role.strip().lower() in _AGENT_ROLES


def tool_failed(tool: dict[str, Any]) -> bool:
    """Whether a ``tools_used`` entry reports a failure in its status."""
    status = str(tool.get("status") or "").lower()
    return status in {"false", "0"} or any(word in status for word in _FAILED)


def _trivial(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return len(words) <= 8 and all(w in _TRIVIAL_WORDS for w in words)


def signal_of(window: Window) -> Signal:
    """The pre-gate: what the window's new turns promise (see the module docstring)."""
    best = Signal.NONE
    previous = window.turns[window.new_from - 1] if window.new_from > 0 else None
    for turn in window.new_turns:
        if turn.expert_content.strip() or any(tool_failed(t) for t in turn.tools_used):
            return Signal.STRONG
        if is_user(turn) and not _trivial(turn.content):
            if previous is not None and is_agent(previous):
                return Signal.STRONG
            if _SELF_STATEMENT.search(turn.content):
                best = Signal.WEAK
        if is_agent(turn) and len(turn.tools_used) >= 3:
            best = Signal.WEAK
        previous = turn
    return best


# -- rendering -------------------------------------------------------------------------------------


def _clip(text: str, limit: int = MAX_TURN_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " [...]"


def _render_turn(turn: InteractionRecord) -> str:
    lines = [f"[#{turn.id}] {turn.role}: {_clip(turn.content)}"]
    if turn.user_action not in ("", "none"):
        lines.append(f"    user action: {turn.user_action} {_clip(turn.user_action_description, 300)}")
    for tool in turn.tools_used:
        data = _clip(json.dumps(tool.get("tool_data", {}), ensure_ascii=False, default=str), 300)
        lines.append(f"    tool: {tool.get('tool_name', '?')}({data}) -> {tool.get('status') or 'unknown'}")
    if turn.expert_content.strip():
        lines.append(f"    expert's ideal answer: {_clip(turn.expert_content)}")
    return "\n".join(lines)


def render_conversation(turns: Sequence[InteractionRecord], new_from: int = 0) -> str:
    """Turns as a model reads them: ``[#id] Role: text``, tools, expert answers, context marked."""
    parts = []
    if new_from > 0:
        parts.append("--- earlier turns (context only, already learned from) ---")
        parts.extend(_render_turn(t) for t in turns[:new_from])
        parts.append("--- new turns (learn from these) ---")
    parts.extend(_render_turn(t) for t in turns[new_from:])
    return "\n".join(parts)


def _rule_text(row: Learning | Proposal) -> str:
    if row.kind is LearningKind.PROFILE:
        return row.content
    return f"When: {row.trigger or '(any situation)'} | Do: {row.content}"


def _render_existing(ctx: LearnContext, kinds: Sequence[LearningKind]) -> tuple[str, frozenset[int]]:
    lines: list[str] = []
    seen: set[int] = set()
    for kind in kinds:
        rows = ctx.existing.get(kind, [])
        lines.append(f"{_KIND_NAMES.get(kind, kind.value).capitalize()}:")
        lines.extend(f"[{row.id}] {_rule_text(row)}" for row in rows)
        lines.append("(none)" if not rows else "")
        seen.update(row.id for row in rows)
    return "\n".join(lines).strip(), frozenset(seen)


def _org_values(config: Config, kinds: Sequence[LearningKind]) -> dict[str, str]:
    profile, playbook = config.profile_extractor_config, config.user_playbook_extractor_config
    features = profile.tagging_definition_prompt if profile else None
    # Each extractor's context_prompt adds to what the model is told about the agent.
    contexts = [
        config.agent_context_prompt,
        profile and profile.context_prompt,
        playbook and playbook.context_prompt,
    ]
    return {
        "agent_context": "\n".join(c.strip() for c in contexts if c and c.strip()) or "(not described)",
        "profile_definition": profile.extraction_definition_prompt if profile else "(not wanted)",
        "playbook_definition": playbook.extraction_definition_prompt if playbook else "(not wanted)",
        "kinds": " and ".join(_KIND_NAMES[k] for k in kinds if k in _KIND_NAMES),
        "tools": _render_tools(config),
        "profile_features": features or "none wanted; leave features empty.",
    }


def _render_tools(config: Config) -> str:
    tools = config.tool_can_use or []
    return "; ".join(f"{t.tool_name}: {t.tool_description}" for t in tools) or "(not described)"


# -- the proposer ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hint:
    """What the extraction call said about a proposal, and which learnings it was shown."""

    decision: Decision
    seen: frozenset[int]


class LLMProposer:
    """``Proposer`` over an ``LLM``: pre-gate, gate call only when needed, one extraction call.

    It remembers, per thread and for the latest window only, how the extraction related each
    proposal to the learnings it was shown; pass it to ``LLMJudge(hints=...)`` to reuse that.
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self._local = threading.local()

    def propose(self, window: Window, kinds: Sequence[LearningKind], ctx: LearnContext) -> list[Proposal]:
        """Proposals of ``kinds`` the window's new turns support (often none, at no cost)."""
        self._local.hints = {}
        signal = signal_of(window)
        if signal is Signal.NONE:
            return []
        if (
            signal is Signal.WEAK
            and not ctx.config.skip_should_run_check
            and not self._gate(window, kinds, ctx)
        ):
            return []
        existing, seen = _render_existing(ctx, kinds)
        values = {
            **_org_values(ctx.config, kinds),
            "existing": existing,
            "conversation": render_conversation(window.turns, window.new_from),
        }
        call = prompts.load("extract").call(
            Role.EXTRACTION,
            values,
            output=ExtractOutput,
            inputs={"window": window, "learning_kinds": tuple(kinds), "context": ctx},
            max_tokens=MAX_TOKENS["extract"],
        )
        try:
            output = self.llm.complete(call).value
        except LLMOutputError as exc:
            log.warning("extraction for user %s skipped a window: %s", window.user_id, exc)
            return []
        return self._proposals(output, window, kinds, seen)

    def hint_for(self, proposal: Proposal) -> Hint | None:
        """The extraction's relation for a proposal of the latest window on this thread."""
        entry = getattr(self._local, "hints", {}).get(id(proposal))
        return entry[1] if entry is not None and entry[0] is proposal else None

    def _gate(self, window: Window, kinds: Sequence[LearningKind], ctx: LearnContext) -> bool:
        values = {
            key: value
            for key, value in _org_values(ctx.config, kinds).items()
            if key in {"agent_context", "profile_definition", "playbook_definition", "kinds"}
        }
        profile = ctx.config.profile_extractor_config
        if profile is not None and profile.should_extract_profile_prompt_override:
            # The org's own words for what profile material is worth an extraction call.
            values["profile_definition"] = profile.should_extract_profile_prompt_override
        values["conversation"] = render_conversation(window.turns, window.new_from)
        call = prompts.load("gate").call(
            Role.GATE,
            values,
            output=GateOutput,
            inputs={"window": window, "learning_kinds": tuple(kinds), "context": ctx},
            max_tokens=MAX_TOKENS["gate"],
        )
        try:
            return self.llm.complete(call).value.learnable
        except LLMOutputError as exc:
            log.warning("gate answer unusable, extracting anyway: %s", exc)
            return True

    def _proposals(
        self, output: ExtractOutput, window: Window, kinds: Sequence[LearningKind], seen: frozenset[int]
    ) -> list[Proposal]:
        items: list[ProfileItem | PlaybookItem] = []
        if LearningKind.PROFILE in kinds:
            items.extend(output.profiles)
        if LearningKind.USER_PLAYBOOK in kinds:
            items.extend(output.playbooks)
        out = []
        for item in items:
            proposal = _proposal(item, window)
            if proposal is None:
                continue
            hint = _hint(item, seen)
            if hint is not None:
                self._local.hints[id(proposal)] = (proposal, hint)
            out.append(proposal)
        return out


def _evidence(cited: Sequence[int], window: Window) -> list[int] | None:
    """Provenance: the cited turns; None when only already-learned context is cited."""
    new_ids = [t.id for t in window.new_turns]
    in_window = {t.id for t in window.turns}
    known = [i for i in dict.fromkeys(cited) if i in in_window]
    if known and not set(known) & set(new_ids):
        return None
    return known or new_ids


def _proposal(item: ProfileItem | PlaybookItem, window: Window) -> Proposal | None:
    ids = _evidence(item.evidence, window)
    if ids is None:
        return None
    if isinstance(item, ProfileItem):
        return Proposal(
            kind=LearningKind.PROFILE,
            content=item.content.strip(),
            ttl=item.ttl,
            custom_features=dict(item.features) or None,
            source_interaction_ids=ids,
            track=item.type,
            tags=[STANDING_TAG] if item.standing else [],
        )
    if _tautological(item.trigger, item.content):
        return None
    return Proposal(
        kind=LearningKind.USER_PLAYBOOK,
        content=item.content.strip(),
        trigger=item.trigger.strip(),
        rationale=item.rationale.strip() or None,
        pitfall=item.pitfall,
        blocking_issue=item.blocking_issue.model_dump(mode="json") if item.blocking_issue else None,
        source_interaction_ids=ids,
        track=item.track,
        tags=[STANDING_TAG] if item.standing else [],
    )


def _tautological(trigger: str, content: str) -> bool:
    """An instruction that only restates its trigger ("when asked for X, do X") teaches nothing."""
    content_words = ranking.word_set(content)
    return bool(content_words) and content_words <= ranking.word_set(trigger)


def _hint(item: ProfileItem | PlaybookItem, seen: frozenset[int]) -> Hint | None:
    if item.relation == "new":
        return Hint(Decision(Verdict.ADD, reason="new per extraction"), seen)
    if item.existing_id is None or item.existing_id not in seen:
        return None
    reason = f"{item.relation} (extraction)"
    return Hint(Decision(_RELATIONS[item.relation], target=item.existing_id, reason=reason), seen)


# -- the judge -------------------------------------------------------------------------------------


class LLMJudge:
    """``Judge`` over an ``LLM``: one merge call per window, only for what is still undecided.

    Args:
        llm: The model for merge calls (extraction role).
        hints: An ``LLMProposer`` whose extraction relations are reused when they covered every
            similar learning the pipeline found.
    """

    def __init__(self, llm: LLM, *, hints: LLMProposer | None = None) -> None:
        self.llm = llm
        self.hints = hints

    def decide(self, proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> list[Decision]:
        """One decision per proposal; targets always come from that proposal's ``similar``."""
        decisions = [self._without_call(p, near) for p, near in zip(proposals, similar, strict=True)]
        ask = [i for i, d in enumerate(decisions) if d is None]
        if ask:
            merged = self._merge([proposals[i] for i in ask], [similar[i] for i in ask])
            for i, decision in zip(ask, merged, strict=True):
                decisions[i] = decision
        return [d or Decision(Verdict.ADD) for d in decisions]

    def _without_call(self, proposal: Proposal, near: Sequence[Learning]) -> Decision | None:
        if not near:
            return Decision(Verdict.ADD, reason="nothing similar is known")
        hint = self.hints.hint_for(proposal) if self.hints is not None else None
        if hint is not None and {row.id for row in near} <= hint.seen:
            return hint.decision
        return None

    def _merge(self, proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> list[Decision]:
        call = prompts.load("merge").call(
            Role.EXTRACTION,
            {"items": render_merge_items(proposals, similar)},
            output=MergeOutput,
            inputs={"proposals": tuple(proposals), "similar": tuple(tuple(s) for s in similar)},
            max_tokens=MAX_TOKENS["merge"],
        )
        try:
            output = self.llm.complete(call).value
        except LLMOutputError as exc:
            log.warning("merge answer unusable, adding the proposals: %s", exc)
            return [Decision(Verdict.ADD, reason="merge answer unusable") for _ in proposals]
        by_item = {d.item: d for d in output.decisions}
        out = []
        for number, near in enumerate(similar, 1):
            d = by_item.get(number)
            targets = {row.id for row in near}
            if d is None or d.verdict == "add" or d.existing_id not in targets:
                out.append(Decision(Verdict.ADD, reason=d.reason if d else "no merge decision"))
            else:
                out.append(
                    Decision(Verdict(d.verdict), target=d.existing_id, content=d.content, reason=d.reason)
                )
        return out


def render_merge_items(proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> str:
    """The merge prompt's data: each new learning, numbered, with its similar existing ones."""
    blocks = []
    for number, (proposal, near) in enumerate(zip(proposals, similar, strict=True), 1):
        kind = "profile" if proposal.kind is LearningKind.PROFILE else "playbook"
        lines = [f"NEW {number} ({kind}): {_rule_text(proposal)}"]
        for row in near:
            when = datetime.fromtimestamp(row.updated_at or row.created_at, UTC).strftime("%Y-%m-%d")
            lines.append(f"  EXISTING [{row.id}] (last updated {when}): {_rule_text(row)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# -- wiring and session evaluation ---------------------------------------------------------------


def llm_learner(llm: LLM) -> tuple[LLMProposer, LLMJudge]:
    """A proposer and a judge that share the extraction's relations."""
    proposer = LLMProposer(llm)
    return proposer, LLMJudge(llm, hints=proposer)


def window_learner(storage: Storage, config: Config, llm: LLM) -> WindowLearner:
    """What ``learn.windows.run_extraction`` calls per window, with the LLM extractor."""
    proposer, judge = llm_learner(llm)
    return lambda window: learn_window(storage, config, window, proposer, judge)


def judge_session(
    llm: LLM,
    config: Config,
    turns: Sequence[InteractionRecord],
    *,
    learnings: str = NO_LEARNINGS,
    inputs: Mapping[str, Any] | None = None,
) -> SessionJudgementOutput:
    """One call that judges a finished session (for the session-idle job).

    Args:
        learnings: The learnings the session's agent turns were given, one line each (see
            ``learn.attribution``), for the same call to judge them too; their verdicts come
            back in ``verdicts``.
        inputs: Domain objects behind ``learnings`` (recorded with the call).

    Raises:
        LLMError: The call failed.
    """
    success = config.agent_success_config
    values = {
        "agent_context": config.agent_context_prompt or "(not described)",
        "success_definition": success.success_definition_prompt if success else DEFAULT_SUCCESS_PROMPT,
        "tools": _render_tools(config),
        "learnings": learnings,
        "conversation": render_conversation(turns),
    }
    call = prompts.load("evaluate_session").call(
        Role.EVALUATION,
        values,
        output=SessionJudgementOutput,
        inputs={"turns": tuple(turns), "config": config, **(inputs or {})},
        max_tokens=MAX_TOKENS["evaluate_session"],
    )
    return llm.complete(call).value
