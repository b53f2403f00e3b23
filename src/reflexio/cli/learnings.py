"""``reflexio profiles``, ``user-playbooks`` and ``agent-playbooks``: read, seed, review, delete.

What Reflexio learned is inspected and curated here: list a user's profiles, add facts or
rules you already know, approve or reject agent playbooks (the review step that decides what
search serves), delete what is wrong. Everything goes through the client, so it works against
any server.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reflexio.cli.aggregation import aggregate
from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, Table, run

if TYPE_CHECKING:
    from reflexio.models import AgentPlaybookView, ProfileView, Status, UserPlaybookView

__all__ = ["agent_playbooks", "profiles", "user_playbooks"]

profiles = typer.Typer(
    help="A user's profiles: facts and preferences Reflexio learned.", no_args_is_help=True
)
user_playbooks = typer.Typer(help="Behaviour rules learned from one user's sessions.", no_args_is_help=True)
agent_playbooks = typer.Typer(
    help="Rules generalised for an agent version, and their review (approve/reject).", no_args_is_help=True
)
agent_playbooks.command("aggregate")(aggregate)

Limit = Annotated[int | None, typer.Option("--limit", help="At most this many.", min=1)]
Query = Annotated[str | None, typer.Option("--query", help="Only those containing this text.")]
AgentVersion = Annotated[str | None, typer.Option("--agent-version", help="Only this agent version.")]
Trigger = Annotated[str | None, typer.Option("--trigger", help="When the rule applies.")]
Rationale = Annotated[str | None, typer.Option("--rationale", help="Why the rule holds.")]
Name = Annotated[str, typer.Option("--name", help="Playbook name.")]
Lifecycle = Annotated[
    list[str] | None,
    typer.Option("--status", help="Lifecycle states to include: current, pending, archived... (repeatable)."),
]

_PROFILE_COLUMNS = ("profile_id", "content", "profile_time_to_live", "status", "last_modified_timestamp")
_USER_RULE_COLUMNS = ("user_playbook_id", "user_id", "agent_version", "trigger", "content", "created_at")
_AGENT_RULE_COLUMNS = (
    "agent_playbook_id",
    "agent_version",
    "playbook_status",
    "trigger",
    "content",
    "created_at",
)


NewAgentVersion = Annotated[
    str | None,
    typer.Option(
        "--agent-version", help="Agent version (default: agent-v0, the server's default).", show_default=False
    ),
]


def _agent_version(given: str | None) -> str:
    from reflexio.models import DEFAULT_AGENT_VERSION

    return given or DEFAULT_AGENT_VERSION


def _rows(items: Sequence[ProfileView | UserPlaybookView | AgentPlaybookView]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json") for item in items]


def _states(names: list[str] | None) -> list[Status | str | None] | None:
    """``--status`` values as the client's status filter (``current`` is the current version)."""
    return [*names] if names else None


def _ids(ids: Sequence[int | str]) -> str:
    """New ids as a person reads them (a server older than ours answers none)."""
    return ", ".join(map(str, ids)) or "(the server did not say its id)"


def _done(data: Any, message: str) -> Result:
    return Result(data, message=message)


# -- profiles ------------------------------------------------------------------------------


@profiles.command("list")
def list_profiles(
    user: Annotated[str, typer.Option("--user", help="Whose profiles.")],
    query: Query = None,
    top_k: Annotated[int | None, typer.Option("--top-k", help="At most this many.", min=1)] = None,
    status: Lifecycle = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """List a user's profiles (current ones unless --status says otherwise)."""

    def action() -> Result:
        with client(url, api_key) as api:
            found = api.get_profiles(user_id=user, query=query, top_k=top_k, status_filter=_states(status))
        rows = _rows(found.user_profiles)
        return Result(found, tables=[Table(f"Profiles of {user}", _PROFILE_COLUMNS, rows)])

    run(wants_json(as_json), action)


@profiles.command("add")
def add_profile(
    user: Annotated[str, typer.Option("--user", help="Whose fact this is.")],
    content: Annotated[str, typer.Option("--content", help="The fact, e.g. 'prefers metric units'.")],
    ttl: Annotated[
        str, typer.Option("--ttl", help="one_day, one_week, one_month, one_quarter, one_year or infinity.")
    ] = "infinity",
    source: Annotated[str, typer.Option("--source", help="Where the fact comes from.")] = "cli-manual",
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Add a fact you already know about a user (from a CRM, a migration, a test)."""

    def action() -> Result:
        profile_id = f"cli-{uuid.uuid4().hex[:12]}"
        profile = {
            "profile_id": profile_id,
            "user_id": user,
            "content": content,
            "profile_time_to_live": ttl,
            "source": source,
        }
        with client(url, api_key) as api:
            response = api.add_user_profile([profile])
        data = response.model_dump(mode="json") | {"profile_id": profile_id}
        return _done(data, f"Added profile {profile_id} for {user}")

    run(wants_json(as_json), action)


@profiles.command("delete")
def delete_profile(
    user: Annotated[str, typer.Option("--user", help="Whose profile.")],
    profile_id: Annotated[str, typer.Option("--id", help="The profile to delete.")] = "",
    query: Annotated[
        str, typer.Option("--query", help="Delete this user's profiles matching this text.")
    ] = "",
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Delete one of a user's profiles by --id, or those matching --query."""

    def action() -> Result:
        if not profile_id and not query:
            raise ValueError("give --id or --query")
        with client(url, api_key) as api:
            response = api.delete_profile(user, profile_id, query, wait_for_response=True)
        return _done(response, (response.message if response else "") or "Deleted")

    run(wants_json(as_json), action)


# -- user playbooks ------------------------------------------------------------------------


@user_playbooks.command("list")
def list_user_playbooks(
    user: Annotated[str | None, typer.Option("--user", help="Only this user's.")] = None,
    agent_version: AgentVersion = None,
    query: Query = None,
    limit: Limit = None,
    status: Lifecycle = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """List user playbooks, newest first."""

    def action() -> Result:
        with client(url, api_key) as api:
            found = api.get_user_playbooks(
                user_id=user,
                agent_version=agent_version,
                query=query,
                limit=limit,
                status_filter=_states(status),
            )
        rows = _rows(found.user_playbooks)
        return Result(found, tables=[Table("User playbooks", _USER_RULE_COLUMNS, rows)])

    run(wants_json(as_json), action)


@user_playbooks.command("add")
def add_user_playbook(
    content: Annotated[str, typer.Option("--content", help="The instruction to follow.")],
    user: Annotated[str | None, typer.Option("--user", help="The user it is for.")] = None,
    agent_version: NewAgentVersion = None,
    trigger: Trigger = None,
    rationale: Rationale = None,
    name: Name = "",
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Add a rule you already know a user wants followed."""

    def action() -> Result:
        rule = {
            "user_id": user,
            "agent_version": _agent_version(agent_version),
            "request_id": f"cli-{uuid.uuid4().hex[:12]}",
            "playbook_name": name,
            "content": content,
            "trigger": trigger,
            "rationale": rationale,
        }
        with client(url, api_key) as api:
            response = api.add_user_playbook([rule])
        return _done(response, f"Added user playbook {_ids(response.user_playbook_ids)}")

    run(wants_json(as_json), action)


@user_playbooks.command("delete")
def delete_user_playbook(
    playbook_id: Annotated[int, typer.Argument(help="The user playbook id.", min=1)],
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Delete a user playbook."""

    def action() -> Result:
        with client(url, api_key) as api:
            response = api.delete_user_playbook(playbook_id, wait_for_response=True)
        return _done(response, f"Deleted user playbook {playbook_id}")

    run(wants_json(as_json), action)


# -- agent playbooks -----------------------------------------------------------------------


@agent_playbooks.command("list")
def list_agent_playbooks(
    agent_version: AgentVersion = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only pending, approved or rejected ones.")
    ] = None,
    query: Query = None,
    limit: Limit = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """List agent playbooks with their review status; pending ones await approve/reject."""

    def action() -> Result:
        with client(url, api_key) as api:
            found = api.get_agent_playbooks(
                agent_version=agent_version, playbook_status_filter=status, query=query, limit=limit
            )
        rows = _rows(found.agent_playbooks)
        return Result(found, tables=[Table("Agent playbooks", _AGENT_RULE_COLUMNS, rows)])

    run(wants_json(as_json), action)


@agent_playbooks.command("add")
def add_agent_playbook(
    content: Annotated[str, typer.Option("--content", help="The instruction every user's session gets.")],
    agent_version: NewAgentVersion = None,
    trigger: Trigger = None,
    rationale: Rationale = None,
    name: Name = "",
    status: Annotated[
        str, typer.Option("--status", help="pending (default), approved or rejected.")
    ] = "pending",
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Add a house rule for an agent version (it starts pending unless --status says otherwise)."""

    def action() -> Result:
        rule = {
            "agent_version": _agent_version(agent_version),
            "playbook_name": name,
            "content": content,
            "trigger": trigger,
            "rationale": rationale,
            "playbook_status": status,
        }
        with client(url, api_key) as api:
            response = api.add_agent_playbooks([rule])
        new_id = _ids(response.agent_playbook_ids)
        review = (
            "" if status == "approved" else f"; approve it with `reflexio agent-playbooks approve {new_id}`"
        )
        return _done(response, f"Added agent playbook {new_id} ({status}){review}")

    run(wants_json(as_json), action)


Note = Annotated[str | None, typer.Option("--note", help="Why; kept in the history with who decided.")]
IfStatus = Annotated[
    str | None,
    typer.Option(
        "--if-status",
        help="Only if it is still in this state (pending, approved, rejected): another reviewer's "
        "decision in between is refused instead of overridden.",
    ),
]


def _review(
    playbook_id: int,
    decision: str,
    as_json: bool,
    url: str,
    api_key: str,
    *,
    note: str | None = None,
    expected: str | None = None,
) -> None:
    def action() -> Result:
        with client(url, api_key) as api:
            response = api.update_agent_playbook_status(
                playbook_id, playbook_status=decision, expected_status=expected, note=note
            )
        data = response.model_dump(mode="json") | {
            "agent_playbook_id": playbook_id,
            "playbook_status": decision,
        }
        return _done(data, f"Agent playbook {playbook_id} is now {decision}")

    run(wants_json(as_json), action)


PlaybookId = Annotated[int, typer.Argument(help="The agent playbook id.", min=1)]


@agent_playbooks.command("approve")
def approve(
    playbook_id: PlaybookId,
    note: Note = None,
    if_status: IfStatus = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Approve an agent playbook: search serves it, and re-aggregation never overwrites it."""
    _review(playbook_id, "approved", as_json, url, api_key, note=note, expected=if_status)


@agent_playbooks.command("reject")
def reject(
    playbook_id: PlaybookId,
    note: Note = None,
    if_status: IfStatus = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Reject (or revoke) an agent playbook: it leaves retrieval at once, in every process."""
    _review(playbook_id, "rejected", as_json, url, api_key, note=note, expected=if_status)


@agent_playbooks.command("reopen")
def reopen(
    playbook_id: PlaybookId,
    note: Note = None,
    if_status: IfStatus = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Put an approved or rejected agent playbook back in review (pending)."""
    _review(playbook_id, "pending", as_json, url, api_key, note=note, expected=if_status)


@agent_playbooks.command("delete")
def delete_agent_playbook(
    playbook_id: PlaybookId, as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = ""
) -> None:
    """Delete an agent playbook."""

    def action() -> Result:
        with client(url, api_key) as api:
            response = api.delete_agent_playbook(playbook_id, wait_for_response=True)
        return _done(response, f"Deleted agent playbook {playbook_id}")

    run(wants_json(as_json), action)
