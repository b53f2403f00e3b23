"""The real app over a real core, on every storage backend, driven through HTTP in-process.

``client`` is a loopback caller (127.0.0.1) with no API key, so it acts as the default org;
``support.make_client`` builds callers from elsewhere or with a key. Learning runs in no worker here:
published requests stay "deferred", which keeps these tests about the HTTP surface.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.api import create_app
from reflexio.config import Settings
from reflexio.embed import Embedder
from reflexio.service.core import Core
from reflexio.storage import open_storage
from tests.api.support import make_client
from tests.conftest import BACKENDS, storage_url

MAX_BODY_BYTES = 64 * 1024


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> Iterator[Core]:
    url = storage_url(request.param, tmp_path)
    settings = Settings(home=tmp_path, storage_url=url, max_body_bytes=MAX_BODY_BYTES)
    c = Core(settings=settings, storage=open_storage(url, embedder), embedder=embedder)
    yield c
    c.close()


@pytest.fixture(scope="session")
def shared_app(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Any:
    """One app for the whole run: FastAPI compiles its routes (and schema) once per app."""
    settings = Settings(
        home=tmp_path_factory.mktemp("app"), storage_url="memory://", max_body_bytes=MAX_BODY_BYTES
    )
    placeholder = Core(settings=settings, storage=open_storage("memory://", embedder), embedder=embedder)
    return create_app(placeholder, publish_wait_seconds=0.2)


@pytest.fixture
def app(shared_app: Any, core: Core) -> Any:
    """The shared app serving this test's core (routes find the core on ``app.state``)."""
    shared_app.state.core = core
    return shared_app


@pytest.fixture
def client(app: Any) -> TestClient:
    return make_client(app)
