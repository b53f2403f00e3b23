"""Running the API as a server process, with its in-process job workers.

``serve(settings)`` is what ``reflexio services start`` runs: it opens the core once, mounts the
app, starts ``settings.workers`` job workers beside it (the embedded default needs no separate
worker process), and on shutdown lets the workers finish or release the jobs in hand before
the storage is closed.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import uvicorn
from fastapi import FastAPI

from reflexio.api import create_app
from reflexio.config import Settings
from reflexio.service.core import Core, open_core
from reflexio.service.workers import start_pool

__all__ = ["build_server_app", "in_background", "serve"]

log = logging.getLogger(__name__)

#: Seconds the workers get at shutdown to finish the jobs in hand.
SHUTDOWN_GRACE_SECONDS = 20.0


def build_server_app(core: Core) -> FastAPI:
    """The API app whose lifespan runs (and stops) the in-process workers."""
    app = create_app(core)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool = start_pool(core) if core.settings.workers > 0 else None
        try:
            yield
        finally:
            if pool is not None:
                pool.stop(SHUTDOWN_GRACE_SECONDS)
            core.close()

    app.router.lifespan_context = lifespan
    return app


def serve(settings: Settings) -> None:
    """Serve the API on ``settings.host:settings.port`` until interrupted."""
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    core = open_core(settings)
    app = build_server_app(core)
    log.info("Reflexio on http://%s:%s (storage %s)", settings.host, settings.port, core.storage.backend)
    uvicorn.run(
        app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(), access_log=False
    )


@contextmanager
def in_background(core: Core, *, host: str = "127.0.0.1", start_timeout: float = 30.0) -> Iterator[str]:
    """Serve ``core`` (API and workers) on a free port in a thread; yields the base URL.

    For embedding Reflexio in another process (notebooks, simulators, tests) over a real
    socket. The core is closed when the block exits.
    """
    app = build_server_app(core)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
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
