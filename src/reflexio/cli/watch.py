"""``reflexio watch``: follow the org's live event stream in the terminal.

One line per event as it happens (learning created, superseded, retired, approved, rejected;
job dead-lettered; evaluation finished). ``--json`` prints one JSON object per line (JSON
Lines), the one place a command prints more than one document: a stream has no end. A dropped
connection is resumed after the last event shown, so nothing is missed or shown twice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import fail

if TYPE_CHECKING:
    from reflexio.models.api_events import StreamEvent

__all__ = ["watch"]


def watch(
    types: Annotated[
        list[str] | None,
        typer.Option("--type", help="Only this event type (repeatable), e.g. learning.approved."),
    ] = None,
    kinds: Annotated[
        list[str] | None, typer.Option("--kind", help="Only this learning kind or job task (repeatable).")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="Only events about this user.")] = None,
    after: Annotated[
        int | None, typer.Option("--after", help="Start after this event id (0: from the first event).")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow/--no-follow", help="Wait for new events, or stop after the backlog.")
    ] = True,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Follow what happens to learnings, jobs and evaluations, live (Ctrl-C to stop)."""
    from reflexio.errors import ReflexioError

    machine = wants_json(as_json)
    try:
        with client(url, api_key) as api:
            for event in api.events(types=types, kinds=kinds, user_id=user, after=after, follow=follow):
                typer.echo(event.model_dump_json() if machine else _line(event))
    except ReflexioError as exc:
        fail(exc, as_json=machine)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _line(event: StreamEvent) -> str:
    import datetime as dt

    when = dt.datetime.fromtimestamp(event.created_at).strftime("%H:%M:%S")
    subject = " ".join(part for part in (event.kind or "", event.subject_id or "") if part)
    detail = event.data.get("content") or event.data.get("error") or ""
    who = f" user={event.user_id}" if event.user_id else ""
    text = json.dumps(detail)[:100] if detail else ""
    return f"{event.id:>6}  {when}  {event.type:<20} {subject}{who}  {text}".rstrip()
