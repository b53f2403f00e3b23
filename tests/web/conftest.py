"""A real browser against the real server: Debian's chromium driven by Playwright for Python.

The browser is the system's ``/usr/bin/chromium`` (``./scripts/test`` installs it), never one
Playwright downloads: these machines are offline. One browser serves the whole run; each
module gets its own server (SQLite in a temporary folder, the demo org seeded through the
real pipeline, the dashboard in front of the API) and each test its own browser context,
so cookies never leak from one test to the next.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reflexio.api.server import in_background
from reflexio.cli.demo_org import seed_demo
from reflexio.config import Settings
from reflexio.embed import Embedder
from reflexio.service.core import Core
from reflexio.storage import open_storage
from reflexio.web import with_dashboard

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Served:
    """A running server: its URL and the core behind it (for setting up and checking state)."""

    url: str
    core: Core


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module. Not for the session: Playwright's sync API runs an event
    loop in this thread while it is open, and the asyncio tests that the same xdist worker
    runs next (integrations, the 0.2.7 README) could not start theirs."""
    if not CHROMIUM.exists():
        missing = "/usr/bin/chromium is missing (./scripts/test installs Debian's chromium package)"
        if os.environ.get("REFLEXIO_BROWSER_REQUIRED"):
            pytest.fail(missing)
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@contextmanager
def serving(home: Path, embedder: Embedder, *, demo: bool = True) -> Iterator[Served]:
    """A fresh SQLite server under ``home`` with the dashboard, the demo org seeded if asked.

    No job workers run: the demo runs its own jobs while seeding, and the tests drive the rest.
    """
    url = f"sqlite:///{home}/reflexio.db"
    settings = Settings(home=home, storage_url=url, workers=0)
    core = Core(settings=settings, storage=open_storage(url, embedder), embedder=embedder)
    if demo:
        seed_demo(core, settings.default_org_id)
    with in_background(core, front=with_dashboard) as base:
        yield Served(base, core)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Served]:
    """The demo org on a fresh server of this module's own."""
    with serving(tmp_path_factory.mktemp("web"), embedder) as server:
        yield server


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A tab of its own; a script error or failed load fails the test (unless it expects refusals)."""
    refusals = request.node.get_closest_marker("refusals") is not None
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))

    def console(msg: Any) -> None:
        refused = msg.text.startswith("Failed to load resource: the server responded with a status of 4")
        if msg.type == "error" and not (refusals and refused):
            errors.append(msg.text)

    tab.on("console", console)
    yield tab
    context.close()
    assert errors == [], f"the page logged errors: {errors}"
