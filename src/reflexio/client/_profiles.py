"""Client methods for user profiles: the facts and preferences learned about each user.

Each function is the body of the client method of the same name (see ``_transport``); the
docstrings are the public methods' docstrings.
"""

from __future__ import annotations

import functools
import uuid
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from reflexio.client._transport import Call, Plan, When, build, dump, parse_as, single, single_if
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
    ProfileChangeLogViewResponse,
    SearchMode,
    SearchProfilesViewResponse,
    SearchUserProfileRequest,
    Status,
    UpdateUserProfileRequest,
    UpdateUserProfileResponse,
    UserProfile,
    now_epoch,
)

__all__ = [
    "add_user_profile",
    "delete_all_profiles",
    "delete_profile",
    "delete_profiles_by_ids",
    "get_all_profiles",
    "get_profile_change_log",
    "get_profile_statistics",
    "get_profiles",
    "search_profiles",
    "search_user_profiles",
    "update_user_profile",
]

P = ParamSpec("P")
T = TypeVar("T")


def _as_profile(profile: UserProfile | Mapping[str, Any]) -> UserProfile:
    """A profile from a dict, with the bookkeeping a hand-written fact lacks filled in."""
    if isinstance(profile, UserProfile):
        return profile
    data = dict(profile)
    data.setdefault("profile_id", f"cli-{uuid.uuid4().hex[:12]}")
    data.setdefault("last_modified_timestamp", now_epoch())
    data.setdefault("generated_from_request_id", "cli-manual")
    data.setdefault("source", "cli-manual")
    return UserProfile.model_validate(data)


def add_user_profile(user_profiles: list[UserProfile | Mapping[str, Any]]) -> Plan[AddUserProfileResponse]:
    """Store known facts about users directly, without learning them from interactions.

    Useful to seed what you already know (from a CRM, a migration, a test). A dict needs only
    ``user_id`` and ``content``; ``profile_id``, ``last_modified_timestamp``,
    ``generated_from_request_id`` and ``source`` are filled in as Reflexio's client did.

    Args:
        user_profiles: The profiles to store (at least one, each with content).

    Returns:
        How many profiles were stored.
    """
    request = AddUserProfileRequest(user_profiles=[_as_profile(profile) for profile in user_profiles])
    return single(Call("POST", "/api/add_user_profile", parse_as(AddUserProfileResponse), json=dump(request)))


def get_profiles(
    request: GetUserProfilesRequest | Mapping[str, Any] | None = None,
    force_refresh: bool = False,
    *,
    user_id: str | None = None,
    profile_id: str | None = None,
    query: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    top_k: int | None = None,
    source: str | None = None,
    profile_time_to_live: str | None = None,
    status_filter: list[Status | str | None] | None = None,
    tags: list[str] | None = None,
) -> Plan[GetProfilesViewResponse]:
    """List one user's profiles with exact filters (use :meth:`search_user_profiles` to rank).

    Every call reads fresh data: unlike Reflexio's client there is no 10-minute local cache,
    so ``force_refresh`` is accepted for compatibility and has nothing to bypass.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        force_refresh: Accepted and ignored (nothing is cached).
        user_id: Whose profiles.
        profile_id: Only this profile.
        query: Case-insensitive text filter.
        start_time: Only profiles modified at or after this time.
        end_time: Only profiles modified before this time.
        top_k: At most this many (server default 30).
        source: Only profiles with this source.
        profile_time_to_live: Only profiles with this time to live (e.g. ``"one_week"``).
        status_filter: Lifecycle states to include; ``None`` (or ``"current"``) in the list
            means the current version.
        tags: Profiles having any of these tags.

    Returns:
        The matching profiles.
    """
    del force_refresh
    if status_filter is not None:
        status_filter = [None if status == "current" else status for status in status_filter]
    req = build(
        GetUserProfilesRequest,
        request,
        user_id=user_id,
        profile_id=profile_id,
        query=query,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
        source=source,
        profile_time_to_live=profile_time_to_live,
        status_filter=status_filter,
        tags=tags,
    )
    return single(Call("POST", "/api/get_profiles", parse_as(GetProfilesViewResponse), json=dump(req)))


def get_all_profiles(
    limit: int = 100,
    status_filter: str | None = None,
    user_id: str | None = None,
    profile_id: str | None = None,
    query: str | None = None,
    source: str | None = None,
    profile_time_to_live: str | None = None,
    start_time: int | None = None,
    end_time: int | None = None,
    *,
    date_field: str | None = None,
    include_tombstones: bool | None = None,
) -> Plan[GetProfilesViewResponse]:
    """Profiles across every user of the org, for dashboards and audits.

    Args:
        limit: At most this many profiles.
        status_filter: ``"current"``, ``"pending"`` or ``"archived"``; ``None`` = any.
        user_id: Only this user's profiles.
        profile_id: Only this profile.
        query: Case-insensitive text filter.
        source: Only profiles with this source.
        profile_time_to_live: Only profiles with this time to live.
        start_time: Earliest epoch second (on ``date_field``).
        end_time: Latest epoch second (on ``date_field``).
        date_field: ``"last_modified_timestamp"`` (default) or ``"created_at"``.
        include_tombstones: Also return merged, superseded and expired profiles.

    Returns:
        The matching profiles.
    """
    params = {
        "limit": limit,
        "status_filter": status_filter or None,
        "user_id": user_id,
        "profile_id": profile_id,
        "query": query,
        "source": source,
        "profile_time_to_live": profile_time_to_live,
        "start_time": start_time,
        "end_time": end_time,
        "date_field": date_field,
        "include_tombstones": None if include_tombstones is None else str(include_tombstones).lower(),
    }
    return single(Call("GET", "/api/get_all_profiles", parse_as(GetProfilesViewResponse), params=params))


def update_user_profile(
    user_id: str,
    profile_id: str,
    *,
    content: str | None = None,
    custom_features: dict[str, Any] | None = None,
) -> Plan[UpdateUserProfileResponse]:
    """Correct a profile in place, e.g. after a user says a learned fact is wrong.

    Fields left as ``None`` keep their stored value.

    Args:
        user_id: The profile's user.
        profile_id: The profile to change.
        content: The new text (re-embedded by the server).
        custom_features: New custom features, replacing the old ones.

    Returns:
        Whether the profile was updated.

    Raises:
        NotFoundError: No such profile for this user.
    """
    req = UpdateUserProfileRequest(
        user_id=user_id, profile_id=profile_id, content=content, custom_features=custom_features
    )
    return single(
        Call("PUT", "/api/update_user_profile", parse_as(UpdateUserProfileResponse), json=dump(req))
    )


def search_user_profiles(
    request: SearchUserProfileRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    generated_from_request_id: str | None = None,
    query: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    top_k: int | None = None,
    source: str | None = None,
    custom_feature: str | None = None,
    extractor_name: str | None = None,
    tags: list[str] | None = None,
    threshold: float | None = None,
    enable_reformulation: bool | None = None,
    search_mode: SearchMode | str | None = None,
) -> Plan[SearchProfilesViewResponse]:
    """Rank one user's profiles by relevance to a query (profiles only; see :meth:`search`).

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Whose profiles.
        generated_from_request_id: Only profiles learned from this request.
        query: What the agent is about to answer.
        start_time: Only profiles modified at or after this time.
        end_time: Only profiles modified before this time.
        top_k: At most this many (server default 10).
        source: Only profiles with this source.
        custom_feature: Only profiles with this custom feature.
        extractor_name: Accepted and ignored, as by Reflexio.
        tags: Profiles having any of these tags.
        threshold: Minimum relevance (0..1); ``None`` uses the embedder's default.
        enable_reformulation: Let an LLM rewrite the query first.
        search_mode: ``"hybrid"`` (default), ``"vector"`` or ``"fts"``.

    Returns:
        The matching profiles, best first, each with its ``score``.
    """
    req = build(
        SearchUserProfileRequest,
        request,
        user_id=user_id,
        generated_from_request_id=generated_from_request_id,
        query=query,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
        source=source,
        custom_feature=custom_feature,
        extractor_name=extractor_name,
        tags=tags,
        threshold=threshold,
        enable_reformulation=enable_reformulation,
        search_mode=search_mode,
    )
    return single(Call("POST", "/api/search_profiles", parse_as(SearchProfilesViewResponse), json=dump(req)))


def _deprecated_alias(plan: Callable[P, Plan[T]], name: str) -> Callable[P, Plan[T]]:
    """``plan`` under an old name that warns, with the same signature (0.2.16 kept such aliases)."""

    @functools.wraps(plan)
    def alias(*args: P.args, **kwargs: P.kwargs) -> Plan[T]:
        warnings.warn(
            f"{name}() is deprecated; use {plan.__name__}() instead", DeprecationWarning, stacklevel=3
        )
        return plan(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"Deprecated alias of :meth:`{plan.__name__}`, kept because 0.2.16 still has it."
    return alias


search_profiles = _deprecated_alias(search_user_profiles, "search_profiles")


def get_profile_change_log() -> Plan[ProfileChangeLogViewResponse]:
    """Which profiles each request added and removed: why a fact appeared or vanished.

    Returns:
        The change log entries, newest first.
    """
    return single(Call("GET", "/api/profile_change_log", parse_as(ProfileChangeLogViewResponse)))


def get_profile_statistics() -> Plan[GetProfileStatisticsResponse]:
    """Counts of current, pending, archived and soon-expiring profiles in the org.

    Returns:
        The counts.
    """
    return single(Call("GET", "/api/get_profile_statistics", parse_as(GetProfileStatisticsResponse)))


def delete_profile(
    user_id: str, profile_id: str = "", search_query: str = "", wait_for_response: bool = False
) -> Plan[DeleteUserProfileResponse | None]:
    """Delete one profile by id, or the profiles matching a query, of one user.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned (Reflexio's client sent it in the background).

    Args:
        user_id: The profiles' user.
        profile_id: The profile to delete.
        search_query: Delete this user's profiles matching this text instead.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.
    """
    req = DeleteUserProfileRequest(user_id=user_id, profile_id=profile_id, search_query=search_query)
    call = Call("DELETE", "/api/delete_profile", parse_as(DeleteUserProfileResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_profiles_by_ids(profile_ids: list[str]) -> Plan[BulkDeleteResponse]:
    """Delete several profiles in one call.

    Args:
        profile_ids: 1 to 10,000 profile ids.

    Returns:
        How many profiles were deleted.
    """
    req = DeleteProfilesByIdsRequest(profile_ids=profile_ids)
    return single(Call("DELETE", "/api/delete_profiles_by_ids", parse_as(BulkDeleteResponse), json=dump(req)))


def delete_all_profiles() -> Plan[BulkDeleteResponse]:
    """Delete every profile of every user in the org.

    Returns:
        How many profiles were deleted.
    """
    return single(Call("DELETE", "/api/delete_all_profiles", parse_as(BulkDeleteResponse)))
