"""The core every surface calls: storage, embedder and settings, opened once per process.

HTTP routes, the CLI (in local mode), workers and benchmarks all build one ``Core`` and call the
use-case functions of ``reflexio.service`` with it, so a behaviour exists in one place only.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

from reflexio.config import Settings
from reflexio.embed import Embedder, open_embedder
from reflexio.errors import ValidationError
from reflexio.llm import LLM
from reflexio.models.org_config import Config
from reflexio.storage import Storage, open_storage

__all__ = ["HOT_PATH_CONFIG_AGE", "Core", "open_core"]

log = logging.getLogger(__name__)


#: Seconds a sighting of API keys is trusted (see ``Core.keys_exist``).
KEYS_SEEN_SECONDS = 5.0
#: Seconds-old org config that publish and search accept instead of reading storage per call.
HOT_PATH_CONFIG_AGE = 1.0


@dataclass
class Core:
    """Process-wide dependencies of the use cases.

    Attributes:
        settings: How this process runs.
        storage: The backend holding everything.
        embedder: Turns text into vectors for search (also owned by storage for writes).
        llm: An LLM every org uses instead of its configured provider (a ``ScriptedLLM`` in
            tests, demos and benchmarks); None means each org's own configuration decides.
    """

    settings: Settings
    storage: Storage
    embedder: Embedder
    llm: LLM | None = None
    _configs: dict[str, tuple[float, Config]] = field(default_factory=dict, repr=False)
    _keys_seen_at: float = field(default=-math.inf, repr=False)

    def keys_exist(self) -> bool:
        """Whether any API key exists (so every ``/api`` request needs one).

        Once keys are seen, the answer is kept for ``KEYS_SEEN_SECONDS``: a keyed deployment
        then spares each request a query, and the staleness errs only on the strict side (for
        a few seconds after another process revokes the last key, keys are still demanded).
        While there is none, storage is asked every time, so the first key created anywhere
        counts at once.
        """
        if time.monotonic() - self._keys_seen_at <= KEYS_SEEN_SECONDS:
            return True
        if self.storage.has_api_keys():
            self._keys_seen_at = time.monotonic()
            return True
        return False

    def forget_keys(self) -> None:
        """Re-read whether keys exist on the next request (after this process revoked one)."""
        self._keys_seen_at = -math.inf

    def org_config(self, org_id: str, *, max_age: float = 0.0) -> Config:
        """The org's config, or the defaults when it never set one.

        Args:
            org_id: The org.
            max_age: Accept a copy read up to this many seconds ago (hot paths such as search
                and publish read the config on every call; `HOT_PATH_CONFIG_AGE` of staleness
                there is harmless, and a change made through this process is seen at once).
        """
        if max_age > 0:
            cached = self._configs.get(org_id)
            if cached is not None and time.monotonic() - cached[0] <= max_age:
                return cached[1]
        config = self._read_config(org_id)
        self._configs[org_id] = (time.monotonic(), config)
        return config

    def forget_config(self, org_id: str) -> None:
        """Drop the cached copy after this process changed the org's config."""
        self._configs.pop(org_id, None)

    def _read_config(self, org_id: str) -> Config:
        stored = self.storage.get_org_config(org_id)
        if stored is None:
            return Config()
        try:
            return Config.from_stored(stored)
        except ValueError as exc:
            log.error("stored config of org %s is invalid: %s", org_id, exc)
            raise ValidationError(f"the stored config of this org is invalid: {exc}") from exc

    def close(self) -> None:
        """Release storage connections."""
        self.storage.close()


def open_core(settings: Settings) -> Core:
    """Open the embedder and storage that ``settings`` name (migrating storage)."""
    embedder = open_embedder(settings.embedder)
    storage = open_storage(settings.storage_url, embedder, search_index_mb=settings.search_index_mb)
    return Core(settings=settings, storage=storage, embedder=embedder)
