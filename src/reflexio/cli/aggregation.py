"""``reflexio agent-playbooks aggregate``: generalise user playbooks now, optionally waiting.

The command submits the durable aggregation job of one agent version (the server's workers run
it) and, with ``--wait``, follows its operation with a progress bar on stderr, so stdout keeps
only the result (or the JSON document with ``--json``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, run
from reflexio.errors import ServiceUnavailableError

if TYPE_CHECKING:
    from reflexio.client import ReflexioClient
    from reflexio.models.api_aggregation import PlaybookAggregationOperation

__all__ = ["aggregate"]

#: Seconds between two polls of the operation while waiting.
POLL_SECONDS = 0.5
_FINISHED = ("succeeded", "failed")


def aggregate(
    agent_version: Annotated[
        str | None,
        typer.Option("--agent-version", help="Agent version (default: agent-v0).", show_default=False),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Playbook name.")] = "playbook",
    full: Annotated[
        bool, typer.Option("--full", help="Re-cluster everything, not only what changed.")
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the run to its end, with a progress bar.")
    ] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait with --wait.", min=1)] = 600.0,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Aggregate an agent version's user playbooks into agent playbooks (pending review)."""
    from reflexio.models import DEFAULT_AGENT_VERSION

    quiet = wants_json(as_json)

    def action() -> Result:
        with client(url, api_key) as api:
            op = api.submit_playbook_aggregation(
                agent_version=agent_version or DEFAULT_AGENT_VERSION, playbook_name=name, full=full
            )
            if wait:
                op = _follow(api, op, timeout, show=not quiet)
        return _result(op, waited=wait)

    run(quiet, action)


def _follow(
    api: ReflexioClient, op: PlaybookAggregationOperation, timeout: float, *, show: bool
) -> PlaybookAggregationOperation:
    """Poll the operation until it ends, drawing its progress on stderr.

    Raises:
        ServiceUnavailableError: It did not end within ``timeout`` (is a worker running?).
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description:<22}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    deadline = time.monotonic() + timeout
    with Progress(*columns, console=Console(stderr=True), disable=not show, transient=True) as bar:
        task = bar.add_task(op.status, total=None)
        while op.status not in _FINISHED:
            if time.monotonic() > deadline:
                raise ServiceUnavailableError(
                    f"aggregation {op.operation_id} is still {op.status} after {timeout:.0f} s; "
                    "is a worker running (`reflexio services start` or `reflexio worker`)?"
                )
            time.sleep(POLL_SECONDS)
            op = api.get_playbook_aggregation_operation(op.operation_id)
            total = op.progress.get("clusters_total")
            bar.update(
                task,
                description=str(op.progress.get("stage") or op.status),
                completed=int(op.progress.get("clusters_done") or 0),
                total=int(total) if isinstance(total, int) and total > 0 else None,
            )
    return op


def _result(op: PlaybookAggregationOperation, *, waited: bool) -> Result:
    if not waited:
        message = (
            f"Aggregation {op.operation_id} is {op.status}; the server's workers run it (--wait follows it)"
        )
        return Result(op, message=message)
    if op.status == "failed" or op.result is None:
        raise ServiceUnavailableError(f"aggregation {op.operation_id} failed: {op.error or 'no result'}")
    r = op.result
    fields = {
        "clusters": r.clusters_found,
        "user playbooks": r.user_playbooks_processed,
        "new (pending review)": r.playbooks_generated,
        "updated in place": r.playbooks_updated,
        "revisions proposed": r.revisions_proposed,
        "retired": r.playbooks_retired,
        "unchanged clusters": r.clusters_unchanged,
        "below the user gate": r.below_gate,
        "rejected, same evidence": r.same_evidence_as_rejected,
        "aggregator calls": r.aggregator_calls,
    }
    review = r.playbooks_generated or r.revisions_proposed
    hint = "; review: reflexio agent-playbooks list --status pending" if review else ""
    return Result(op, message=f"Aggregation {op.operation_id} succeeded{hint}", fields=fields)
