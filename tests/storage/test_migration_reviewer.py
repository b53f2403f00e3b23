"""Migration 009 on a store that already has keys: they keep the review right they had over REST."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reflexio.embed import Embedder
from reflexio.storage import open_storage
from reflexio.storage.queries import migrations


def _store_before_009(path: Path) -> None:
    """A SQLite store as the release before reviewer keys left it, holding one key."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
        for version, script in migrations("sqlite"):
            if version < 9:
                conn.executescript(script)
                conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
        conn.execute(
            "INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at) VALUES (?, ?, ?, ?, ?)",
            ("acme", "hash-of-an-old-key", "rfx_oldkey00", "ci", 1.0),
        )
    conn.close()


def test_keys_made_before_reviewer_keys_stay_reviewers(tmp_path: Path, embedder: Embedder) -> None:
    path = tmp_path / "reflexio.db"
    _store_before_009(path)
    storage = open_storage(f"sqlite:///{path}", embedder)
    try:
        (old,) = storage.list_api_keys("acme")
        assert old.prefix == "rfx_oldkey00" and old.reviewer is True
    finally:
        storage.close()
