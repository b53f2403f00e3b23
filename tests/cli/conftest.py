"""Fixtures for the CLI: a real server on a free port and a runner whose environment points at it.

Commands run in-process through Typer's ``CliRunner`` (fast), with ``HOME``, ``REFLEXIO_HOME``,
``REFLEXIO_STORAGE_URL`` and ``REFLEXIO_URL`` naming the server's temporary files, so nothing
touches the real home folder and server-side commands (keys, doctor) see the same storage.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from reflexio.cli import app
from tests.client.live_server import running_server

#: Variables a developer's shell may set that would point the CLI somewhere else.
_OUTSIDE = ("REFLEXIO_API_KEY", "REFLEXIO_STORAGE_URL", "REFLEXIO_URL", "REFLEXIO_HOME", "REFLEXIO_PORT")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment that keeps every Reflexio file under ``home``."""
    return {
        "HOME": str(home),
        "REFLEXIO_HOME": str(home / ".reflexio"),
        "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/reflexio.db",
        **extra,
    }


@dataclass
class Cli:
    """Runs ``reflexio`` commands in-process with a fixed environment."""

    env: dict[str, str]
    runner: CliRunner = field(default_factory=CliRunner)

    def __call__(self, *args: str, ok: bool = True) -> Result:
        unset: dict[str, str | None] = dict.fromkeys(_OUTSIDE)
        result = self.runner.invoke(app, list(args), env={**unset, **self.env})
        if ok and result.exit_code != 0:
            raise AssertionError(
                f"reflexio {' '.join(args)} exited {result.exit_code}:\n{result.output}\n{result.exception!r}"
            )
        return result

    def json(self, *args: str, ok: bool = True) -> Any:
        """Run with ``--json`` and parse stdout."""
        return json.loads(self(*args, "--json", ok=ok).stdout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A live server (no key yet) and its home folder, shared by a module's tests."""
    home = tmp_path_factory.mktemp("cli")
    with running_server(home) as url:
        yield url, home


@pytest.fixture
def cli(server: tuple[str, Path]) -> Cli:
    url, home = server
    return Cli(home_env(home, REFLEXIO_URL=url, COLUMNS="200"))
