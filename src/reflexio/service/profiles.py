"""Add, read, edit and delete user profiles; their statistics and their change log.

``get_profiles`` with no status filter shows what an agent should believe now: current and
unexpired profiles. The change log is not a table of its own: it is rebuilt from the
learning history that every write records, so it can never disagree with what happened.
``delete_profile`` with a ``search_query`` really deletes the matching profiles (Reflexio
accepted the request and did nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reflexio.errors import ValidationError
from reflexio.filters import ACTIVE_STATUSES, LearningFilter
from reflexio.models import (
    AddUserProfileRequest,
    AddUserProfileResponse,
    BulkDeleteResponse,
    DeleteProfilesByIdsRequest,
    DeleteUserProfileRequest,
    DeleteUserProfileResponse,
    GetProfileStatisticsResponse,
    GetProfilesViewResponse,
    GetUserProfilesRequest,
    ProfileChangeLogView,
    ProfileChangeLogViewResponse,
    ProfileTimeToLive,
    ProfileView,
    SearchUserProfileRequest,
    UpdateUserProfileRequest,
    UpdateUserProfileResponse,
)
from reflexio.records import Learning, LearningEvent, LearningKind, LearningStatus, now
from reflexio.service import impact, search, views
from reflexio.service.bulk import save_embedded
from reflexio.service.cancellation import NEVER, Cancellation
from reflexio.service.core import Core
from reflexio.service.learning_access import audit, bulk_delete, delete_one, find_one, listed

__all__ = [
    "AllProfilesQuery",
    "add_user_profiles",
    "delete_all_profiles",
    "delete_profile",
    "delete_profiles_by_ids",
    "get_all_profiles",
    "get_profile_statistics",
    "get_profiles",
    "profile_change_log",
    "update_user_profile",
]

PROFILE = LearningKind.PROFILE
#: "Expiring soon" in the statistics: within a week, as in Reflexio.
EXPIRING_SOON_SECONDS = 7 * 86_400
#: How many rows a time-to-live filter scans (storage has no TTL column filter).
_TTL_SCAN = 10_000
#: How many profile history events the change log reads.
CHANGE_LOG_EVENTS = 500
#: How many profiles a ``search_query`` delete can remove at once.
_DELETE_BY_QUERY_LIMIT = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class AllProfilesQuery:
    """Query parameters of ``GET /api/get_all_profiles`` (times are epoch seconds)."""

    limit: int = 100
    status_filter: Literal["current", "pending", "archived"] | None = None
    user_id: str | None = None
    profile_id: str | None = None
    query: str | None = None
    source: str | None = None
    profile_time_to_live: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    date_field: Literal["last_modified_timestamp", "created_at"] = "last_modified_timestamp"
    include_tombstones: bool = False


def add_user_profiles(
    core: Core,
    org_id: str,
    req: AddUserProfileRequest,
    *,
    actor: str = "api",
    cancel: Cancellation = NEVER,
) -> AddUserProfileResponse:
    """Store profiles directly (embedded and indexed like extracted ones).

    Raises:
        ConflictError: A ``profile_id`` is already used in the org.
        RequestCancelledError: ``cancel`` was set before they were saved (nothing was).
    """
    rows = [views.from_user_profile(org_id, p) for p in req.user_profiles]
    saved = save_embedded(core, rows, audit(actor, "added through the API"), cancel)
    return AddUserProfileResponse(
        success=True,
        added_count=len(saved),
        message=f"Added {len(saved)} profile(s)",
        profile_ids=[row.wire_id for row in saved],
    )


def get_profiles(core: Core, org_id: str, req: GetUserProfilesRequest) -> GetProfilesViewResponse:
    """One user's profiles; with no status filter, current and unexpired ones only."""
    explicit = views.learning_statuses(req.status_filter)
    where = LearningFilter(
        kinds=(PROFILE,),
        user_id=req.user_id,
        profile_ids=(req.profile_id,) if req.profile_id else None,
        statuses=explicit or (LearningStatus.CURRENT,),
        active_at=None if explicit else int(now()),
        source=req.source or None,
        tags=tuple(req.tags) if req.tags else None,
        updated_after=views.epoch(req.start_time),
        updated_before=views.epoch(req.end_time),
    )
    hits = _with_ttl(core, org_id, where, req.query, req.top_k or 30, req.profile_time_to_live)
    listed = impact.with_impacts(core.storage, org_id, [views.profile_view(r, s) for r, s in hits])
    return GetProfilesViewResponse(success=True, user_profiles=listed)


def get_all_profiles(core: Core, org_id: str, q: AllProfilesQuery) -> GetProfilesViewResponse:
    """Profiles of every user; no status filter means any state but tombstones (unless asked)."""
    if q.status_filter is not None:
        statuses: tuple[LearningStatus, ...] | None = (LearningStatus(q.status_filter),)
    else:
        statuses = None if q.include_tombstones else ACTIVE_STATUSES
    on_created = q.date_field == "created_at"
    where = LearningFilter(
        kinds=(PROFILE,),
        user_id=q.user_id or None,
        profile_ids=(q.profile_id,) if q.profile_id else None,
        statuses=statuses,
        source=q.source or None,
        created_after=q.start_time if on_created else None,
        created_before=q.end_time if on_created else None,
        updated_after=None if on_created else q.start_time,
        updated_before=None if on_created else q.end_time,
    )
    hits = _with_ttl(core, org_id, where, q.query, q.limit, q.profile_time_to_live)
    listed = impact.with_impacts(core.storage, org_id, [views.profile_view(r, s) for r, s in hits])
    return GetProfilesViewResponse(success=True, user_profiles=listed)


def _with_ttl(
    core: Core, org_id: str, where: LearningFilter, query: str | None, limit: int, ttl: str | None
) -> list[tuple[Learning, float | None]]:
    """``listed`` plus a time-to-live filter, applied here because storage has no TTL filter."""
    if not ttl:
        return listed(core, org_id, where, query, limit)
    allowed = [t.value for t in ProfileTimeToLive]
    if ttl not in allowed:
        raise ValidationError(f"profile_time_to_live must be one of {', '.join(allowed)}, got {ttl!r}")
    hits = listed(core, org_id, where, query, _TTL_SCAN)
    return [(row, score) for row, score in hits if row.ttl == ttl][:limit]


def update_user_profile(
    core: Core, org_id: str, req: UpdateUserProfileRequest, *, actor: str = "api"
) -> UpdateUserProfileResponse:
    """Edit a profile's content and/or custom features; it is re-embedded and its TTL restarts.

    Raises:
        NotFoundError: The user has no profile with this id in the caller's org.
    """
    what = f"profile {req.profile_id!r} of user {req.user_id!r}"
    where = LearningFilter(kinds=(PROFILE,), user_id=req.user_id, profile_ids=(req.profile_id,))
    row = find_one(core.storage, org_id, where, what)
    if req.content is None and req.custom_features is None:
        return UpdateUserProfileResponse(success=True, msg="Nothing to update")
    edited = row.copy(
        content=row.content if req.content is None else req.content,
        custom_features=row.custom_features if req.custom_features is None else req.custom_features,
        expires_at=views.expires_at(row.ttl, int(now())),
    )
    core.storage.save_learnings([edited], audit(actor, "edited through the API"))
    return UpdateUserProfileResponse(success=True, msg=f"Updated {what}")


def get_profile_statistics(core: Core, org_id: str) -> GetProfileStatisticsResponse:
    """Profile counts of the org by state; "expiring soon" = current and expiring within a week."""
    t = int(now())

    def count(status: LearningStatus, active_at: int | None = None) -> int:
        where = LearningFilter(kinds=(PROFILE,), statuses=(status,), active_at=active_at)
        return core.storage.count_learnings(org_id, where)

    current = count(LearningStatus.CURRENT, t)
    return GetProfileStatisticsResponse(
        success=True,
        current_count=current,
        pending_count=count(LearningStatus.PENDING),
        archived_count=count(LearningStatus.ARCHIVED),
        expiring_soon_count=current - count(LearningStatus.CURRENT, t + EXPIRING_SOON_SECONDS),
    )


# -- deletes ------------------------------------------------------------------------------------


def delete_profile(
    core: Core, org_id: str, req: DeleteUserProfileRequest, *, actor: str = "api"
) -> DeleteUserProfileResponse:
    """Delete one profile by id, or the user's current profiles that match ``search_query``.

    Raises:
        ValidationError: Neither a profile id nor a search query was given.
        NotFoundError: The profile id does not exist for this user.
    """
    if req.profile_id:
        where = LearningFilter(kinds=(PROFILE,), user_id=req.user_id, profile_ids=(req.profile_id,))
        delete_one(core, org_id, where, f"profile {req.profile_id!r} of user {req.user_id!r}", actor)
        return DeleteUserProfileResponse(success=True, message=f"Deleted profile {req.profile_id!r}")
    if not req.search_query.strip():
        raise ValidationError("delete_profile needs a profile_id or a search_query")
    found = search.search_profiles(
        core,
        org_id,
        SearchUserProfileRequest(user_id=req.user_id, query=req.search_query, top_k=_DELETE_BY_QUERY_LIMIT),
    )
    ids = tuple(p.profile_id for p in found.user_profiles)
    deleted = 0
    if ids:
        where = LearningFilter(kinds=(PROFILE,), user_id=req.user_id, profile_ids=ids)
        reason = f"deleted through the API: matched {req.search_query!r}"
        deleted = core.storage.delete_learnings(org_id, where, audit(actor, reason))
    return DeleteUserProfileResponse(
        success=True, message=f"Deleted {deleted} profile(s) matching {req.search_query!r}"
    )


def delete_profiles_by_ids(
    core: Core, org_id: str, req: DeleteProfilesByIdsRequest, *, actor: str = "api"
) -> BulkDeleteResponse:
    """Delete the listed profiles that exist; the count says how many did."""
    where = LearningFilter(kinds=(PROFILE,), profile_ids=tuple(req.profile_ids))
    return bulk_delete(core, org_id, where, "profile(s)", actor)


def delete_all_profiles(core: Core, org_id: str, *, actor: str = "api") -> BulkDeleteResponse:
    """Delete every profile of the org."""
    return bulk_delete(core, org_id, LearningFilter(kinds=(PROFILE,)), "profile(s)", actor)


# -- change log ---------------------------------------------------------------------------------

_REMOVING_EVENTS = frozenset({"deleted", "archived", "superseded", "merged", "expired", "pending"})


def profile_change_log(core: Core, org_id: str) -> ProfileChangeLogViewResponse:
    """Profiles added and removed, per request (or per change without one), newest first.

    Rebuilt from the learning history: "created" adds, "deleted" and moves out of the
    current state remove, an edit removes the old text and adds the new one.
    """
    events = core.storage.list_events(org_id, kinds=[PROFILE.value], limit=CHANGE_LOG_EVENTS)
    rows = _rows_for(core, org_id, events)
    logs: dict[tuple[str, str], ProfileChangeLogView] = {}
    for event in events:
        added, removed = _effect(event, rows.get(event.learning_id))
        if not added and not removed:
            continue
        request_id = _request_of(event)
        key = (event.user_id or "", request_id or f"event-{event.id}")
        log = logs.get(key)
        if log is None:
            log = logs[key] = ProfileChangeLogView(
                id=event.id,
                user_id=key[0],
                request_id=request_id or "",
                created_at=int(event.created_at),
                added_profiles=[],
                removed_profiles=[],
            )
        log.added_profiles.extend(added)
        log.removed_profiles.extend(removed)
    return ProfileChangeLogViewResponse(success=True, profile_change_logs=list(logs.values()))


def _rows_for(core: Core, org_id: str, events: list[LearningEvent]) -> dict[int, Learning]:
    """The latest known full state of every profile the events touch (deleted ones included)."""
    ids = tuple({e.learning_id for e in events})
    rows = {r.id: r for r in core.storage.get_learnings(org_id, LearningFilter(kinds=(PROFILE,), ids=ids))}
    for event in events:  # newest first: the first full snapshot seen is the latest one
        snapshot = event.after or event.before
        if event.learning_id not in rows and snapshot and "kind" in snapshot:
            rows[event.learning_id] = views.learning_from_snapshot(snapshot)
    return rows


def _effect(event: LearningEvent, row: Learning | None) -> tuple[list[ProfileView], list[ProfileView]]:
    """(added, removed) profile views for one history event."""

    def shown(state: dict[str, object] | None) -> ProfileView | None:
        if state and "kind" in state:
            return views.profile_view(views.learning_from_snapshot(state))
        if row is None:
            return None
        return views.profile_view(row.copy(**_plain_fields(state or {})))

    if event.event == "created":
        return _some(shown(event.after)), []
    if event.event == "updated" and event.before and "kind" in event.before:
        return _some(shown(event.after)), _some(shown(event.before))
    if event.event in _REMOVING_EVENTS:
        return [], _some(shown(event.before))
    if event.event == "activated":
        return _some(shown(event.after)), []
    return [], []


def _plain_fields(state: dict[str, object]) -> dict[str, object]:
    """Partial before/after values of a field change, typed as the row's fields are."""
    out = dict(state)
    if "status" in out and isinstance(out["status"], str):
        out["status"] = LearningStatus(out["status"])
    return {k: v for k, v in out.items() if k in Learning.__dataclass_fields__}


def _some(view: ProfileView | None) -> list[ProfileView]:
    return [] if view is None else [view]


def _request_of(event: LearningEvent) -> str | None:
    """The request a change came from: the audit's, else the profile's own provenance."""
    if event.request_id:
        return event.request_id
    state = event.after or event.before or {}
    value = state.get("request_id")
    return value if isinstance(value, str) and value else None
