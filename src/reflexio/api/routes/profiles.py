"""User profiles: add, read, edit, search, statistics, change log, delete."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query
from starlette.requests import Request

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.lifecycle import cancellable
from reflexio.api.routes import EpochParam, IdParam, PageParam, TextParam, api_router, documented
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
    ProfileTimeToLive,
    SearchProfilesViewResponse,
    SearchUserProfileRequest,
    UpdateUserProfileRequest,
    UpdateUserProfileResponse,
)
from reflexio.models.fields import SOURCE_PATTERN
from reflexio.service import profiles, search
from reflexio.service.profiles import AllProfilesQuery

__all__ = ["router"]

router = api_router("profiles")


@router.post("/add_user_profile", responses=documented(409))
async def add_user_profile(
    body: AddUserProfileRequest, request: Request, core: CoreDep, caller: CallerDep
) -> AddUserProfileResponse:
    """Store profiles directly (409 when a profile_id is already used).

    Embedding stops (and nothing is stored) if the client leaves or the server shuts down.
    """
    return await cancellable(
        request, profiles.add_user_profiles, core, caller.org_id, body, actor=caller.actor
    )


@router.post("/get_profiles")
def get_profiles(body: GetUserProfilesRequest, core: CoreDep, caller: CallerDep) -> GetProfilesViewResponse:
    """One user's profiles (current and unexpired unless a status filter says otherwise)."""
    return profiles.get_profiles(core, caller.org_id, body)


@router.get("/get_all_profiles")
def get_all_profiles(
    core: CoreDep,
    caller: CallerDep,
    limit: PageParam = 100,
    status_filter: Literal["current", "pending", "archived"] | None = None,
    user_id: IdParam | None = None,
    profile_id: IdParam | None = None,
    query: TextParam | None = None,
    source: Annotated[str, Query(max_length=128, pattern=SOURCE_PATTERN)] | None = None,
    profile_time_to_live: ProfileTimeToLive | None = None,
    start_time: EpochParam | None = None,
    end_time: EpochParam | None = None,
    date_field: Literal["last_modified_timestamp", "created_at"] = "last_modified_timestamp",
    include_tombstones: bool = False,
) -> GetProfilesViewResponse:
    """Profiles of every user in the org, filtered by the query string."""
    q = AllProfilesQuery(
        limit=limit,
        status_filter=status_filter,
        user_id=user_id,
        profile_id=profile_id,
        query=query,
        source=source,
        profile_time_to_live=profile_time_to_live.value if profile_time_to_live else None,
        start_time=start_time,
        end_time=end_time,
        date_field=date_field,
        include_tombstones=include_tombstones,
    )
    return profiles.get_all_profiles(core, caller.org_id, q)


@router.put("/update_user_profile", responses=documented(404))
def update_user_profile(
    body: UpdateUserProfileRequest, core: CoreDep, caller: CallerDep
) -> UpdateUserProfileResponse:
    """Edit a profile's content or custom features (404 when it does not exist)."""
    return profiles.update_user_profile(core, caller.org_id, body, actor=caller.actor)


@router.post("/search_profiles")
def search_profiles(
    body: SearchUserProfileRequest, core: CoreDep, caller: CallerDep
) -> SearchProfilesViewResponse:
    """One user's current profiles ranked by relevance to a query, with scores."""
    return search.search_profiles(core, caller.org_id, body)


@router.get("/profile_change_log")
def profile_change_log(core: CoreDep, caller: CallerDep) -> ProfileChangeLogViewResponse:
    """Profiles added and removed, per request, rebuilt from the learning history."""
    return profiles.profile_change_log(core, caller.org_id)


@router.get("/get_profile_statistics")
def get_profile_statistics(core: CoreDep, caller: CallerDep) -> GetProfileStatisticsResponse:
    """Profile counts by state."""
    return profiles.get_profile_statistics(core, caller.org_id)


@router.delete("/delete_profile", responses=documented(404))
def delete_profile(
    body: DeleteUserProfileRequest, core: CoreDep, caller: CallerDep
) -> DeleteUserProfileResponse:
    """Delete a profile by id, or the user's profiles matching ``search_query``."""
    return profiles.delete_profile(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_profiles_by_ids")
def delete_profiles_by_ids(
    body: DeleteProfilesByIdsRequest, core: CoreDep, caller: CallerDep
) -> BulkDeleteResponse:
    """Delete the listed profiles that exist."""
    return profiles.delete_profiles_by_ids(core, caller.org_id, body, actor=caller.actor)


@router.delete("/delete_all_profiles")
def delete_all_profiles(core: CoreDep, caller: CallerDep) -> BulkDeleteResponse:
    """Delete every profile of the org."""
    return profiles.delete_all_profiles(core, caller.org_id, actor=caller.actor)
