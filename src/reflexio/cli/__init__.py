"""The ``reflexio`` command line (Typer + Rich).

Run the server and workers (``services``, ``worker``), drive the agent loop by hand
(``publish``, ``search``), curate what was learned (``profiles``, ``user-playbooks``,
``agent-playbooks``), and administer an install (``config``, ``keys``, ``jobs``, ``export``,
``doctor``). Every command takes ``--json`` and then prints exactly one JSON document, errors
included (``{"error": ..., "detail": ...}``), and exits non-zero on failure.

Server-side modules (FastAPI, storage, the embedder) are imported only by the commands that
need them, so data commands start fast and work with the client-only install.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from reflexio.cli import (
    admin,
    data,
    demo,
    doctor,
    evaluation,
    generation,  # noqa: F401  (registers rerun/upgrade/... on the learnings groups)
    integrations,
    learnings,
    plans,
    secrets,
    services,
    watch,
    worker,
)  # generation registers its commands on import
from reflexio.cli.options import GLOBALS, ApiKeyOpt, Globals, UrlOpt

__all__ = ["app", "main"]

app = typer.Typer(
    name="reflexio",
    help="Reflexio: a learning layer for AI agents. Run the server, publish, search and review learnings.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from reflexio._version import __version__

        typer.echo(f"reflexio {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for every command.")] = False,
    _version: Annotated[
        bool,
        typer.Option("--version", help="Show the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """Reflexio: a learning layer for AI agents."""
    GLOBALS.set(Globals(url=url, api_key=api_key, as_json=as_json))


app.add_typer(services.app, name="services")
data.register(app)
app.add_typer(learnings.profiles, name="profiles")
app.add_typer(learnings.user_playbooks, name="user-playbooks")
app.add_typer(learnings.agent_playbooks, name="agent-playbooks")
app.add_typer(admin.config, name="config")
app.add_typer(admin.keys, name="keys")
app.add_typer(admin.jobs, name="jobs")
app.add_typer(secrets.secrets, name="secrets")
app.add_typer(plans.plan, name="plan")
app.command()(plans.usage)
app.add_typer(evaluation.app, name="eval")
app.command()(worker.worker)
app.command()(doctor.doctor)
app.command()(integrations.mcp)
app.command()(watch.watch)
app.add_typer(integrations.integrations, name="integrations")
app.command()(demo.demo)


def main() -> None:
    """Entry point of the ``reflexio`` script and ``python -m reflexio``."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is noise in a CLI
    app()
