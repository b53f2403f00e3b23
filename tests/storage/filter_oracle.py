"""The reference semantics of ``LearningFilter`` on one row: the contract suite's oracle.

Storage compiles filters to SQL and the SQLite search index to numpy masks; both must select
exactly the rows this plain interpreter says match (``test_contract_learnings``).
"""

from __future__ import annotations

from collections.abc import Callable

from reflexio.filters import LearningFilter
from reflexio.records import Learning, LearningKind


def matches(f: LearningFilter, row: Learning) -> bool:
    """Whether ``row`` is one of the rows ``f`` selects."""
    return all(check(f, row) for check in _CHECKS)


def _kind(f: LearningFilter, r: Learning) -> bool:
    return not f.kinds or r.kind in f.kinds


def _ids(f: LearningFilter, r: Learning) -> bool:
    return f.ids is None or r.id in f.ids


def _profile_ids(f: LearningFilter, r: Learning) -> bool:
    return f.profile_ids is None or r.profile_id in f.profile_ids


def _scope(f: LearningFilter, r: Learning) -> bool:
    return (
        (f.user_id is None or r.user_id == f.user_id)
        and (f.agent_version is None or r.agent_version == f.agent_version)
        and (f.playbook_name is None or r.playbook_name == f.playbook_name)
        and (f.request_id is None or r.request_id == f.request_id)
    )


def _status(f: LearningFilter, r: Learning) -> bool:
    if f.statuses is not None and r.status not in f.statuses:
        return False
    if f.approvals is not None and r.kind is LearningKind.AGENT_PLAYBOOK:
        return r.approval in f.approvals
    return True


def _source(f: LearningFilter, r: Learning) -> bool:
    return f.source is None or (r.source or "").lower() == f.source.lower()


def _tags(f: LearningFilter, r: Learning) -> bool:
    return f.tags is None or bool(set(f.tags) & set(r.tags))


def _times(f: LearningFilter, r: Learning) -> bool:
    return (
        (f.created_after is None or r.created_at >= f.created_after)
        and (f.created_before is None or r.created_at <= f.created_before)
        and (f.updated_after is None or r.updated_at >= f.updated_after)
        and (f.updated_before is None or r.updated_at <= f.updated_before)
        and (f.active_at is None or r.expires_at > f.active_at)
        and (f.expired_at is None or r.expires_at <= f.expired_at)
    )


_CHECKS: tuple[Callable[[LearningFilter, Learning], bool], ...] = (
    _kind,
    _ids,
    _profile_ids,
    _scope,
    _status,
    _source,
    _tags,
    _times,
)
