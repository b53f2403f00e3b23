"""Learnings as prompt text within a token budget: the rendering rules, in the standard library only.

``reflexio.models.prompt`` wraps these into the ``PromptBlock`` the SDK returns; hooks that must
start in milliseconds (the Claude Code prompt hook) use them directly, without pydantic, so the
text an agent sees is rendered by one set of rules whichever path produced it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` and ``dataclasses`` cost the Claude Code hook its start-up budget
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Final, Literal, TypeAlias

    #: The kinds a prompt item can be (the ``kind`` of a ``retrieved_learnings`` entry).
    LearningRef: TypeAlias = Literal["profile", "user_playbook", "agent_playbook"]

__all__ = [
    "FACTS_HEADER",
    "QUERY_CHARS",
    "RULES_HEADER",
    "STANDING_TAG",
    "PromptItem",
    "estimate_tokens",
    "pack",
    "rule_line",
    "search_query",
]

#: The reserved tag of a *standing* learning: a preference that applies to every answer for its
#: user (language, units, time zone, length, tone, format, accessibility). Search serves a
#: user's standing learnings whatever the query, and a prompt budget keeps them first.
STANDING_TAG: Final = "standing"
RULES_HEADER: Final = "Rules to follow:"
FACTS_HEADER: Final = "Facts about the user:"

_KIND_ORDER: Final[dict[str, int]] = {"agent_playbook": 0, "user_playbook": 1, "profile": 2}

#: The most characters of a prompt an integration searches with: its head and its tail, where a
#: prompt says what it wants around what it pastes ("fix this:" before a log, "why?" after it).
#: The server embeds only a window of a query's head and tail anyway, full-text search over a
#: whole pasted file costs time the user waits for, and the API refuses queries past 10,000.
QUERY_CHARS: Final = 4000


def search_query(prompt: str) -> str:
    """What an agent's integration searches with: the prompt, or its head and tail when it is
    longer than ``QUERY_CHARS``."""
    if len(prompt) <= QUERY_CHARS:
        return prompt
    half = QUERY_CHARS // 2
    return f"{prompt[:half]}\n{prompt[-half:]}"


def estimate_tokens(text: str) -> int:
    """Estimate how many LLM tokens ``text`` costs: one per four characters, rounded up.

    Deliberately crude and tokenizer-free so that the client, the server and the search
    code agree on the same number without loading a model.
    """
    return -(-len(text) // 4)


class PromptItem:
    """One learning ready to render: its reference, its single line of text, and its score.

    A plain immutable class rather than a dataclass, so the prompt hook need not import
    ``dataclasses`` (see the module docstring); it compares and hashes by its fields.
    """

    __slots__ = ("kind", "learning_id", "line", "score", "standing")

    kind: LearningRef
    learning_id: str
    line: str
    score: float | None
    standing: bool

    def __init__(
        self,
        kind: LearningRef,
        learning_id: str,
        line: str,
        score: float | None = None,
        standing: bool = False,
    ) -> None:
        for name, value in zip(self.__slots__, (kind, learning_id, line, score, standing), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PromptItem is immutable: cannot set {name!r}")

    def _fields(self) -> tuple[str, str, str, float | None, bool]:
        return (self.kind, self.learning_id, self.line, self.score, self.standing)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PromptItem) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        kind, learning_id, line, score, standing = self._fields()
        return f"PromptItem({kind=!r}, {learning_id=!r}, {line=!r}, {score=!r}, {standing=!r})"

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


def pack(items: Sequence[PromptItem], max_tokens: int | None = None) -> tuple[list[PromptItem], str]:
    """Keep the best-scored items that fit in ``max_tokens``; returns them and their text.

    Standing items come first (they apply to every answer, whatever their relevance score);
    the others follow in score order across kinds (unscored last; ties go agent playbook,
    user playbook, profile, then input order). An item that would overflow the budget is
    skipped whole and smaller ones after it may still fit. ``None`` means no budget. The
    kept items come back in the order they are rendered (rules, then facts).

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
    ordered = [item for item in kept if not item.is_fact] + [item for item in kept if item.is_fact]
    return ordered, _render(ordered)


def _ranked(items: list[PromptItem]) -> list[PromptItem]:
    def key(position: int) -> tuple[bool, bool, float, int, int]:
        item = items[position]
        score = -item.score if item.score is not None else 0.0
        return (not item.standing, item.score is None, score, _KIND_ORDER[item.kind], position)

    return [items[position] for position in sorted(range(len(items)), key=key)]


def _render(items: list[PromptItem]) -> str:
    rules = [f"- {item.line}" for item in items if not item.is_fact]
    facts = [f"- {item.line}" for item in items if item.is_fact]
    sections = []
    if rules:
        sections.append("\n".join([RULES_HEADER, *rules]))
    if facts:
        sections.append("\n".join([FACTS_HEADER, *facts]))
    return "\n\n".join(sections)
