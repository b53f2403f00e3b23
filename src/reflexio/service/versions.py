"""Moving learnings between versions: upgrade (pending → current) and downgrade (swap back).

A rerun (``service.rerun``) leaves its output pending; these use cases make it live or undo
that, each in one storage transaction, so a crash never strands rows half-moved (Reflexio's
were multi-step and could leave ARCHIVE_IN_PROGRESS rows behind, W31):

* **upgrade**: ARCHIVED → ``superseded`` tombstones (kept in history, never deleted; the wire
  reports them as ``*_deleted``), CURRENT → ARCHIVED, PENDING → CURRENT. User playbooks with
  ``archive_current=False`` only promote. Like Reflexio it requires pending rows in scope;
  without any it raises ``ConflictError`` (409) where Reflexio answered 200 ``success: false``.
  While a rerun of the same extractor is queued or running it is a 409 too: promoting then
  would make a partial set live.
* **downgrade**: CURRENT ↔ ARCHIVED, swapped through ARCHIVE_IN_PROGRESS inside the
  transaction; PENDING is untouched. It requires archived rows in scope (409 otherwise) and
  is its own inverse.
* **scope** (Reflexio ignored it and acted org-wide). Profiles: ``user_id``; ``profile_ids``
  narrows every step to the listed rows; ``only_affected_users`` limits the steps to users
  that have rows to promote (upgrade: pending) or to restore (downgrade: archived), so other
  users keep their current rows. User playbooks: ``agent_version`` and ``playbook_name``.

Every move is an ``update_learnings`` with an audit (actor ``upgrade`` or ``downgrade``, the
caller in the reason), so each row's history says what moved it and who asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reflexio.errors import ConflictError
from reflexio.filters import LearningFilter
from reflexio.learn.aggregation_trigger import DEBOUNCE_SECONDS, delay_of, enqueue_aggregations
from reflexio.models import (
    DowngradeProfilesRequest,
    DowngradeProfilesResponse,
    DowngradeUserPlaybooksRequest,
    DowngradeUserPlaybooksResponse,
    UpgradeProfilesRequest,
    UpgradeProfilesResponse,
    UpgradeUserPlaybooksRequest,
    UpgradeUserPlaybooksResponse,
)
from reflexio.records import Audit, JobStatus, LearningKind, LearningStatus
from reflexio.service.core import Core
from reflexio.service.rerun import RERUN
from reflexio.storage import Storage

__all__ = ["downgrade_profiles", "downgrade_user_playbooks", "upgrade_profiles", "upgrade_user_playbooks"]

_CURRENT, _PENDING, _ARCHIVED = LearningStatus.CURRENT, LearningStatus.PENDING, LearningStatus.ARCHIVED


@dataclass(frozen=True, slots=True)
class _Scope:
    """The learnings an upgrade or downgrade may move (``None`` = any)."""

    kind: LearningKind
    user_id: str | None = None
    profile_ids: tuple[str, ...] | None = None
    agent_version: str | None = None
    playbook_name: str | None = None

    def where(self, status: LearningStatus) -> LearningFilter:
        return LearningFilter(
            kinds=(self.kind,),
            user_id=self.user_id,
            profile_ids=self.profile_ids,
            agent_version=self.agent_version,
            playbook_name=self.playbook_name,
            statuses=(status,),
        )


def _scopes(tx: Storage, org_id: str, scope: _Scope, status: LearningStatus, affected: bool) -> list[_Scope]:
    """The scope itself, or one scope per user that has rows of ``status`` in it."""
    if not affected:
        return [scope]
    users = {r.user_id for r in tx.get_learnings(org_id, scope.where(status)) if r.user_id is not None}
    return [replace(scope, user_id=user) for user in sorted(users)]


def _move(
    tx: Storage,
    org_id: str,
    scopes: Sequence[_Scope],
    old: LearningStatus,
    new: LearningStatus,
    audit: Audit,
    delay: float = DEBOUNCE_SECONDS,
) -> int:
    """Set ``new`` on every row of status ``old`` in the scopes; how many moved.

    User playbooks that become current change what their scopes generalise: their
    aggregation is queued in the same transaction (debounced like any other change).
    """
    moved = [i for s in scopes for i in tx.update_learnings(org_id, s.where(old), {"status": new}, audit)]
    if new is _CURRENT and moved:
        rows = tx.get_learnings(org_id, LearningFilter(ids=tuple(moved)))
        enqueue_aggregations(tx, org_id, rows, delay=delay)
    return len(moved)


def _has(tx: Storage, org_id: str, scopes: Sequence[_Scope], status: LearningStatus) -> bool:
    return any(tx.count_learnings(org_id, s.where(status)) for s in scopes)


def _upgrade(
    core: Core, org_id: str, scope: _Scope, *, affected: bool, archive_current: bool, actor: str
) -> tuple[int, int, int]:
    """(retired, archived, promoted) after promoting pending rows, in one transaction.

    Raises:
        ConflictError: Nothing pending in scope.
    """
    audit = Audit(actor="upgrade", reason=f"upgrade requested by {actor}")
    delay = delay_of(core.org_config(org_id))
    with core.storage.transaction() as tx:
        _refuse_during_rerun(tx, org_id, scope.kind)
        scopes = _scopes(tx, org_id, scope, _PENDING, affected)
        if not _has(tx, org_id, scopes, _PENDING):
            raise ConflictError(f"no pending {_noun(scope.kind)} to upgrade in this scope")
        retired = archived = 0
        if archive_current:
            retired = _move(tx, org_id, scopes, _ARCHIVED, LearningStatus.SUPERSEDED, audit)
            archived = _move(tx, org_id, scopes, _CURRENT, _ARCHIVED, audit)
        promoted = _move(tx, org_id, scopes, _PENDING, _CURRENT, audit, delay)
    return retired, archived, promoted


def _refuse_during_rerun(tx: Storage, org_id: str, kind: LearningKind) -> None:
    """A rerun still writing its pending output must finish first: upgrading now would make a
    partial set live (the users it has not reached yet would lose their current rows).

    Raises:
        ConflictError: A rerun of that extractor is queued or running.
    """
    extractor = "profile" if kind is LearningKind.PROFILE else "playbook"
    active = tx.list_jobs(
        org_id, statuses=[JobStatus.QUEUED, JobStatus.RUNNING], task=RERUN, key=extractor, limit=1
    )
    if not active:
        return
    job = active[0]
    done, total = int(job.progress.get("processed_users", 0)), int(job.progress.get("total_users", 0))
    where = f"{done} of {total} users done" if total else "not started yet"
    service = "profile_generation" if extractor == "profile" else "playbook_generation"
    raise ConflictError(
        f"a {extractor} rerun is still in progress (job {job.id}, {where}): upgrading now would "
        f"promote a partial set; upgrade once get_operation_status?service_name={service} "
        "reports it completed or failed",
        details={"job_id": job.id, "service_name": service},
    )


def _downgrade(core: Core, org_id: str, scope: _Scope, *, affected: bool, actor: str) -> tuple[int, int]:
    """(demoted, restored) after swapping current and archived rows, in one transaction.

    Raises:
        ConflictError: Nothing archived in scope.
    """
    audit = Audit(actor="downgrade", reason=f"downgrade requested by {actor}")
    delay = delay_of(core.org_config(org_id))
    with core.storage.transaction() as tx:
        scopes = _scopes(tx, org_id, scope, _ARCHIVED, affected)
        if not _has(tx, org_id, scopes, _ARCHIVED):
            raise ConflictError(f"no archived {_noun(scope.kind)} to restore in this scope")
        demoted = _move(tx, org_id, scopes, _CURRENT, LearningStatus.ARCHIVE_IN_PROGRESS, audit)
        restored = _move(tx, org_id, scopes, _ARCHIVED, _CURRENT, audit, delay)
        _move(tx, org_id, scopes, LearningStatus.ARCHIVE_IN_PROGRESS, _ARCHIVED, audit)
    return demoted, restored


def _noun(kind: LearningKind) -> str:
    return "profiles" if kind is LearningKind.PROFILE else "user playbooks"


def upgrade_profiles(
    core: Core, org_id: str, req: UpgradeProfilesRequest, *, actor: str = "api"
) -> UpgradeProfilesResponse:
    """Promote pending profiles; current ones are archived, archived ones retired.

    Raises:
        ConflictError: No pending profile in scope.
    """
    scope = _Scope(LearningKind.PROFILE, user_id=req.user_id or None, profile_ids=_ids(req.profile_ids))
    retired, archived, promoted = _upgrade(
        core, org_id, scope, affected=req.only_affected_users, archive_current=True, actor=actor
    )
    return UpgradeProfilesResponse(
        success=True,
        profiles_deleted=retired,
        profiles_archived=archived,
        profiles_promoted=promoted,
        message=f"Promoted {promoted} profile(s), archived {archived}, retired {retired} archived",
    )


def downgrade_profiles(
    core: Core, org_id: str, req: DowngradeProfilesRequest, *, actor: str = "api"
) -> DowngradeProfilesResponse:
    """Swap current and archived profiles back (undoes an upgrade; pending ones stay).

    Raises:
        ConflictError: No archived profile in scope.
    """
    scope = _Scope(LearningKind.PROFILE, user_id=req.user_id or None, profile_ids=_ids(req.profile_ids))
    demoted, restored = _downgrade(core, org_id, scope, affected=req.only_affected_users, actor=actor)
    return DowngradeProfilesResponse(
        success=True,
        profiles_demoted=demoted,
        profiles_restored=restored,
        message=f"Restored {restored} archived profile(s), archived {demoted} current",
    )


def upgrade_user_playbooks(
    core: Core, org_id: str, req: UpgradeUserPlaybooksRequest, *, actor: str = "api"
) -> UpgradeUserPlaybooksResponse:
    """Promote pending user playbooks (archiving the current ones unless told not to).

    Raises:
        ConflictError: No pending user playbook in scope.
    """
    scope = _playbook_scope(req.agent_version, req.playbook_name)
    retired, archived, promoted = _upgrade(
        core, org_id, scope, affected=False, archive_current=req.archive_current, actor=actor
    )
    return UpgradeUserPlaybooksResponse(
        success=True,
        user_playbooks_deleted=retired,
        user_playbooks_archived=archived,
        user_playbooks_promoted=promoted,
        message=f"Promoted {promoted} user playbook(s), archived {archived}, retired {retired} archived",
    )


def downgrade_user_playbooks(
    core: Core, org_id: str, req: DowngradeUserPlaybooksRequest, *, actor: str = "api"
) -> DowngradeUserPlaybooksResponse:
    """Swap current and archived user playbooks back (pending ones stay).

    Raises:
        ConflictError: No archived user playbook in scope.
    """
    scope = _playbook_scope(req.agent_version, req.playbook_name)
    demoted, restored = _downgrade(core, org_id, scope, affected=False, actor=actor)
    return DowngradeUserPlaybooksResponse(
        success=True,
        user_playbooks_demoted=demoted,
        user_playbooks_restored=restored,
        message=f"Restored {restored} archived user playbook(s), archived {demoted} current",
    )


def _ids(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _playbook_scope(agent_version: str | None, playbook_name: str | None) -> _Scope:
    return _Scope(
        LearningKind.USER_PLAYBOOK, agent_version=agent_version or None, playbook_name=playbook_name or None
    )
