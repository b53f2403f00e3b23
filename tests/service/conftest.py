"""Fixtures of the service tests: a core over every storage backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexio.config import Settings
from reflexio.service.core import Core, open_core
from tests.conftest import BACKENDS, storage_url


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Core]:
    """A core on a fresh store of each backend (memory, SQLite, PostgreSQL when available)."""
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    yield c
    c.close()
