"""Running the API as a server process, with its in-process job workers.

``serve(settings)`` is what ``reflexio services start`` runs: it opens the core once, mounts the
app, starts ``settings.workers`` job workers beside it (the embedded default needs no separate
worker process), and on shutdown lets the workers finish or release the jobs in hand before
the storage is closed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI

from reflexio.api import create_app
from reflexio.config import Settings
from reflexio.service.core import Core, open_core
from reflexio.service.workers import start_pool

__all__ = ["build_server_app", "serve"]

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
