"""``reflexio mcp`` and ``reflexio integrations ...``: Reflexio inside agents.

* ``reflexio mcp`` serves the MCP tools over stdio (for desktop agents), talking to a server
  through the SDK (``--url``/``$REFLEXIO_URL``, ``--api-key``/``$REFLEXIO_API_KEY``);
* ``reflexio integrations claude-code install|uninstall|flush`` manages the Claude Code hooks.

Each command imports its integration only when it runs, so ``reflexio --help`` stays fast and a
missing extra is reported with the ``pip install`` that fixes it. :func:`server_mounts` is what
``reflexio services start`` serves under ``/api`` besides the routes (the MCP endpoint).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client_settings, wants_json
from reflexio.cli.output import Result, Table, fail, run
from reflexio.errors import BadRequestError

if TYPE_CHECKING:
    from reflexio.api.mounts import MountFactory

__all__ = ["claude_code", "integrations", "mcp", "server_mounts"]

log = logging.getLogger(__name__)

integrations = typer.Typer(help="Connect Reflexio to agents (Claude Code hooks).", no_args_is_help=True)
claude_code = typer.Typer(
    help="Claude Code hooks: learnings injected on each prompt, turns published when Claude stops.",
    no_args_is_help=True,
)
integrations.add_typer(claude_code, name="claude-code")


def _missing(extra: str, exc: ImportError) -> BadRequestError:
    return BadRequestError(
        f"this needs the {extra} extra ({exc.name} is missing): pip install 'reflexio[{extra}]'"
    )


def mcp(
    review: Annotated[
        bool, typer.Option("--review", help="Also offer the approve and reject tools (for reviewers).")
    ] = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Serve Reflexio's MCP tools over stdio (search, publish, list/get learnings).

    Point a desktop agent's MCP configuration at this command; it talks to the Reflexio
    server at --url (default $REFLEXIO_URL, then the local server). Once serving, stdout
    carries the MCP protocol; --json only shapes a failure to start.
    """
    try:
        from reflexio.client import AsyncReflexioClient
        from reflexio.integrations.gateway import ClientGateway
        from reflexio.integrations.mcp_server import stdio_server
    except ImportError as exc:
        fail(_missing("mcp", exc), as_json=wants_json(as_json))
    chosen = client_settings(url, api_key)
    client = AsyncReflexioClient(api_key=chosen.api_key, url_endpoint=chosen.url)
    stdio_server(ClientGateway(client), review=review).run("stdio")


@claude_code.command("install")
def claude_code_install(
    project: Annotated[
        bool, typer.Option("--project", help="Write .claude/settings.json of the project (the default).")
    ] = False,
    user: Annotated[
        bool, typer.Option("--user", help="Write ~/.claude/settings.json (every project).")
    ] = False,
    project_dir: Annotated[
        Path,
        typer.Option("--project-dir", help="The project (default: the current folder).", file_okay=False),
    ] = Path(),
    url: UrlOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Install the hooks: search on each prompt (UserPromptSubmit), publish on Stop and SessionEnd.

    The hooks read $REFLEXIO_URL, $REFLEXIO_API_KEY and $REFLEXIO_USER_ID when Claude Code runs
    them (--url writes the server into the hook commands instead). They never block Claude:
    what cannot be sent waits in ~/.reflexio/claude-code/outbox.db and is sent later.
    """

    def action() -> Result:
        from reflexio.integrations.claude_code.install import install

        path = _settings_file(project, user, project_dir)
        written = install(path, url=url)
        rows = [{"event": event, "command": command} for event, command in written.items()]
        return Result(
            {"settings": str(path), "hooks": written},
            message=f"Claude Code hooks written to {path}",
            tables=[Table("hooks", ["event", "command"], rows)],
        )

    run(wants_json(as_json), action)


@claude_code.command("uninstall")
def claude_code_uninstall(
    project: Annotated[bool, typer.Option("--project", help="The project's settings (the default).")] = False,
    user: Annotated[bool, typer.Option("--user", help="~/.claude/settings.json.")] = False,
    project_dir: Annotated[
        Path, typer.Option("--project-dir", help="The project.", file_okay=False)
    ] = Path(),
    as_json: JsonOpt = False,
) -> None:
    """Remove Reflexio's hooks from Claude Code's settings (other hooks are kept)."""

    def action() -> Result:
        from reflexio.integrations.claude_code.install import uninstall

        path = _settings_file(project, user, project_dir)
        removed = uninstall(path)
        return Result({"settings": str(path), "removed": removed}, message=f"removed from {path}: {removed}")

    run(wants_json(as_json), action)


@claude_code.command("flush")
def claude_code_flush(as_json: JsonOpt = False) -> None:
    """Send what the hooks' outbox holds now (the hooks do this by themselves when they can)."""

    def action() -> Result:
        from reflexio.config import ClaudeCodeSettings
        from reflexio.integrations.claude_code.hooks import flush
        from reflexio.integrations.claude_code.outbox import Outbox

        chosen = ClaudeCodeSettings.from_env()
        outbox = Outbox(Path(chosen.folder) / "outbox.db")
        try:
            sent = flush(chosen, outbox)
            waiting, dead = len(outbox.pending()), outbox.dead()
        finally:
            outbox.close()
        data = {"sent": sent, "waiting": waiting, "refused": [{"request_id": r, "error": e} for r, e in dead]}
        return Result(data, message=f"sent {sent}, {waiting} waiting, {len(dead)} refused by the server")

    run(wants_json(as_json), action)


def _settings_file(project: bool, user: bool, project_dir: Path) -> Path:
    from reflexio.integrations.claude_code.install import settings_path

    if project and user:
        raise BadRequestError("give --project or --user, not both")
    return settings_path("user" if user else "project", project_dir=project_dir.resolve(), home=Path.home())


def server_mounts() -> list[MountFactory]:
    """What the API serves under ``/api`` besides its routes: the MCP endpoint, when installed."""
    try:
        from reflexio.integrations.mcp_server import http_mount
    except ImportError as exc:
        log.warning("MCP over HTTP is off (%s is missing): pip install 'reflexio[mcp]'", exc.name)
        return []
    return [http_mount]
