"""``profiles`` / ``user-playbooks`` ``rerun | generate | upgrade | downgrade | status``.

A rerun re-extracts from past interactions into *pending* learnings without touching what
search serves; ``upgrade`` promotes them (the current ones become archived), ``downgrade``
swaps back. ``generate`` learns from what is new right now; ``status`` shows a rerun's
progress (it runs as a durable job). These commands register on the ``profiles`` and
``user-playbooks`` groups of ``cli.learnings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reflexio.cli.learnings import profiles, user_playbooks
from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, run

if TYPE_CHECKING:
    from reflexio.client import ReflexioClient

__all__: list[str] = []

User = Annotated[str | None, typer.Option("--user", help="Only this user (default: everyone).")]
AgentVersion = Annotated[str | None, typer.Option("--agent-version", help="Only this agent version.")]
Wait = Annotated[bool, typer.Option("--wait", help="Wait until the rerun has finished.")]
_SERVICE = {"profiles": "profile_generation", "playbooks": "playbook_generation"}


def _call(as_json: bool, url: str, api_key: str, call: Callable[[ReflexioClient], Any], message: str) -> None:
    """Run one client call as the command: its response is the result, ``message`` the summary."""

    def action() -> Result:
        with client(url, api_key) as api:
            response = call(api)
        data = response.model_dump(mode="json") if response is not None else {"success": True}
        return Result(data, message=message)

    run(wants_json(as_json), action)


@profiles.command("rerun")
def rerun_profiles(
    user: User = None, wait: Wait = False, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Re-extract profiles from past interactions as pending (review, then `profiles upgrade`)."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.rerun_profile_generation(wait_for_response=wait, user_id=user),
        "Rerun finished" if wait else "Rerun started; see `reflexio profiles status`",
    )


@profiles.command("generate")
def generate_profiles(
    user: User = None, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Learn profiles now from interactions not learned from yet (current output)."""
    _call(
        as_json, url, api_key, lambda api: api.manual_profile_generation(user_id=user), "Extraction scheduled"
    )


@profiles.command("upgrade")
def upgrade_profiles(
    user: User = None,
    only_affected: Annotated[
        bool, typer.Option("--only-affected", help="Only users with pending profiles.")
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Promote pending profiles to current; the current ones become archived."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.upgrade_profiles(user_id=user, only_affected_users=only_affected),
        "Profiles upgraded",
    )


@profiles.command("downgrade")
def downgrade_profiles(
    user: User = None, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Undo an upgrade: archived profiles become current again, current ones archived."""
    _call(as_json, url, api_key, lambda api: api.downgrade_profiles(user_id=user), "Profiles downgraded")


@profiles.command("status")
def profiles_status(as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = "") -> None:
    """Progress of the latest profile rerun."""
    _status("profiles", as_json, url, api_key)


@user_playbooks.command("rerun")
def rerun_playbooks(
    agent_version: AgentVersion = None,
    wait: Wait = False,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Re-extract user playbooks from past interactions as pending (then `user-playbooks upgrade`)."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.rerun_playbook_generation(wait_for_response=wait, agent_version=agent_version),
        "Rerun finished" if wait else "Rerun started; see `reflexio user-playbooks status`",
    )


@user_playbooks.command("generate")
def generate_playbooks(
    agent_version: AgentVersion = None, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Learn user playbooks now from interactions not learned from yet (current output)."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.manual_playbook_generation(agent_version=agent_version),
        "Extraction scheduled",
    )


@user_playbooks.command("upgrade")
def upgrade_playbooks(
    agent_version: AgentVersion = None, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Promote pending user playbooks to current; the current ones become archived."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.upgrade_user_playbooks(agent_version=agent_version),
        "User playbooks upgraded",
    )


@user_playbooks.command("downgrade")
def downgrade_playbooks(
    agent_version: AgentVersion = None, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Undo an upgrade: archived user playbooks become current again."""
    _call(
        as_json,
        url,
        api_key,
        lambda api: api.downgrade_user_playbooks(agent_version=agent_version),
        "User playbooks downgraded",
    )


@user_playbooks.command("status")
def playbooks_status(as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = "") -> None:
    """Progress of the latest user-playbook rerun."""
    _status("playbooks", as_json, url, api_key)


def _status(kind: str, as_json: bool, url: str, api_key: str) -> None:
    def action() -> Result:
        with client(url, api_key) as api:
            response = api.get_operation_status(_SERVICE[kind])
        info = response.operation_status
        if info is None:
            return Result(response.model_dump(mode="json"), message=f"No {kind} rerun yet")
        done = f"{info.processed_users}/{info.total_users} users"
        return Result(response.model_dump(mode="json"), message=f"Rerun {info.status.value}: {done}")

    run(wants_json(as_json), action)
