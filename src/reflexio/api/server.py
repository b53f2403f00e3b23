"""Running the API as a server process, with its job workers.

``serve(settings)`` is what ``reflexio services start`` runs: it opens the core once, mounts the
app, starts ``settings.workers`` job workers with it (nobody has to run a worker separately),
and on shutdown lets the workers finish or release the jobs in hand before the storage is
closed. The workers run in a child process the server supervises
(``api.worker_process`` says why), or as threads of the server when the store or the LLM
cannot be shared with another process, or when ``REFLEXIO_WORKER_PROCESS=0``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from reflexio import telemetry
from reflexio.api import create_app
from reflexio.api.mounts import MountFactory
from reflexio.api.worker_process import WorkerProcess
from reflexio.config import Settings
from reflexio.service.core import Core, open_core
from reflexio.service.workers import announce_ready, start_pool

__all__ = ["Front", "build_server_app", "in_background", "serve", "workers_can_run_apart"]

log = logging.getLogger(__name__)

#: Seconds the workers get at shutdown to finish the jobs in hand.
SHUTDOWN_GRACE_SECONDS = 20.0

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
        async with _workers(core, worker_process, ready_file), app_lifespan(app):
            yield

    app.router.lifespan_context = lifespan
    return app


@asynccontextmanager
async def _workers(core: Core, worker_process: bool, ready_file: Path | None) -> AsyncIterator[None]:
    """Run the job workers (a child process or threads) while the server runs; close the core after.

    ``ready_file`` is written once the workers claim jobs and removed when they stop.
    """
    pool, child = None, None
    core.storage.warm_search()  # before the first request: a restart is not a cold start
    if core.settings.workers > 0 and worker_process:
        child = WorkerProcess(core.settings, grace_seconds=SHUTDOWN_GRACE_SECONDS, ready_file=ready_file)
        child.start()  # the child announces itself once its workers run
    elif core.settings.workers > 0:
        pool = start_pool(core)
        if ready_file is not None:
            announce_ready(ready_file)
    try:
        yield
    finally:
        if child is not None:
            child.stop()
        if pool is not None:
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)
            pool.stop(SHUTDOWN_GRACE_SECONDS)
        core.close()


def serve(settings: Settings, *, mounts: Sequence[MountFactory] = (), front: Front | None = None) -> None:
    """Serve the API on ``settings.host:settings.port`` until interrupted.

    Args:
        settings: How to run.
        mounts: ASGI apps to serve under ``/api`` as well (the CLI passes the MCP endpoint).
        front: What to serve in front of the API (the CLI passes the dashboard).
    """
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    telemetry.configure(service_name=settings.otel_service_name, otlp_endpoint=settings.otel_endpoint)
    core = open_core(settings)
    telemetry.observe(job_stats=core.storage.job_stats, llm_usage=core.storage.llm_usage_by_org)
    apart = settings.worker_process and workers_can_run_apart(core)
    app = build_server_app(core, worker_process=apart, ready_file=settings.workers_ready_file, mounts=mounts)
    log.info("Reflexio on http://%s:%s (storage %s)", settings.host, settings.port, core.storage.backend)
    uvicorn.run(
        _fronted(app, core, front),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
    )


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
    app = _fronted(build_server_app(core, mounts=mounts), core, front)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
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
        server.should_exit = True
        thread.join(timeout=SHUTDOWN_GRACE_SECONDS + 10)
        sock.close()


if __name__ == "__main__":  # python -m reflexio.api.server: serve with settings from the environment
    serve(Settings.from_env())
