"""Running the API as a server process, with its job workers.

``serve(settings)`` is what ``reflexio services start`` runs: it opens the core once, mounts the
app, starts ``settings.workers`` job workers with it (nobody has to run a worker separately),
and on shutdown lets the workers finish or release the jobs in hand before the storage is
closed. A stop fits in ``settings.shutdown_grace_seconds``: on the signal, long requests in
flight are cancelled and the workers stop claiming at once; uvicorn waits at most the grace
period for requests, and the workers get what is left of it. The workers run in a child
process the server supervises (``api.worker_process`` says why), or as threads of the server
when the store or the LLM cannot be shared with another process, or when
``REFLEXIO_WORKER_PROCESS=0``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import FrameType

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from reflexio import telemetry
from reflexio.api import create_app
from reflexio.api.lifecycle import Draining
from reflexio.api.mounts import MountFactory
from reflexio.api.worker_process import WorkerProcess
from reflexio.config import Settings
from reflexio.service import org_config
from reflexio.service.core import Core, open_core
from reflexio.service.warmup import Warmup
from reflexio.service.workers import announce_ready, start_pool

__all__ = ["Front", "build_server_app", "in_background", "serve", "workers_can_run_apart"]

log = logging.getLogger(__name__)

#: What is left of the grace period for the workers once requests have drained (at least).
_MIN_WORKER_GRACE = 1.0

#: What the composition root may put in front of the API app (the dashboard: ``web.with_dashboard``).
#: The API never imports what it is given; it only serves it.
Front = Callable[[ASGIApp, Core], ASGIApp]


def _fronted(app: FastAPI, core: Core, front: Front | None) -> ASGIApp:
    return app if front is None else front(app, core)


def build_server_app(
    core: Core,
    *,
    worker_process: bool = False,
    ready_file: Path | None = None,
    mounts: Sequence[MountFactory] = (),
) -> FastAPI:
    """The API app whose lifespan runs (and stops) the job workers.

    Args:
        core: The process core the routes serve.
        worker_process: Run the workers in a supervised child process instead of threads
            (only for a store other processes can open; see `workers_can_run_apart`).
        ready_file: Written once the workers claim jobs, removed when they stop (what
            ``reflexio services start`` waits for before it says "ready").
        mounts: ASGI apps to serve under ``/api`` (see ``api.mounts``).
    """
    app = create_app(core, mounts=mounts)
    app_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        app.state.warmup = Warmup()
        async with _workers(core, app.state.draining, worker_process, ready_file), app_lifespan(app):
            app.state.warmup.start(core)  # /health/ready says "pending" until it is done
            yield

    app.router.lifespan_context = lifespan
    return app


@asynccontextmanager
async def _workers(
    core: Core, draining: Draining, worker_process: bool, ready_file: Path | None
) -> AsyncIterator[None]:
    """Run the job workers (a child process or threads) while the server runs; close the core after.

    ``ready_file`` is written once the workers claim jobs and removed when they stop. The
    workers stop claiming the moment ``draining`` begins, and get what is left of the grace
    period to finish the jobs in hand.
    """
    grace = core.settings.shutdown_grace_seconds
    pool, child = None, None
    if core.settings.workers > 0 and worker_process:
        child = WorkerProcess(core.settings, grace_seconds=grace, ready_file=ready_file)
        child.start()  # the child announces itself once its workers run
        draining.on_begin(child.begin_stop)
    elif core.settings.workers > 0:
        pool = start_pool(core)
        draining.on_begin(pool.begin_stop)
        if ready_file is not None:
            announce_ready(ready_file)
    try:
        yield
    finally:
        draining.begin()  # a lifespan ended without a signal (tests, embedding) drains too
        left = max(_MIN_WORKER_GRACE, draining.remaining(grace))
        if child is not None:
            child.stop(left)
        if pool is not None:
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)
            pool.stop(left)
        core.close()
        telemetry.flush()  # uvicorn ends a signalled process before exit handlers could


def serve(settings: Settings, *, mounts: Sequence[MountFactory] = (), front: Front | None = None) -> None:
    """Serve the API on ``settings.host:settings.port`` until interrupted.

    Args:
        settings: How to run.
        mounts: ASGI apps to serve under ``/api`` as well (the CLI passes the MCP endpoint).
        front: What to serve in front of the API (the CLI passes the dashboard).
    """
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.umask(0o077)  # every file the server creates (logs, key, database) is its owner's only
    telemetry.configure(service_name=settings.otel_service_name, otlp_endpoint=settings.otel_endpoint)
    core = open_core(settings)
    telemetry.observe(job_stats=core.storage.job_stats, llm_usage=core.storage.llm_usage_by_org)
    sealed = org_config.seal_secrets(core)
    if sealed:
        log.info("encrypted the stored secrets of %s org config(s)", sealed)
    apart = settings.worker_process and workers_can_run_apart(core)
    app = build_server_app(core, worker_process=apart, ready_file=settings.workers_ready_file, mounts=mounts)
    log.info("Reflexio on http://%s:%s (storage %s)", settings.host, settings.port, core.storage.backend)
    config = uvicorn.Config(
        _fronted(app, core, front),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_seconds)),
    )
    _DrainingServer(config, app.state.draining).run()


class _DrainingServer(uvicorn.Server):
    """uvicorn, telling the app the moment it is asked to stop (before it waits for requests)."""

    def __init__(self, config: uvicorn.Config, draining: Draining) -> None:
        super().__init__(config)
        self._draining = draining

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._draining.begin()
        super().handle_exit(sig, frame)


def workers_can_run_apart(core: Core) -> bool:
    """Whether another process can serve this core's queue: same store, nothing injected."""
    return core.storage.backend != "memory" and core.llm is None


@contextmanager
def in_background(
    core: Core,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    start_timeout: float = 30.0,
    mounts: Sequence[MountFactory] = (),
    front: Front | None = None,
) -> Iterator[str]:
    """Serve ``core`` (API and workers) in a thread; yields the base URL.

    For embedding Reflexio in another process (notebooks, simulators, tests) over a real
    socket, on ``port`` (0: a free one), with ``front`` (the dashboard) in front of the API if
    given. The core is closed when the block exits.
    """
    api = build_server_app(core, mounts=mounts)
    draining: Draining = api.state.draining
    app = _fronted(api, core, front)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    grace = max(1, round(core.settings.shutdown_grace_seconds))
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=grace)
    server = _DrainingServer(config, draining)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        draining.begin()
        server.should_exit = True
        thread.join(timeout=core.settings.shutdown_grace_seconds + 10)
        sock.close()


if __name__ == "__main__":  # python -m reflexio.api.server: serve with settings from the environment
    serve(Settings.from_env())
