"""Checking the learnings a publish says were injected (``retrieved_learnings``).

References are stored as sent: they are the caller's record of what its prompt held, and a
learning deleted since the search still was in that prompt. But a reference that names
nothing this org ever had (a typo, an id from another org or server, a playbook id that is
not a number) can never be credited or blamed, so the publish answers with a warning for
it, in ``warnings``, as it does for unknown fields. One indexed lookup per kind, and none at
all for the (common) publish that carries no references.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from reflexio.filters import LearningFilter
from reflexio.models import PublishUserInteractionRequest, RetrievedLearning
from reflexio.records import Learning, LearningKind
from reflexio.storage import Storage

__all__ = ["reference_warnings"]

_KINDS: Final = {
    "profile": LearningKind.PROFILE,
    "user_playbook": LearningKind.USER_PLAYBOOK,
    "agent_playbook": LearningKind.AGENT_PLAYBOOK,
}
#: Lines of warnings at most; the references themselves are all stored.
_MAX_LINES: Final = 20
#: References named per line at most.
_MAX_NAMED: Final = 5


@dataclass(frozen=True, slots=True)
class _Ref:
    turn: int  # index in the list as the caller sent it
    ref: RetrievedLearning


def reference_warnings(storage: Storage, org_id: str, req: PublishUserInteractionRequest) -> list[str]:
    """One warning line per turn whose references name learnings this org does not have.

    A profile or user playbook of another user is reported too: it cannot have been served
    to this user.
    """
    refs = list(_refs(req))
    if not refs:
        return []
    known = _known(storage, org_id, refs)
    problems: dict[int, list[str]] = {}
    for item in refs:
        row = known.get((item.ref.kind, item.ref.learning_id))
        if row is None:
            problems.setdefault(item.turn, []).append(f"{_name(item.ref)} (not in this org)")
        elif row.kind is not LearningKind.AGENT_PLAYBOOK and row.user_id != req.user_id:
            problems.setdefault(item.turn, []).append(f"{_name(item.ref)} (another user's)")
    lines = [_line(turn, names) for turn, names in sorted(problems.items())]
    if len(lines) > _MAX_LINES:
        lines = [*lines[:_MAX_LINES], f"...and {len(lines) - _MAX_LINES} more interaction(s) like these"]
    return lines


def _refs(req: PublishUserInteractionRequest) -> Iterable[_Ref]:
    for position, turn in zip(req.sent_positions(), req.interaction_data_list, strict=True):
        for ref in turn.retrieved_learnings:
            yield _Ref(position, ref)


def _known(storage: Storage, org_id: str, refs: list[_Ref]) -> dict[tuple[str, str], Learning]:
    """The referenced learnings that exist, by (wire kind, wire id)."""
    profile_ids = tuple({r.ref.learning_id for r in refs if r.ref.kind == "profile"})
    numeric = tuple(
        {int(r.ref.learning_id) for r in refs if r.ref.kind != "profile" and r.ref.learning_id.isdigit()}
    )
    rows: list[Learning] = []
    if profile_ids:
        rows += storage.get_learnings(
            org_id, LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=profile_ids)
        )
        # A profile without a caller-chosen id is referenced by its number.
        digits = tuple(int(i) for i in profile_ids if i.isdigit())
        if digits:
            rows += storage.get_learnings(org_id, LearningFilter(kinds=(LearningKind.PROFILE,), ids=digits))
    if numeric:
        kinds = (LearningKind.USER_PLAYBOOK, LearningKind.AGENT_PLAYBOOK)
        rows += storage.get_learnings(org_id, LearningFilter(kinds=kinds, ids=numeric))
    wire_kind = {kind: name for name, kind in _KINDS.items()}
    return {(wire_kind[row.kind], row.wire_id): row for row in rows}


def _name(ref: RetrievedLearning) -> str:
    return f"{ref.kind} {ref.learning_id[:64]!r}"


def _line(turn: int, names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMED])
    more = f", +{len(names) - _MAX_NAMED} more" if len(names) > _MAX_NAMED else ""
    return (
        f"interaction_data_list[{turn}].retrieved_learnings: stored as sent, but evaluation can "
        f"neither credit nor blame {shown}{more}"
    )
