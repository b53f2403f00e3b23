"""``reflexio config``, ``keys`` and ``jobs``: an org's settings, its API keys, its background work.

``config`` and ``jobs`` go through the client (any server, the caller's org). ``keys`` works
on the storage directly, as a server-side administrator: it must work before any key exists,
and a key created here is accepted at once by every server sharing the storage, since servers
look keys up on each request.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, settings, wants_json
from reflexio.cli.output import Result, Table, run
from reflexio.errors import BadRequestError

if TYPE_CHECKING:
    from reflexio.client import ReflexioClient
    from reflexio.records import ApiKeyRecord
    from reflexio.service.core import Core

__all__ = ["StorageUrlOpt", "config", "jobs", "keys", "local_core"]

config = typer.Typer(
    help="The org's configuration: extractors, windows, models, thresholds.", no_args_is_help=True
)
keys = typer.Typer(help="API keys per org (stored hashed; each key is shown once).", no_args_is_help=True)
jobs = typer.Typer(help="Background jobs: see why learning is late, retry what died.", no_args_is_help=True)

StorageUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--storage-url",
        help="Storage to use (default: $REFLEXIO_STORAGE_URL, then SQLite under ~/.reflexio).",
    ),
]

# -- config --------------------------------------------------------------------------------


@config.command("show")
def show(as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = "") -> None:
    """Show the org's configuration, with secrets masked by the server."""

    def action() -> Result:
        with client(url, api_key) as api:
            current = api.get_config().model_dump(mode="json")
        rows = [{"key": key, "value": value} for key, value in current.items()]
        return Result(current, tables=[Table("Config", ("key", "value"), rows)])

    run(wants_json(as_json), action)


@config.command("set")
def set_(
    file: Annotated[
        Path | None, typer.Option("--file", help="A JSON config document to store.", dir_okay=False)
    ] = None,
    data: Annotated[str | None, typer.Option("--data", help="A JSON config document, inline.")] = None,
    field: Annotated[
        list[str] | None,
        typer.Option(
            "--field", help="key=value (value parsed as JSON if it can be; dotted keys nest). Repeatable."
        ),
    ] = None,
    merge: Annotated[
        bool, typer.Option("--merge", help="Change only the top-level keys of --file/--data, keep the rest.")
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Change the org's configuration.

    --file/--data replace the whole config (or, with --merge, the keys they name);
    --field key=value changes single settings, e.g. --field window_size=20 or
    --field llm_config.generation_model_name=gpt-4o-mini. Masked secrets sent back keep the
    stored secret.
    """

    def action() -> Result:
        document = _document(file, data)
        changes = [_parse_field(item) for item in field or []]
        if document is None and not changes:
            raise BadRequestError("nothing to set: give --file, --data or --field key=value")
        with client(url, api_key) as api:
            if document is not None and not merge:
                for path, value in changes:
                    _assign(document, path, value)
                response = api.set_config(document)
            else:
                response = api.update_config(_partial(api, document or {}, changes))
        return Result(response, message=response.msg or "Config stored")

    run(wants_json(as_json), action)


def _document(file: Path | None, data: str | None) -> dict[str, Any] | None:
    if file is not None and data is not None:
        raise BadRequestError("give --file or --data, not both")
    text = file.read_text() if file is not None else data
    if text is None:
        return None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequestError(f"the config is not valid JSON: {exc}") from exc
    if not isinstance(loaded, dict):
        raise BadRequestError("the config must be a JSON object")
    return loaded


def _parse_field(item: str) -> tuple[list[str], Any]:
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise BadRequestError(f"--field expects key=value, got {item!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip().split("."), value


def _assign(document: dict[str, Any], path: list[str], value: Any) -> None:
    node = document
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value


def _partial(
    api: ReflexioClient, base: dict[str, Any], changes: list[tuple[list[str], Any]]
) -> dict[str, Any]:
    """Top-level updates: a dotted field rewrites its whole top-level object, read from the server."""
    partial = dict(base)
    current: dict[str, Any] | None = None
    for path, value in changes:
        top = path[0]
        if len(path) > 1 and top not in partial:
            current = current or api.get_config().model_dump(mode="json")
            stored = current.get(top)
            partial[top] = copy.deepcopy(stored) if isinstance(stored, dict) else {}
        _assign(partial, path, value)
    return partial


# -- keys ----------------------------------------------------------------------------------


@contextmanager
def local_core(storage_url: str | None) -> Iterator[Core]:
    """The core of a storage this machine opens directly (for server-side administration)."""
    from reflexio.service.core import open_core  # server dependencies load only for server-side commands

    core = open_core(settings(storage_url=storage_url))
    try:
        yield core
    finally:
        core.close()


def _key_row(record: ApiKeyRecord) -> dict[str, Any]:
    """A key as shown: its prefix, never its hash."""
    return {
        "id": record.id,
        "org_id": record.org_id,
        "prefix": record.prefix,
        "name": record.name,
        "created_at": record.created_at,
        "revoked_at": record.revoked_at,
        "active": record.revoked_at is None,
        "reviewer": record.reviewer,
    }


@keys.command("create")
def create_key(
    org: Annotated[
        str | None,
        typer.Option(
            "--org",
            help="The org the key acts for (default: the default org, $REFLEXIO_DEFAULT_ORG_ID or "
            "self-host-org, which holds everything published without a key).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="A label to tell keys apart.")] = "",
    reviewer: Annotated[
        bool,
        typer.Option("--reviewer", help="Let it review agent playbooks (approve, reject) over REST and MCP."),
    ] = False,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key for an org and print it once (only its hash is stored).

    Once any key exists the server requires one on every request; a key created while the
    server runs works at once. Without --org the key is for the default org, so what was
    published before any key existed stays visible to it. With --json the key is in the
    "key" field.
    """

    def action() -> Result:
        from reflexio.service import keys as key_service

        with local_core(storage_url) as core:
            chosen = org if org is not None else core.settings.default_org_id
            record, plain = key_service.create_key(core, chosen, name, reviewer=reviewer)
            notes = key_service.keyless_data_notes(core, record.org_id)
        data = {"key": plain, **_key_row(record), "default_org_id": core.settings.default_org_id}
        fields: dict[str, Any] = {"key": plain} | ({"note": notes} if notes else {})
        message = f"Created API key {record.id} for org {record.org_id}. Copy it now, it is not shown again:"
        return Result(data | {"notes": notes}, message=message, fields=fields)

    run(wants_json(as_json), action)


@keys.command("list")
def list_keys(
    org: Annotated[str | None, typer.Option("--org", help="Only this org's keys.")] = None,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List API keys (active and revoked) by id and prefix; the keys themselves are not stored."""

    def action() -> Result:
        from reflexio.service import keys as key_service

        with local_core(storage_url) as core:
            rows = [_key_row(record) for record in key_service.list_keys(core, org)]
        columns = ("id", "org_id", "prefix", "name", "created_at", "revoked_at")
        return Result({"keys": rows}, tables=[Table("API keys", columns, rows, empty="no API keys")])

    run(wants_json(as_json), action)


@keys.command("revoke")
def revoke_key(
    key_id: Annotated[int, typer.Argument(help="The key's id (see `reflexio keys list`).")],
    org: Annotated[str | None, typer.Option("--org", help="Only if the key belongs to this org.")] = None,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke an API key; requests using it are refused at once."""

    def action() -> Result:
        from reflexio.service import keys as key_service

        with local_core(storage_url) as core:
            key_service.revoke_key(core, key_id, org)
        return Result({"revoked": True, "id": key_id}, message=f"Revoked API key {key_id}")

    run(wants_json(as_json), action)


@keys.command("set-reviewer")
def set_reviewer(
    key_id: Annotated[int, typer.Argument(help="The key's id (see `reflexio keys list`).")],
    off: Annotated[
        bool, typer.Option("--off", help="Take the review right away instead of giving it.")
    ] = False,
    org: Annotated[str | None, typer.Option("--org", help="Only if the key belongs to this org.")] = None,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Let an existing key review agent playbooks (approve, reject) over REST, MCP and the
    dashboard, or with --off stop it; takes effect at once, the key itself is unchanged."""

    def action() -> Result:
        from reflexio.service import keys as key_service

        with local_core(storage_url) as core:
            record = key_service.set_reviewer(core, key_id, not off, org)
        state = "is now a reviewer" if record.reviewer else "is no longer a reviewer"
        return Result(_key_row(record), message=f"API key {record.id} ({record.prefix}) {state}")

    run(wants_json(as_json), action)


# -- jobs ----------------------------------------------------------------------------------

_JOB_COLUMNS = ("id", "task", "status", "attempts", "max_attempts", "run_at", "updated_at", "last_error")
JobLimit = Annotated[int, typer.Option("--limit", help="At most this many.", min=1, max=1000)]
Task = Annotated[
    str | None, typer.Option("--task", help="Only jobs of this task (extract, evaluate_session).")
]


def _job_list(status: str | None, task: str | None, limit: int, url: str, api_key: str) -> Result:
    with client(url, api_key) as api:
        found = api.list_jobs(status=status, task=task, limit=limit)
    rows = [job.model_dump(mode="json") for job in found.jobs]
    return Result(found, tables=[Table("Jobs", _JOB_COLUMNS, rows, empty="no jobs")])


@jobs.command("list")
def list_jobs(
    status: Annotated[
        str | None, typer.Option("--status", help="Only queued, running, done or dead jobs.")
    ] = None,
    task: Task = None,
    limit: JobLimit = 100,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """List the org's background jobs, newest first, with attempts and last error."""
    run(wants_json(as_json), lambda: _job_list(status, task, limit, url, api_key))


@jobs.command("dead")
def dead_jobs(
    task: Task = None,
    limit: JobLimit = 100,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """List jobs that ran out of attempts, with the error that killed them."""
    run(wants_json(as_json), lambda: _job_list("dead", task, limit, url, api_key))


@jobs.command("retry")
def retry_jobs(
    job_ids: Annotated[list[int] | None, typer.Argument(help="Dead jobs to retry (default: all).")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Queue dead jobs again with fresh attempts, e.g. after fixing an LLM key."""

    def action() -> Result:
        with client(url, api_key) as api:
            response = api.retry_jobs(job_ids or None)
        return Result(response, message=f"Queued {response.retried_count} dead job(s) again")

    run(wants_json(as_json), action)
