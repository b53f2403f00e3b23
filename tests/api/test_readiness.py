"""Readiness tells the truth after a start: not ready until the first searches will be fast (defect 6).

Before, ``/health/ready`` said ready at once while the first searches still loaded the model
and built each org's index (4-9 s under load). Now the server warms up first, and readiness
says ``pending`` until it is done.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from reflexio.api.server import build_server_app
from reflexio.config import Settings
from reflexio.embed import Embedder, Vectors
from reflexio.models import AddUserProfileRequest, UserProfile
from reflexio.service import profiles
from reflexio.service.core import Core
from reflexio.storage import open_storage
from tests.api.support import profile


class _ColdEmbedder:
    """An embedder whose first query embedding waits, like a model loading on first use."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.loaded = threading.Event()

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str], *, kind: Any = "document") -> Vectors:
        if kind == "query":
            assert self.loaded.wait(30)
        return self._inner.embed(texts, kind=kind)


def test_not_ready_until_warm(tmp_path: Path, embedder: Embedder) -> None:
    cold = _ColdEmbedder(embedder)
    settings = Settings(home=tmp_path, storage_url="memory://", workers=0)
    core = Core(settings=settings, storage=open_storage("memory://", cold), embedder=cold)
    request = AddUserProfileRequest(user_profiles=[UserProfile.model_validate(profile("p1", "likes tea"))])
    profiles.add_user_profiles(core, settings.default_org_id, request)
    app = build_server_app(core)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # runs the lifespan: warm-up starts
        pending = client.get("/health/ready")
        assert client.get("/health/live").status_code == 200
        cold.loaded.set()
        assert app.state.warmup.wait(30)
        ready = client.get("/health/ready")
    assert pending.status_code == 503 and pending.json()["checks"]["warmup"]["status"] == "pending"
    assert ready.status_code == 200 and ready.json()["checks"]["warmup"]["status"] == "passed"


class _HeldStore:
    """A store whose ``held`` method first waits for ``release``: a database that is slow at
    one thing (PostgreSQL building the search indexes from the rows) or does not answer it
    (a ping behind a dropped network)."""

    def __init__(self, inner: Any, release: threading.Event, held: str) -> None:
        self._inner, self._release, self._held = inner, release, held

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name != self._held:
            return method

        def after_release(*args: Any, **kwargs: Any) -> Any:
            self._release.wait(30)
            return method(*args, **kwargs)

        return after_release


def test_a_server_answers_liveness_while_its_indexes_load(tmp_path: Path, embedder: Embedder) -> None:
    """Loading the indexes once ran before the server accepted a connection: a large
    PostgreSQL org kept even ``/health/live`` silent for a minute."""
    loaded = threading.Event()
    settings = Settings(home=tmp_path, storage_url="memory://", workers=0)
    core = Core(
        settings=settings,
        storage=_HeldStore(open_storage("memory://", embedder), loaded, "warm_search"),
        embedder=embedder,
    )
    app = build_server_app(core)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # the lifespan has run: serving
        assert client.get("/health/live").status_code == 200
        pending = client.get("/health/ready")
        loaded.set()
        assert app.state.warmup.wait(30)
        ready = client.get("/health/ready")
    assert pending.status_code == 503 and pending.json()["checks"]["warmup"]["status"] == "pending"
    assert ready.status_code == 200


def test_readiness_answers_within_two_seconds_when_storage_hangs(tmp_path: Path, embedder: Embedder) -> None:
    """Defect 5: readiness hung for as long as a PostgreSQL outage lasted."""
    release = threading.Event()
    store = _HeldStore(open_storage("memory://", embedder), release, "ping")
    core = Core(settings=Settings(home=tmp_path, storage_url="memory://"), storage=store, embedder=embedder)
    app = build_server_app(core)
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            started = time.monotonic()
            answer = client.get("/health/ready")
            took = time.monotonic() - started
            live = client.get("/health/live")
            release.set()
    finally:
        release.set()
    assert answer.status_code == 503 and took < 3.0, took
    assert "did not answer within 2s" in answer.json()["checks"]["storage"]["reason"]
    assert live.status_code == 200
