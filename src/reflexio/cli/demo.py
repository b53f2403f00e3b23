"""``reflexio demo``: seed a realistic demo org and start the server, to see a populated dashboard.

What is seeded, and how, is in ``cli.demo_org`` (imported only when the command runs: it needs
the server's dependencies).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from reflexio.cli.options import JsonOpt, settings, wants_json
from reflexio.cli.output import Result, run

__all__ = ["demo"]


def demo(
    org: Annotated[
        str | None, typer.Option("--org", help="The org to seed (default: the default org).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="Port of the server to start (default 8081).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Seed a realistic demo org (a support agent, a dozen users) and start the server with its dashboard.

    Conversations are published and learned from by the real job workers; sessions are judged;
    some agent playbooks are approved or rejected by a demo reviewer and the rest wait in the
    review queue. Then the server starts in the background (or keeps running) and the
    dashboard's address is printed. Run it once: a second run adds a second copy.
    """

    def action() -> Result:
        from reflexio.cli.demo_org import seed_into
        from reflexio.cli.services import start_unless_running

        chosen = settings(port=port)
        seeded = seed_into(chosen, org)
        started = start_unless_running(chosen, quiet=wants_json(as_json))
        return Result(
            {**started.data, "seeded": dataclasses.asdict(seeded)},
            message=(
                f"Seeded org {seeded.org_id!r}: {seeded.users} users, {seeded.sessions} sessions, "
                f"{seeded.agent_playbooks} agent playbooks. {started.message}"
            ),
        )

    run(wants_json(as_json), action)
