"""The hooks' local state: a small SQLite file that outlives the server being down.

Three tables, all written in short transactions so concurrent hooks of several Claude Code
sessions never corrupt each other (WAL, a busy timeout):

* ``outbox``: publishes waiting to be sent, keyed by their ``request_id`` (the server stores a
  request id once, so sending one twice is harmless); a publish the server refuses for good
  (4xx) is kept with its error instead of being retried forever;
* ``transcripts``: per session, how far the transcript has been read, so each publish carries
  the turns since the previous one and none twice;
* ``injections``: what the prompt hook injected (the ``retrieved_learnings``), until the stop
  hook publishes it with the answer it went with.

The prompt hook opens this on every prompt, so it imports ``json``, ``os``, ``sqlite3`` and
``time`` only: no ``dataclasses``, ``contextlib``, ``pathlib`` or ``typing``, which would cost
that hook more start-up time than its search (``bench/hooks``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

TYPE_CHECKING = False  # type checkers read this as True; ``typing`` is not imported at run time
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Injection", "Outbox", "Pending"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    created_at REAL NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    dead       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS transcripts (
    session_id TEXT PRIMARY KEY,
    path       TEXT NOT NULL,
    offset     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS injections (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    learnings   TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS injections_session ON injections (session_id, id);
CREATE TABLE IF NOT EXISTS flusher (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT NOT NULL,
    until  REAL NOT NULL
);
"""


class Pending:
    """A publish waiting in the outbox."""

    __slots__ = ("attempts", "id", "payload", "request_id")

    def __init__(self, id: int, request_id: str, payload: dict[str, Any], attempts: int) -> None:
        self.id = id
        self.request_id = request_id
        self.payload = payload
        self.attempts = attempts


class Injection:
    """What the prompt hook injected for one prompt of a session."""

    __slots__ = ("id", "learnings", "prompt")

    def __init__(self, id: int, prompt: str, learnings: list[dict[str, str]]) -> None:
        self.id = id
        self.prompt = prompt
        self.learnings = learnings


class _Transaction:
    """``with outbox.transaction() as db``: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on error."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


class Outbox:
    """The hooks' SQLite file (created on first use, owner-only)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 2.0) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        fresh = not os.path.exists(path)
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        if fresh:
            os.chmod(path, 0o600)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def transaction(self) -> _Transaction:
        """One write transaction (taken at once, so concurrent hooks queue instead of failing)."""
        return _Transaction(self._db)

    # -- transcripts ------------------------------------------------------------------------
    def offset(self, session_id: str) -> int:
        """How many bytes of the session's transcript were already published."""
        row = self._db.execute(
            "SELECT offset FROM transcripts WHERE session_id = ?", (session_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    # -- injections -------------------------------------------------------------------------
    def remember_injection(self, session_id: str, prompt: str, learnings: list[dict[str, str]]) -> None:
        """Keep what was injected for a prompt until the stop hook publishes it."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO injections (session_id, prompt, learnings, created_at) VALUES (?, ?, ?, ?)",
                (session_id, prompt, json.dumps(learnings), time.time()),
            )

    def injections(self, session_id: str) -> list[Injection]:
        """The session's injections not yet published, oldest first."""
        rows = self._db.execute(
            "SELECT id, prompt, learnings FROM injections WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
        return [Injection(id=r[0], prompt=r[1], learnings=json.loads(r[2])) for r in rows]

    # -- the outbox -------------------------------------------------------------------------
    def enqueue(
        self,
        session_id: str,
        path: str,
        offset: int,
        payload: dict[str, Any],
        consumed: list[int],
    ) -> None:
        """Queue a publish and move the session's read position, in one transaction.

        ``consumed`` are the injections the publish carries (they are dropped with it). A
        publish whose request id is already queued is not queued twice.
        """
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO outbox (request_id, payload, created_at) VALUES (?, ?, ?)",
                (payload["request_id"], json.dumps(payload), time.time()),
            )
            db.execute(
                "INSERT INTO transcripts (session_id, path, offset) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET path = excluded.path, offset = excluded.offset",
                (session_id, path, offset),
            )
            db.executemany("DELETE FROM injections WHERE id = ?", [(i,) for i in consumed])

    def pending(self, limit: int = 50) -> list[Pending]:
        """Publishes still to send, oldest first (not the ones the server refused for good)."""
        rows = self._db.execute(
            "SELECT id, request_id, payload, attempts FROM outbox WHERE dead = 0 ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()
        return [Pending(id=r[0], request_id=r[1], payload=json.loads(r[2]), attempts=r[3]) for r in rows]

    def has_pending(self) -> bool:
        """Whether anything waits to be sent (one indexed read: the prompt hook asks every time)."""
        return self._db.execute("SELECT 1 FROM outbox WHERE dead = 0 LIMIT 1").fetchone() is not None

    def sent(self, item_id: int) -> None:
        """The server has it: drop it."""
        with self.transaction() as db:
            db.execute("DELETE FROM outbox WHERE id = ?", (item_id,))

    def failed(self, item_id: int, error: str, *, permanent: bool) -> None:
        """Sending failed: keep it for the next try, or (``permanent``) keep it aside with its error."""
        with self.transaction() as db:
            db.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, dead = ? WHERE id = ?",
                (error[:2000], 1 if permanent else 0, item_id),
            )

    def dead(self) -> list[tuple[str, str]]:
        """Publishes the server refused for good: (request id, error)."""
        rows = self._db.execute(
            "SELECT request_id, last_error FROM outbox WHERE dead = 1 ORDER BY id"
        ).fetchall()
        return [(r[0], r[1] or "") for r in rows]

    # -- one flusher at a time ----------------------------------------------------------------
    def take_flusher_lease(self, holder: str, seconds: float) -> bool:
        """Become the one process sending the outbox for ``seconds`` (False: another one is)."""
        t = time.time()
        with self.transaction() as db:
            row = db.execute("SELECT holder, until FROM flusher WHERE id = 1").fetchone()
            if row is not None and row[0] != holder and row[1] > t:
                return False
            db.execute(
                "INSERT INTO flusher (id, holder, until) VALUES (1, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, until = excluded.until",
                (holder, t + seconds),
            )
        return True

    def release_flusher_lease(self, holder: str) -> None:
        """Let the next hook send (only if ``holder`` still has the lease)."""
        with self.transaction() as db:
            db.execute("DELETE FROM flusher WHERE id = 1 AND holder = ?", (holder,))
