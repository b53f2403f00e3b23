"""A live server for the integration tests: the real API (with the MCP mount) over a socket.

SQLite under a temporary home, no job workers (these tests are about the surfaces, not
learning), the bundled WordLlama embedder (fast to load).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reflexio import ReflexioClient
from reflexio.api.server import in_background
from reflexio.config import Settings
from reflexio.service.core import Core, open_core


@dataclass
class Live:
    """A running server: its URL, its core (to create keys) and its home folder."""

    url: str
    core: Core
    home: Path

    def client(self, api_key: str = "") -> ReflexioClient:
        return ReflexioClient(api_key=api_key, url_endpoint=self.url)


def live_settings(home: Path, **extra: str) -> Settings:
    return Settings.from_env(
        {
            "HOME": str(home),
            "REFLEXIO_HOME": str(home / ".reflexio"),
            "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/reflexio.db",
            "REFLEXIO_EMBEDDER": "wordllama",
            "REFLEXIO_WORKERS": "0",
            **extra,
        }
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    from reflexio.integrations.mcp_server import http_mount

    home = tmp_path_factory.mktemp("live")
    core = open_core(live_settings(home))
    with in_background(core, mounts=[http_mount]) as url:
        yield Live(url=url, core=core, home=home)
