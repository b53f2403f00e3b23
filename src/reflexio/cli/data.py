"""``reflexio publish``, ``search`` and ``export``: the agent's loop and a user's data, by hand.

These talk to a server through the client (``--url``/``$REFLEXIO_URL``, ``--api-key``/
``$REFLEXIO_API_KEY``), so they work the same against the local server and a remote one.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, Table, jsonable, run
from reflexio.errors import BadRequestError

if TYPE_CHECKING:
    from reflexio.client import ReflexioClient
    from reflexio.models import (
        ExportUserDataResponse,
        PublishUserInteractionResponse,
        UnifiedSearchViewResponse,
    )

__all__ = ["export", "publish", "register", "search"]

#: Spellings ``--kind`` accepts, mapped to the API's entity types.
_KINDS = {
    "profile": "profiles",
    "profiles": "profiles",
    "user_playbook": "user_playbooks",
    "user_playbooks": "user_playbooks",
    "agent_playbook": "agent_playbooks",
    "agent_playbooks": "agent_playbooks",
}


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command()(publish)
    app.command()(search)
    app.command()(export)


# -- publish -------------------------------------------------------------------------------


def publish(
    user: Annotated[str, typer.Option("--user", help="Whose session this is (profiles are per user).")],
    session: Annotated[
        str | None, typer.Option("--session", help="The conversation this belongs to (default: a new id).")
    ] = None,
    agent_version: Annotated[
        str | None, typer.Option("--agent-version", help="Version of the agent that answered.")
    ] = None,
    source: Annotated[str, typer.Option("--source", help="Producer label, e.g. 'support-bot'.")] = "",
    user_message: Annotated[str | None, typer.Option("--user-message", help="What the user said.")] = None,
    agent_response: Annotated[
        str | None, typer.Option("--agent-response", help="What the agent answered.")
    ] = None,
    expert_response: Annotated[
        str | None, typer.Option("--expert-response", help="An expert's ideal answer, to learn from.")
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="JSON list of interactions (or {'interactions': [...]}).", dir_okay=False
        ),
    ] = None,
    stdin: Annotated[bool, typer.Option("--stdin", help="Read the JSON interactions from stdin.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until learning from it is done.")] = False,
    finished: Annotated[
        bool, typer.Option("--finished", help="The session is over: learn and judge it now.")
    ] = False,
    request_id: Annotated[
        str | None, typer.Option("--request-id", help="Your id for this exchange (retries store it once).")
    ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Publish what happened in a session, so Reflexio learns from it.

    Give the turns with --user-message/--agent-response (and optionally --expert-response),
    or as a JSON list of interactions with --file or --stdin. Use --wait to see the learning
    counts, --finished to have the session learned from and judged right away.
    """

    def action() -> Result:
        turns = _read_turns(file, stdin) + _message_turns(user_message, agent_response, expert_response)
        if not turns:
            raise BadRequestError(
                "nothing to publish: give --user-message/--agent-response, --file or --stdin"
            )
        chosen_session = session or f"cli-{uuid.uuid4().hex[:12]}"
        extra: dict[str, Any] = {"agent_version": agent_version} if agent_version else {}
        with client(url, api_key) as api:
            response = api.publish_interaction(
                user,
                turns,
                source=source,
                session_id=chosen_session,
                wait_for_response=wait,
                session_finished=finished,
                request_id=request_id,
                **extra,
            )
            learned = _learned(api, user, response.request_id) if wait and response.request_id else None
        return _published(response, chosen_session, len(turns), learned)

    run(wants_json(as_json), action)


def _read_turns(file: Path | None, stdin: bool) -> list[dict[str, Any]]:
    if file is None and not stdin:
        return []
    text = sys.stdin.read() if stdin else Path(file or "").read_text()
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequestError(f"the interactions are not valid JSON: {exc}") from exc
    if isinstance(loaded, dict):
        loaded = loaded.get("interactions", loaded.get("interaction_data_list"))
    if not isinstance(loaded, list) or not all(isinstance(turn, dict) for turn in loaded):
        raise BadRequestError("expected a JSON list of interaction objects (or {'interactions': [...]})")
    return loaded


def _message_turns(user: str | None, agent: str | None, expert: str | None) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    if user:
        turns.append({"role": "User", "content": user})
    if agent or expert:
        turn: dict[str, Any] = {"role": "Assistant", "content": agent or ""}
        if expert:
            turn["expert_content"] = expert
        turns.append(turn)
    return turns


def _learned(api: ReflexioClient, user: str, request_id: str) -> list[str]:
    """What the request taught, one line per learning (profiles, then playbooks)."""
    from reflexio.models import rule_line

    profiles = api.get_profiles(user_id=user, top_k=100).user_profiles
    rules = api.get_user_playbooks(user_id=user, request_id=request_id, limit=100).user_playbooks
    return [
        *(
            f"profile {p.profile_id}: {p.content}"
            for p in profiles
            if p.generated_from_request_id == request_id
        ),
        *(f"user playbook {r.user_playbook_id}: {rule_line(r.trigger, r.content)}" for r in rules),
    ]


def _published(
    response: PublishUserInteractionResponse, session: str, count: int, learned: list[str] | None
) -> Result:
    data = jsonable(response) | {"session_id": session}
    fields: dict[str, Any] = {"session": session, "learning": response.learning_status or "scheduled"}
    if response.learning_reason:
        fields["why"] = response.learning_reason
    counts = {
        "profiles added": response.profiles_added,
        "playbooks added": response.playbooks_added,
    }
    fields |= {name: value for name, value in counts.items() if value is not None}
    if learned is not None:
        data["learned"] = learned
        fields["learned"] = (
            learned or "nothing new (no fact, preference, correction or lesson in these turns)"
        )
    if response.warnings:
        fields["warnings"] = response.warnings
    return Result(data, message=f"Published {count} turn(s) as request {response.request_id}", fields=fields)


# -- search --------------------------------------------------------------------------------


def search(
    query: Annotated[str, typer.Argument(help="The user's message, or what the agent is about to do.")],
    user: Annotated[str | None, typer.Option("--user", help="Whose profiles and user playbooks.")] = None,
    agent_version: Annotated[
        str | None, typer.Option("--agent-version", help="Only playbooks of this agent version.")
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", help="At most this many results per kind (1-100).", min=1, max=100),
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="profiles, user_playbooks or agent_playbooks (repeatable; default all)."),
    ] = None,
    threshold: Annotated[
        float | None, typer.Option("--threshold", help="Minimum relevance, 0 to 1.", min=0.0, max=1.0)
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Skip learnings already served in this session.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Cap the total size of the results.", min=1)
    ] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="hybrid (default), vector or fts.")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Search what Reflexio learned that is relevant to a message, as an agent does before answering.

    One search covers profiles, user playbooks and agent playbooks, ranked and scored; use it
    to check what an agent would be told.
    """

    def action() -> Result:
        with client(url, api_key) as api:
            found = api.search(
                query=query,
                user_id=user,
                agent_version=agent_version,
                top_k=top_k,
                entity_types=_kinds(kind),
                threshold=threshold,
                session_id=session,
                max_tokens=max_tokens,
                search_mode=mode,
            )
        return _found(found)

    run(wants_json(as_json), action)


def _kinds(kinds: list[str] | None) -> list[str] | None:
    if not kinds:
        return None
    chosen = []
    for raw in kinds:
        name = _KINDS.get(raw.strip().lower().replace("-", "_"))
        if name is None:
            raise BadRequestError(f"unknown --kind {raw!r}: use profiles, user_playbooks or agent_playbooks")
        chosen.append(name)
    return chosen


def _found(found: UnifiedSearchViewResponse) -> Result:
    profiles = [{"id": p.profile_id, "score": p.score, "content": p.content} for p in found.profiles]
    user_rules = [
        {"id": r.user_playbook_id, "score": r.score, "trigger": r.trigger, "content": r.content}
        for r in found.user_playbooks
    ]
    agent_rules = [
        {"id": r.agent_playbook_id, "score": r.score, "status": r.playbook_status, "content": r.content}
        for r in found.agent_playbooks
    ]
    tables = [
        Table("Profiles", ("id", "score", "content"), profiles),
        Table("User playbooks", ("id", "score", "trigger", "content"), user_rules),
        Table("Agent playbooks", ("id", "score", "status", "content"), agent_rules),
    ]
    total = len(profiles) + len(user_rules) + len(agent_rules)
    message = f"{total} result(s)" + (
        " (degraded: part of the search did not answer)" if found.degraded else ""
    )
    return Result(found, message=message, tables=tables)


# -- export --------------------------------------------------------------------------------


def export(
    user: Annotated[str, typer.Option("--user", help="The user whose data to export.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the export to this file instead of stdout.", dir_okay=False),
    ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Export everything stored about one user as one JSON document (access requests, backups).

    Without --out the document itself is printed; with --out it is written to the file and a
    summary is printed.
    """

    def action() -> Result:
        with client(url, api_key) as api:
            exported = api.export_user_data(user)
        if out is None:
            return Result(exported, document=True)
        out.write_text(json.dumps(jsonable(exported), indent=2, ensure_ascii=False) + "\n")
        return _export_summary(exported, out)

    run(wants_json(as_json), action)


def _export_summary(exported: ExportUserDataResponse, out: Path) -> Result:
    counts = {
        "requests": len(exported.requests),
        "interactions": len(exported.interactions),
        "profiles": len(exported.profiles),
        "user_playbooks": len(exported.user_playbooks),
    }
    data = {"user_id": exported.user_id, "out": str(out), "counts": counts}
    return Result(data, message=f"Exported user {exported.user_id} to {out}", fields=counts)
