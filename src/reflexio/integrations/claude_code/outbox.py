"""The hooks' local state: a small SQLite file that outlives the server being down, and two plain files.

The SQLite file is written in short transactions so concurrent hooks of several Claude Code
sessions never corrupt each other (WAL, a busy timeout):

* ``outbox``: publishes waiting to be sent, keyed by their ``request_id`` (the server stores a
  request id once, so sending one twice is harmless); a publish the server refuses for good
  (4xx) is kept with its error instead of being retried forever;
* ``transcripts``: per session, how far the transcript has been read, so each publish carries
  the turns since the previous one and none twice.

The prompt hook runs before every prompt and must not load SQLite (the library costs it more
start-up than its search: ``bench/hooks``), so what it reads and writes is plain files next to
the SQLite file, and ``sqlite3`` is imported only by :class:`Outbox` (the stop hook, the flush):

* ``<outbox>.pending`` exists while publishes wait: :func:`has_backlog` is the prompt hook's
  cue to start a flush. It is made and removed inside the SQLite transactions that queue and
  drain the outbox, so it never says "nothing waits" while something does;
* ``injections/<session>.jsonl``: what the prompt hook injected (the ``retrieved_learnings``),
  one appended line per prompt (:func:`remember_injection`), until the stop hook publishes it
  with the answer it went with. A session's hooks run one at a time, so one file per session
  has one writer at a time.
"""

from __future__ import annotations

import os
import time

from reflexio.integrations.claude_code.wire import dumps, loads

TYPE_CHECKING = False  # type checkers read this as True; ``typing`` is not imported at run time
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

__all__ = ["Injection", "Outbox", "Pending", "has_backlog", "remember_injection"]

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
    """What the prompt hook injected for one prompt of a session (``id``: its line in the file)."""

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


def has_backlog(path: str | os.PathLike[str]) -> bool:
    """Whether publishes wait in the outbox at ``path`` (one ``stat``: no SQLite)."""
    return os.path.exists(_backlog_marker(path))


def remember_injection(
    path: str | os.PathLike[str], session_id: str, prompt: str, learnings: list[dict[str, str]]
) -> None:
    """Keep what was injected for a prompt until the stop hook publishes it (no SQLite)."""
    # A newline before as well as after: a line torn by a crash cannot swallow the next one.
    line = ("\n" + dumps({"prompt": prompt, "learnings": learnings}) + "\n").encode()
    file = _injections_file(path, session_id)
    try:
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(file), mode=0o700, exist_ok=True)
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)  # one write of one line: appends from other processes cannot interleave
    finally:
        os.close(fd)


def _backlog_marker(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) + ".pending"


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _injections_file(path: str | os.PathLike[str], session_id: str) -> str:
    """``injections/<session>.jsonl`` beside the outbox; any session id makes one safe file name."""
    name = "".join(
        c if c in _SAFE else "".join(f"%{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
        for c in session_id
    )
    if not name or len(name) > 120:  # Claude Code's are UUIDs; anything else still gets a file
        import binascii

        name = f"{name[:100]}~{binascii.crc32(session_id.encode('utf-8', 'surrogatepass')):08x}"
    return os.path.join(os.path.dirname(os.path.abspath(path)), "injections", name + ".jsonl")


def _injection(number: int, line: bytes) -> Injection | None:
    try:
        entry = loads(line)
        return Injection(id=number, prompt=str(entry["prompt"]), learnings=list(entry["learnings"]))
    except (ValueError, KeyError, TypeError):  # a line torn by a crash mid-write
        return None


def _injection_lines(file: str) -> list[bytes]:
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return []
    return [line for line in data.split(b"\n") if line.strip()]


class Outbox:
    """The hooks' SQLite file (created on first use, owner-only).

    ``sqlite3`` is imported here, when the file is opened: the prompt hook never opens it.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 2.0) -> None:
        import sqlite3

        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        self._path = os.fspath(path)
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
    def injections(self, session_id: str) -> list[Injection]:
        """The session's injections not yet published, oldest first (a torn line is skipped)."""
        lines = _injection_lines(_injections_file(self._path, session_id))
        return [i for i in (_injection(n, line) for n, line in enumerate(lines)) if i is not None]

    def _drop_injections(self, session_id: str, consumed: list[int]) -> None:
        """Take the consumed injections (and torn lines) out of the session's file."""
        if not consumed:
            return
        file, gone = _injections_file(self._path, session_id), set(consumed)
        lines = _injection_lines(file)
        kept = [line for n, line in enumerate(lines) if n not in gone and _injection(n, line) is not None]
        if not kept:
            os.remove(file)
            return
        temporary = f"{file}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(b"".join(b"\n" + line for line in kept) + b"\n")
        os.replace(temporary, file)

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

        ``consumed`` are the injections the publish carries: they leave their file inside the
        transaction, so a failure there leaves the publish unqueued and the injections kept
        (only a crash between the two could lose them). A publish whose request id is already
        queued is not queued twice.
        """
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO outbox (request_id, payload, created_at) VALUES (?, ?, ?)",
                (payload["request_id"], dumps(payload), time.time()),
            )
            db.execute(
                "INSERT INTO transcripts (session_id, path, offset) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET path = excluded.path, offset = excluded.offset",
                (session_id, path, offset),
            )
            os.close(os.open(_backlog_marker(self._path), os.O_WRONLY | os.O_CREAT, 0o600))  # see the module
            self._drop_injections(session_id, consumed)

    def pending(self, limit: int = 50) -> list[Pending]:
        """Publishes still to send, oldest first (not the ones the server refused for good)."""
        rows = self._db.execute(
            "SELECT id, request_id, payload, attempts FROM outbox WHERE dead = 0 ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()
        return [Pending(id=r[0], request_id=r[1], payload=loads(r[2]), attempts=r[3]) for r in rows]

    def has_pending(self) -> bool:
        """Whether anything waits to be sent (what :func:`has_backlog` tells without SQLite)."""
        return self._db.execute("SELECT 1 FROM outbox WHERE dead = 0 LIMIT 1").fetchone() is not None

    def settle_backlog(self) -> bool:
        """Remove the backlog marker if nothing waits any more; whether something still waits.

        Under the write lock, so a publish queued meanwhile keeps (or remakes) the marker.
        """
        with self.transaction():
            if self.has_pending():
                return True
            marker = _backlog_marker(self._path)
            if os.path.exists(marker):  # only made and removed under this lock
                os.remove(marker)
            return False

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
