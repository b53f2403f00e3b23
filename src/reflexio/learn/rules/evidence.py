"""Lessons from evidence other than the user's words: expert answers and failed tool calls.

An expert answer teaches what the agent's answer lacked, so only the expert's clauses whose
content words the agent's answer (and the request) did not already have are kept; wording and
style differences share their content words and drop out. Specific identifiers (paths, ids,
numbers) do not count towards novelty, since "tests/test_login.py" is this task's detail and
"run the targeted test" is the lesson. First-person past steps ("I ran the targeted test")
become instructions ("Run the targeted test").

A failed tool call teaches which call not to repeat, and, when a later call of another tool
or with other arguments succeeded, what to do instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reflexio.learn.rules.lexicon import FAILURE_WORDS, SUCCESS_WORDS
from reflexio.learn.rules.phrasing import join_clauses, lower_first
from reflexio.learn.rules.text import base_form, capitalize, informative, is_past, sentences, shorten, trim

__all__ = [
    "ToolCall",
    "ToolLesson",
    "as_instruction",
    "call_text",
    "combine",
    "expert_gap",
    "failed",
    "tool_calls",
    "tool_lessons",
]

#: Share of a clause's content words that must be new for it to count as substantive.
NOVELTY = 0.5
#: At most this many clauses of an expert answer make one lesson.
MAX_CLAUSES = 4

_CLAUSE = re.compile(
    r",\s*(?:and\s+)?then\s+|;\s*|\s+and then\s+|,\s+and\s+|\s+and\s+(?=[a-z]+ed\b)|,\s+(?=[a-z]+ed\b)", re.I
)
_SUBJECT = re.compile(
    r"^(?:first|then|next|finally|also|after that|afterwards|so)?[\s,]*(?:I|we)(?:'d| would| will|'ll)?\s+"
    r"(?:also\s+|then\s+|first\s+)?",
    re.I,
)
_WARNS = re.compile(r"^(?:Mention: )?(?:never|don't|do not|avoid|not)\b", re.I)
_YOU = re.compile(r"^(?:you (?:should|need to|must|have to|can)|make sure to|be sure to)\s+", re.I)


def expert_gap(request: str, answer: str, expert: str) -> list[str]:
    """The expert's clauses that add substance missing from the agent's answer, as instructions.

    A clause that forbids what the answer did ("never edit passwords in config files" against
    "edit config.yaml") is substance too, although it shares the answer's words.
    """
    clauses = [as_instruction(c) for s in sentences(expert) for c in _CLAUSE.split(s)]
    novel = _novel(clauses, answer, request)
    done = _content(answer)
    forbids = [c for c in clauses if c not in novel and _WARNS.match(c) and _content(c) & done]
    kept = [c for c in clauses if c in novel or c in forbids][:MAX_CLAUSES]
    return [capitalize(c.removeprefix("Mention: ")) if _WARNS.match(c) else c for c in kept]


def _novel(clauses: Sequence[str], *known_texts: str) -> list[str]:
    known = frozenset().union(*(_content(t) for t in known_texts))
    out: list[str] = []
    for clause in clauses:
        stems = _content(clause.removeprefix("Mention: "))
        if stems and len(stems - known) / len(stems) > NOVELTY:
            out.append(clause)
            known |= stems
    return out[:MAX_CLAUSES]


def _content(text: str) -> frozenset[str]:
    """Content words without identifiers: "tests/test_login.py" and "v2.3" are details."""
    plain = " ".join(w for w in re.split(r"\s+", text) if not re.search(r"[\d_/\\.]\w", w))
    return informative(plain)


def as_instruction(clause: str) -> str:
    """ "I ran the targeted test" → "Run the targeted test"; a statement → "Mention: ..."."""
    body = _YOU.sub("", _SUBJECT.sub("", trim(clause)))
    head, _, rest = body.partition(" ")
    base = base_form(head)
    if base is not None and (is_past(head) or head.lower() == base):
        return capitalize(f"{base} {rest}".strip())
    return f"Mention: {lower_first(body)}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an agent turn, in order, with whether it failed."""

    name: str
    data: Mapping[str, Any]
    status: str
    turn_id: int

    @property
    def failed(self) -> bool:
        """Whether the call's status says it failed."""
        return failed(self.status, self.data)


@dataclass(frozen=True, slots=True)
class ToolLesson:
    """What a failed call teaches: the rule, what went wrong, and the blocking issue."""

    content: str
    pitfall: str
    details: str
    turn_id: int
    tool: str


def failed(status: str, data: Mapping[str, Any] | None = None) -> bool:
    """Whether a free-form tool status (or an ``error`` in its data) means failure."""
    low = str(status).strip().lower()
    if low.isdigit():
        return int(low) >= 400
    if any(w in low for w in FAILURE_WORDS):
        return not any(low == w for w in SUCCESS_WORDS)
    return not low and bool(data and (data.get("error") or data.get("exception")))


def tool_calls(tools: Sequence[Mapping[str, Any]], turn_id: int) -> list[ToolCall]:
    """The calls of one turn as ``ToolCall`` values (malformed entries skipped)."""
    out = []
    for tool in tools:
        name = str(tool.get("tool_name") or tool.get("name") or "").strip()
        data = tool.get("tool_data") or {}
        if name:
            out.append(
                ToolCall(
                    name,
                    data if isinstance(data, Mapping) else {"value": data},
                    str(tool.get("status") or ""),
                    turn_id,
                )
            )
    return out


def tool_lessons(calls: Sequence[ToolCall]) -> list[ToolLesson]:
    """One lesson per failed call: use what worked after it, or do not repeat it."""
    lessons: list[ToolLesson] = []
    seen: set[tuple[str, str]] = set()
    for i, call in enumerate(calls):
        if not call.failed or (call.name, _args(call.data)) in seen:
            continue
        seen.add((call.name, _args(call.data)))
        fix = next((c for c in calls[i + 1 :] if not c.failed), None)
        lessons.append(_lesson(call, fix))
    return lessons


def _lesson(bad: ToolCall, fix: ToolCall | None) -> ToolLesson:
    error = _error(bad)
    details = f"{bad.name}({_args(bad.data)}) failed: {error}"
    pitfall = f"Calling {bad.name} with {_args(bad.data) or 'these arguments'} failed ({error})"
    if fix is not None and fix.name != bad.name:
        content = f"Use {fix.name} ({_args(fix.data)}) instead of {bad.name}, which failed ({error})"
    elif fix is not None:
        good, wrong = _changed(bad.data, fix.data), _changed(fix.data, bad.data)
        content = f"Call {bad.name} with {good or _args(fix.data)}, not {wrong or _args(bad.data)} ({error})"
    else:
        content = f"{bad.name} failed with {_args(bad.data) or 'these arguments'} ({error}); change the call"
    return ToolLesson(
        shorten(content, 300), shorten(pitfall, 200), shorten(details, 300), bad.turn_id, bad.name
    )


_NOT_ARGS = frozenset({"error", "exception", "message", "result", "reason", "detail", "status"})


def call_text(call: ToolCall) -> str:
    """ "name(arg=value, ...)": a call as a lesson names it."""
    return f"{call.name}({_args(call.data)})"


def _args(data: Mapping[str, Any]) -> str:
    parts = [f"{k}={_value(v)}" for k, v in data.items() if k not in _NOT_ARGS]
    return shorten(", ".join(parts), 120)


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str, sort_keys=True)


def _changed(base: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """The arguments of ``other`` that differ from ``base`` (error fields left out)."""
    return ", ".join(f"{k}={_value(v)}" for k, v in other.items() if base.get(k) != v and k not in _NOT_ARGS)


def _error(call: ToolCall) -> str:
    for key in ("error", "exception", "message", "reason", "detail"):
        value = call.data.get(key)
        if value:
            return shorten(_value(value), 100)
    return call.status or "failed"


def combine(correction: str, extra: Sequence[str]) -> str:
    """A correction with an expert's extra points that it does not already say."""
    new = _novel(extra, correction)
    if not new:
        return correction
    return f"{trim(correction)}. Also: {lower_first(join_clauses(new))}"
