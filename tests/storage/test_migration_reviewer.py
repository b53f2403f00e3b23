"""Migration 009 on a store that already has keys: they keep the review right they had over REST.

Runs on both engines: the store is built as the release before 009 left it (migrations 1-8 and
one key), then opened, which applies 009 and the rest.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.conftest import BACKENDS, storage_url

from reflexio.embed import Embedder
from reflexio.storage import open_storage
from reflexio.storage.queries import migrations

_OLD_KEY = ("acme", "hash-of-an-old-key", "rfx_oldkey00", "ci", 1.0)


def _sqlite_before_009(url: str) -> None:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
        for version, script in migrations("sqlite"):
            if version < 9:
                conn.executescript(script)
                conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
        conn.execute(
            "INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at) VALUES (?, ?, ?, ?, ?)",
            _OLD_KEY,
        )
    conn.close()


def _postgres_before_009(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz)")
        for version, script in migrations("postgres"):
            if version < 9:
                conn.execute(script.encode())
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        conn.execute(
            "INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at) VALUES (%s, %s, %s, %s, %s)",
            _OLD_KEY,
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_keys_made_before_reviewer_keys_stay_reviewers(
    backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    url = storage_url(backend, tmp_path)
    (_sqlite_before_009 if backend == "sqlite" else _postgres_before_009)(url)
    storage = open_storage(url, embedder)
    try:
        (old,) = storage.list_api_keys("acme")
        assert old.prefix == "rfx_oldkey00" and old.reviewer is True
        assert storage.list_api_keys() == [old]  # no key was added or lost on the way
    finally:
        storage.close()
