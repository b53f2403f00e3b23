"""The real API app served by uvicorn on a free loopback port, in a background thread.

Clients under test then talk to it over a real socket, exactly as an agent on this machine
would: no in-process shortcut, so redirects, headers, bodies on DELETE and the loopback
authentication rule are all exercised for real.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from reflexio.api import create_app
from reflexio.config import Settings
from reflexio.service.core import open_core

__all__ = ["running_server"]

_START_TIMEOUT_SECONDS = 30.0


@contextmanager
def running_server(home: Path, *, publish_wait_seconds: float = 2.0) -> Iterator[str]:
    """Serve a fresh SQLite-backed app under ``home``; yields its base URL.

    ``home`` also stands in for ``$HOME``, so nothing is read from or written to the real
    one. No job workers run: the tests are about the wire, not about learning.
    """
    settings = Settings.from_env(
        {
            "HOME": str(home),
            "REFLEXIO_HOME": str(home / ".reflexio"),
            "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/reflexio.db",
        }
    )
    core = open_core(settings)
    app = create_app(core, publish_wait_seconds=publish_wait_seconds)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        core.close()
