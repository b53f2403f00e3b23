"""The core every surface calls: storage, embedder and settings, opened once per process.

HTTP routes, the CLI (in local mode), workers and benchmarks all build one ``Core`` and call the
use-case functions of ``reflexio.service`` with it, so a behaviour exists in one place only.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from reflexio.config import Settings
from reflexio.embed import CachedEmbedder, Embedder, open_embedder
from reflexio.errors import ValidationError
from reflexio.llm import LLM
from reflexio.models.org_config import Config
from reflexio.service.vault import Vault, load_keys
from reflexio.storage import Storage, open_storage

__all__ = ["HOT_PATH_CONFIG_AGE", "INSTRUCTION_CACHE_ENTRIES", "Core", "keep_private", "open_core"]

log = logging.getLogger(__name__)


#: Seconds a sighting of API keys is trusted (see ``Core.keys_exist``).
KEYS_SEEN_SECONDS = 5.0
#: Seconds-old org config that publish and search accept instead of reading storage per call.
HOT_PATH_CONFIG_AGE = 1.0
#: Instruction vectors a core remembers (``Core.instruction_embedder``): about 1.5 KB each
#: with the bundled embedder.
INSTRUCTION_CACHE_ENTRIES = 10_000


_T = TypeVar("_T")


class _Recent(Generic[_T]):
    """Per-org copies of a stored value, each with when it was read: what the ``max_age``
    reads of ``Core`` (config, plan) serve from."""

    def __init__(self) -> None:
        self._copies: dict[str, tuple[float, _T]] = {}

    def get(self, org_id: str, max_age: float, read: Callable[[], _T]) -> _T:
        """The copy read up to ``max_age`` seconds ago, else a fresh ``read()`` (kept)."""
        if max_age > 0:
            cached = self._copies.get(org_id)
            if cached is not None and time.monotonic() - cached[0] <= max_age:
                return cached[1]
        value = read()
        self._copies[org_id] = (time.monotonic(), value)
        return value

    def forget(self, org_id: str) -> None:
        self._copies.pop(org_id, None)


@dataclass
class Core:
    """Process-wide dependencies of the use cases.

    Attributes:
        settings: How this process runs.
        storage: The backend holding everything.
        embedder: Turns text into vectors for search (also owned by storage for writes).
        llm: An LLM every org uses instead of its configured provider (a ``ScriptedLLM`` in
            tests, demos and benchmarks); None means each org's own configuration decides.
        clock: The wall clock (epoch seconds) that decides which month quotas count in;
            tests move it to roll a month over.
    """

    settings: Settings
    storage: Storage
    embedder: Embedder
    llm: LLM | None = None
    clock: Callable[[], float] = time.time
    _vault: Vault | None = field(default=None, repr=False)
    _configs: _Recent[Config] = field(default_factory=lambda: _Recent[Config](), repr=False)
    _plans: _Recent[dict[str, Any] | None] = field(
        default_factory=lambda: _Recent[dict[str, Any] | None](), repr=False
    )
    _keys_seen_at: float = field(default=-math.inf, repr=False)
    _instructions: CachedEmbedder | None = field(default=None, repr=False)

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
        return self._configs.get(org_id, max_age, lambda: self._read_config(org_id))

    def org_plan(self, org_id: str, *, max_age: float = 0.0) -> dict[str, Any] | None:
        """The plan document an operator assigned to the org (None: the server's default).

        Args:
            org_id: The org.
            max_age: Accept a copy read up to this many seconds ago, as ``org_config`` does:
                every search is charged against its plan, and reading the plan each time cost
                a search a storage round trip. A read without ``max_age`` (after ``set_plan``)
                refreshes the copy, so this process sees its own change at once.
        """
        return self._plans.get(org_id, max_age, lambda: self.storage.get_org_plan(org_id))

    def forget_config(self, org_id: str) -> None:
        """Drop the cached copy after this process changed the org's config."""
        self._configs.forget(org_id)

    @property
    def vault(self) -> Vault:
        """What encrypts the secrets of stored configs (keys: ``service.vault``), made on first use."""
        if self._vault is None:
            key_file = self.settings.secret_key_file or self.settings.home / "secret.key"
            self._vault = Vault(load_keys(self.settings.secret_keys, key_file))
        return self._vault

    @property
    def instruction_embedder(self) -> Embedder:
        """``embedder`` remembering the document vectors it made: what aggregation embeds the
        instructions of user playbooks with.

        A scope's one-off preferences stay short of the gate run after run, and are compared
        each time one of them changes, so their vectors are worth keeping between runs, for
        as long as the process (its core) lives. The cache is the core's rather than a module's
        because it belongs to one embedder: it is made on first use and made again when
        ``embedder`` is replaced (tests swap it), so one model's vectors never answer for
        another's, and two cores in a process do not share one. Two threads making it at
        once cost at most one cache dropped, never a wrong vector.
        """
        cache = self._instructions
        if cache is None or cache.inner is not self.embedder:
            cache = CachedEmbedder(self.embedder, INSTRUCTION_CACHE_ENTRIES, kinds=("document",))
            self._instructions = cache
        return cache

    def put_config(self, org_id: str, config: Config) -> None:
        """Store the org's config, its secrets encrypted, and forget the cached copy."""
        self.storage.put_org_config(org_id, self.vault.seal(config.model_dump(mode="json")))
        self.forget_config(org_id)

    def _read_config(self, org_id: str) -> Config:
        stored = self.storage.get_org_config(org_id)
        if stored is None:
            return Config()
        try:
            return Config.from_stored(self.vault.unseal(stored))
        except ValueError as exc:
            log.error("stored config of org %s is invalid: %s", org_id, exc)
            raise ValidationError(f"the stored config of this org is invalid: {exc}") from exc

    def close(self) -> None:
        """Release storage connections."""
        self.storage.close()


def open_core(settings: Settings) -> Core:
    """Open the embedder and storage that ``settings`` name (migrating storage).

    The data directory and a SQLite store are made the owner's only first: they hold every
    org's data.
    """
    keep_private(settings)
    embedder = open_embedder(settings.embedder)
    storage = open_storage(settings.storage_url, embedder, search_index_mb=settings.search_index_mb)
    return Core(settings=settings, storage=storage, embedder=embedder)


#: What a SQLite store is made of on disk (WAL mode).
_SQLITE_FILES = ("", "-wal", "-shm")


def keep_private(settings: Settings) -> None:
    """Make ``settings.home`` (0700) and a SQLite store's files (0600) readable by their owner only.

    A missing database file is created empty with mode 0600 (SQLite gives its journal files
    the database file's mode); existing ones are tightened. Other stores are left alone.
    """
    settings.home.mkdir(parents=True, exist_ok=True)
    settings.home.chmod(0o700)
    if not settings.storage_url.startswith("sqlite:///"):
        return
    database = Path(settings.storage_url.removeprefix("sqlite:///"))
    if not database.parent.exists():
        database.parent.mkdir(parents=True, mode=0o700)
    if not database.exists():
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT, 0o600))
    for suffix in _SQLITE_FILES:
        path = database.with_name(database.name + suffix)
        if path.exists():
            path.chmod(0o600)
