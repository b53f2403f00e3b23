"""The in-process server ``bench.loop`` plays against when no ``--url`` is given.

A real API server on a free loopback port (a temporary SQLite file, the bundled embedder, and
in-process job workers), driven over the socket by the SDK exactly as an agent would. With
``--extractor llm`` the org's LLM is ``reflexio.testing.rules_script()``, a ScriptedLLM placed
through the same seam a configured provider uses, so calls and tokens are accounted for real.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reflexio.api.server import in_background
from reflexio.config import DEFAULT_ORG_ID, Settings
from reflexio.service.core import open_core
from reflexio.testing import rules_script

__all__ = ["local_server"]


@contextmanager
def local_server(extractor: str) -> Iterator[tuple[str, Callable[[], tuple[int, int]]]]:
    """Yield (base URL, usage()) where usage() gives (LLM calls, LLM tokens) so far."""
    with tempfile.TemporaryDirectory(prefix="reflexio-loop-") as tmp:
        home = Path(tmp)
        settings = Settings.from_env(
            {
                "HOME": str(home),
                "REFLEXIO_HOME": str(home / ".reflexio"),
                "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/loop.db",
                "REFLEXIO_WORKERS": "2",
                "REFLEXIO_JOB_POLL_SECONDS": "0.02",
            }
        )
        core = open_core(settings)
        if extractor == "llm":
            core.llm = rules_script()

        def usage() -> tuple[int, int]:
            summary = core.storage.llm_usage(DEFAULT_ORG_ID)
            return summary.calls, summary.tokens

        with in_background(core) as url:
            yield url, usage
