"""``reflexio worker``: job workers in a process of their own.

The embedded server runs its workers in-process; this command runs more of them elsewhere: on
the same machine against the same SQLite file, or on any machine pointed at the same
PostgreSQL (jobs are claimed atomically, so any number of workers can share a queue). On
SIGTERM or Ctrl-C it stops claiming, lets the jobs in hand finish for ``--grace`` seconds and
hands the rest back to the queue, so nothing is lost or left leased.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reflexio.cli import process
from reflexio.cli.options import JsonOpt, settings, wants_json
from reflexio.cli.output import Result, run
from reflexio.config import Settings

if TYPE_CHECKING:
    from reflexio.service.core import Core

__all__ = ["worker"]

log = logging.getLogger("reflexio.worker")

#: Threads when neither --concurrency nor a positive REFLEXIO_WORKERS says otherwise.
DEFAULT_CONCURRENCY = 2
#: Seconds the jobs in hand get to finish after SIGTERM before they are released.
DEFAULT_GRACE_SECONDS = 30.0


def worker(
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", help="Worker threads (default: $REFLEXIO_WORKERS, else 2).", min=1),
    ] = None,
    storage_url: Annotated[
        str | None,
        typer.Option(
            "--storage-url", help="Queue to serve (default: $REFLEXIO_STORAGE_URL, then local SQLite)."
        ),
    ] = None,
    grace: Annotated[
        float, typer.Option("--grace", help="Seconds jobs in hand get to finish at shutdown.", min=0.0)
    ] = DEFAULT_GRACE_SECONDS,
    niceness: Annotated[
        int,
        typer.Option(
            "--niceness",
            help="Lower this process's CPU priority by N so it runs on spare CPU.",
            min=0,
            max=19,
        ),
    ] = 0,
    parent_pid: Annotated[
        int | None,
        typer.Option("--parent-pid", hidden=True, help="Stop when this process (our parent) is gone."),
    ] = None,
    ready_file: Annotated[
        Path | None,
        typer.Option("--ready-file", hidden=True, help="Write this file once the workers claim jobs."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run background job workers (learning, session evaluation) until SIGTERM or Ctrl-C.

    Use it to add capacity beside `reflexio services start`, or with an API started with
    REFLEXIO_WORKERS=0, on this machine (same SQLite file) or any machine sharing PostgreSQL.
    """
    chosen = settings(storage_url=storage_url)
    if niceness and hasattr(os, "nice"):  # POSIX only; elsewhere the worker keeps normal priority
        os.nice(niceness)
    run(wants_json(as_json), lambda: _work(chosen, concurrency, grace, parent_pid, ready_file))


def _work(
    chosen: Settings, concurrency: int | None, grace: float, parent: int | None, ready: Path | None = None
) -> Result:
    from reflexio import telemetry
    from reflexio.service.core import open_core

    telemetry.configure(service_name=f"{chosen.otel_service_name}-worker", otlp_endpoint=chosen.otel_endpoint)
    logging.basicConfig(
        level=chosen.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from reflexio.models.secrets import mask_url

    size = concurrency or (chosen.workers if chosen.workers > 0 else DEFAULT_CONCURRENCY)
    where = mask_url(chosen.storage_url)
    with process.signalled() as stop:  # a signal while opening storage still ends us cleanly
        if parent is not None:
            # Ctrl-C in a terminal reaches the server's whole process group; the server stops
            # us with SIGTERM once it has stopped serving, so we neither race nor get restarted.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        core = open_core(chosen)
        try:
            _serve_queue(core, size, grace, stop, parent, ready)
        finally:
            core.close()
            telemetry.flush()
    log.info("worker stopped")
    data = {"stopped": True, "concurrency": size, "storage_url": where}
    return Result(data, message=f"worker stopped ({size} thread(s) on {where})")


def _serve_queue(
    core: Core,
    size: int,
    grace: float,
    stop: threading.Event,
    parent: int | None = None,
    ready: Path | None = None,
) -> None:
    """Run a pool of ``size`` workers until ``stop`` is set, then shut it down gracefully.

    With ``parent`` (the pid of the server that started us), also stop once we are no longer
    its child: a server killed with SIGKILL cannot stop its worker process, so the worker
    notices it was orphaned (even when that happened while it was still starting).
    """
    from reflexio.models.secrets import mask_url
    from reflexio.service.workers import announce_ready, start_pool

    if stop.is_set():
        return
    pool = start_pool(core, size)
    where = mask_url(core.settings.storage_url)
    log.info("worker started: %s thread(s) on %s; stop with SIGTERM or Ctrl-C", pool.size, where)
    if ready is not None:
        announce_ready(ready)
    while not stop.wait(0.5):
        if parent is not None and os.getppid() != parent:
            log.warning("the server that started this worker (pid %s) is gone", parent)
            break
    if ready is not None:
        ready.unlink(missing_ok=True)  # learning stops with us
    log.info("stopping: finishing or releasing the jobs in hand (up to %.0fs)", grace)
    pool.stop(grace)
