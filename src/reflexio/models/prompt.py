"""Turning retrieved learnings into prompt text within a token budget, with matching attribution.

An agent that injects learnings must later report exactly which ones it injected
(``retrieved_learnings`` on its next publish), or evaluation credits the wrong rules. The
safest way to keep the two in step is to produce both from one selection, here: whatever is
dropped for the budget is dropped from the attribution too.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pydantic import ConfigDict, Field

from reflexio.models.entities import RetrievedLearning, RetrievedLearningKind
from reflexio.models.fields import WireModel

__all__ = ["STANDING_TAG", "PromptBlock", "PromptItem", "estimate_tokens", "pack_prompt", "rule_line"]

#: The reserved tag of a *standing* learning: a preference that applies to every answer for its
#: user (language, units, time zone, length, tone, format, accessibility). Search serves a
#: user's standing learnings whatever the query, and a prompt budget keeps them first.
STANDING_TAG: Final = "standing"

RULES_HEADER: Final = "Rules to follow:"
FACTS_HEADER: Final = "Facts about the user:"
_KIND_ORDER: Final[dict[RetrievedLearningKind, int]] = {
    "agent_playbook": 0,
    "user_playbook": 1,
    "profile": 2,
}


def estimate_tokens(text: str) -> int:
    """Estimate how many LLM tokens ``text`` costs: one per four characters, rounded up.

    Deliberately crude and tokenizer-free so that the client, the server and the search
    code agree on the same number without loading a model.
    """
    return -(-len(text) // 4)


class PromptBlock(WireModel):
    """Learnings rendered for a prompt, plus the references to publish for exactly those.

    ``tokens`` is ``estimate_tokens(text)``.
    """

    model_config = ConfigDict(frozen=True)

    text: str = ""
    retrieved_learnings: list[RetrievedLearning] = Field(default_factory=list)
    tokens: int = 0


@dataclass(frozen=True)
class PromptItem:
    """One learning ready to render: its reference, its single line of text, and its score."""

    kind: RetrievedLearningKind
    learning_id: str
    line: str
    score: float | None = None
    standing: bool = False

    @property
    def is_fact(self) -> bool:
        """Profiles render as facts about the user; playbooks render as rules."""
        return self.kind == "profile"


#: First words of a trigger that already states its situation ("When a fix is reported as
#: done", "Before restarting a server", "In conversations with this user"): such a trigger is
#: rendered as written, where a bare one ("the user asks for a laptop") gets "When" in front.
_SITUATION_OPENERS: Final = frozenset(
    {"when", "whenever", "if", "before", "after", "while", "during", "once", "unless", "until",
     "for", "on", "in", "at", "upon", "as"}
)  # fmt: skip


def rule_line(trigger: str | None, content: str) -> str:
    """Render a playbook as one line: ``When <trigger>: <content>``, or its content alone.

    Triggers come both as bare situations and as clauses that open with their own "When",
    "Before", "If"... (the extraction prompt asks for the latter, the rule extractor writes
    "When the user asks: ..."); only the bare ones get the "When" prefix, so no line reads
    "When When ...".
    """
    trigger_text, content_text = _one_line(trigger or ""), _one_line(content)
    if trigger_text and content_text:
        return f"{_situation(trigger_text)}: {content_text}"
    return content_text or trigger_text


def _situation(trigger: str) -> str:
    """A trigger as a clause that starts a sentence: ``When <trigger>`` unless it opens one itself."""
    first = trigger.split(maxsplit=1)[0].strip(",:;").lower() if trigger.strip() else ""
    if first in _SITUATION_OPENERS:
        return trigger[:1].upper() + trigger[1:]
    return f"When {trigger}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def pack_prompt(items: Sequence[PromptItem], max_tokens: int | None = None) -> PromptBlock:
    """Keep the best-scored items that fit in ``max_tokens`` and render them.

    Standing items come first (they apply to every answer, whatever their relevance score);
    the others follow in score order across kinds (unscored last; ties go agent playbook,
    user playbook, profile, then input order). An item that would overflow the budget is
    skipped whole and smaller ones after it may still fit. ``None`` means no budget.

    Raises:
        ValueError: If ``max_tokens`` is negative.
    """
    if max_tokens is not None and max_tokens < 0:
        raise ValueError("max_tokens must not be negative")
    kept: list[PromptItem] = []
    for item in _ranked([item for item in items if item.line]):
        trial = [*kept, item]
        if max_tokens is None or estimate_tokens(_render(trial)) <= max_tokens:
            kept = trial
    ordered = _in_render_order(kept)
    text = _render(ordered)
    return PromptBlock(
        text=text,
        retrieved_learnings=[
            RetrievedLearning(kind=item.kind, learning_id=item.learning_id) for item in ordered
        ],
        tokens=estimate_tokens(text),
    )


def _ranked(items: list[PromptItem]) -> list[PromptItem]:
    def key(position: int) -> tuple[bool, bool, float, int, int]:
        item = items[position]
        score = -item.score if item.score is not None else 0.0
        return (not item.standing, item.score is None, score, _KIND_ORDER[item.kind], position)

    return [items[position] for position in sorted(range(len(items)), key=key)]


def _in_render_order(kept: list[PromptItem]) -> list[PromptItem]:
    return [item for item in kept if not item.is_fact] + [item for item in kept if item.is_fact]


def _render(items: list[PromptItem]) -> str:
    rules = [f"- {item.line}" for item in items if not item.is_fact]
    facts = [f"- {item.line}" for item in items if item.is_fact]
    sections = []
    if rules:
        sections.append("\n".join([RULES_HEADER, *rules]))
    if facts:
        sections.append("\n".join([FACTS_HEADER, *facts]))
    return "\n\n".join(sections)
