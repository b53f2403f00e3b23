"""Search-index snapshots on disk: an org's ``LearningIndex`` with the change-log position it
reflects, so that a restarted server starts from it and catches up on the changes since,
instead of rebuilding from every row (seconds at 100k rows; bench/search measures both).

A snapshot is a cache, never a source of truth. It names the database it was taken of, the
org's learning sequence number it reflects and the learnings changed at that number; one that
is missing, damaged, of another format, org or database, newer than the database or whose last
changes the database does not list (a restored backup that has since taken other writes) is
not used, and the index is rebuilt. Files are written to a temporary name and renamed, so a
reader sees the old snapshot or the new one. The format is plain numpy arrays (``np.savez``),
read with ``allow_pickle=False``.

``Snapshots`` says when to write (after an index is built from rows, after it has caught up on
many changes, at most once a minute per org, and when the storage closes) and writes on one
background thread, from a state frozen under the caller's lock (``LearningIndex.freeze``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reflexio.storage.index import LearningIndex

__all__ = ["FORMAT", "Snapshot", "Snapshots", "Tail", "read", "same_history", "write"]

log = logging.getLogger(__name__)

#: Bump when ``LearningIndex.state()`` changes shape: older snapshots are then ignored.
FORMAT = 2
_META = "__snapshot__"
#: A caught-up index is written again after this many changed rows (or a twentieth of its
#: rows, if more) and at most this often: a restart then replays at most that many changes.
REFRESH_CHANGES = 1000
REFRESH_SECONDS = 60.0

Arrays = dict[str, Any]
#: The learnings one sequence number changed, as (id, text hash, updated_at); hash "" and time 0
#: for those a later write changed again or deleted.
Tail = tuple[tuple[int, str, int], ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where an index stands: its org, the sequence number it reflects, the learnings changed
    at that number (a fingerprint of the history it saw) and the database it came from."""

    org_id: str
    seq: int
    tail: Tail
    database: str


def same_history(saw: Tail, now: Tail) -> bool:
    """Whether a database whose changes at a snapshot's sequence number are ``now`` can be the
    one the snapshot ``saw``: the same learnings changed there, and those no later write has
    changed are as they were (a restored backup that took other writes fails this)."""
    if [i for i, _, _ in saw] != [i for i, _, _ in now]:
        return False
    return all(t == 0 or (h, t) == (h0, t0) for (_, h0, t0), (_, h, t) in zip(saw, now, strict=True))


def path_for(folder: Path, org_id: str) -> Path:
    """Where an org's snapshot lives in ``folder`` (org ids are arbitrary text: hashed)."""
    return folder / f"{hashlib.sha256(org_id.encode()).hexdigest()[:24]}.npz"


def write(path: Path, snapshot: Snapshot, arrays: Arrays) -> None:
    """Write an index's ``state()`` arrays as ``snapshot``, atomically (durable on return)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT, "org_id": snapshot.org_id, "seq": snapshot.seq, "database": snapshot.database}
    meta["tail"] = list(snapshot.tail)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with tmp.open("wb") as f:
            tagged: Arrays = {_META: np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays}
            np.savez(f, **tagged)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def read(path: Path, *, org_id: str, database: str) -> tuple[Snapshot, LearningIndex] | None:
    """The snapshot at ``path`` and its index, if it is one of ``org_id`` in ``database``.

    Anything unreadable is logged and passed over rather than raised: the caller rebuilds.
    """
    if not path.exists():
        return None
    try:
        # Our own file object: np.load leaks the one it opens when the archive is damaged.
        with path.open("rb") as f, np.load(f, allow_pickle=False) as saved:
            meta = json.loads(saved[_META].tobytes().decode())
            if (meta.get("format"), meta.get("org_id"), meta.get("database")) != (FORMAT, org_id, database):
                log.info("not using search snapshot %s: of another format, org or database", path)
                return None
            state = {key: saved[key] for key in saved.files if key != _META}
        tail = tuple((int(i), str(h), int(t)) for i, h, t in meta["tail"])
        snapshot = Snapshot(org_id, int(meta["seq"]), tail, database)
        return snapshot, LearningIndex.from_state(state)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        log.warning("not using unreadable search snapshot %s: %s", path, exc)
        return None


class Snapshots:
    """The snapshots of one database's indexes, in one folder, written in the background."""

    def __init__(self, folder: Path, database: str) -> None:
        """Keep snapshots of ``database``'s indexes in ``folder``."""
        self.folder = folder
        self.database = database
        self._written: dict[str, tuple[int, float]] = {}  # org -> (seq, when), written or queued
        self._pending: dict[str, tuple[Snapshot, Callable[[], Arrays]]] = {}
        self._wake = threading.Condition()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="search-snapshots", daemon=True)
        self._writer.start()

    def load(self, org_id: str) -> tuple[Snapshot, LearningIndex] | None:
        """The org's latest snapshot and its index, or None."""
        found = read(path_for(self.folder, org_id), org_id=org_id, database=self.database)
        if found is not None:
            self._written.setdefault(org_id, (found[0].seq, time.monotonic()))
        return found

    def wants(self, org_id: str, seq: int, *, built: bool, rows: int = 0) -> bool:
        """Whether an index of ``org_id`` at ``seq`` is worth a write: it was just ``built`` from
        rows, or it has moved on by ``REFRESH_CHANGES`` sequence numbers (or a twentieth of
        its ``rows``) since the last write and that was ``REFRESH_SECONDS`` ago."""
        written, when = self._written.get(org_id, (-1, 0.0))
        if seq == written:
            return False
        if built:
            return True
        return time.monotonic() - when >= REFRESH_SECONDS and seq - written >= max(
            REFRESH_CHANGES, rows // 20
        )

    def queue(self, index: LearningIndex, snapshot: Snapshot) -> None:
        """Write ``index`` as ``snapshot`` in the background; call it under the lock that keeps
        ``index`` still (freezing it takes milliseconds, the write happens later)."""
        with self._wake:
            if self._closed:
                return
            self._pending[snapshot.org_id] = (snapshot, index.freeze())
            self._written[snapshot.org_id] = (snapshot.seq, time.monotonic())
            self._wake.notify()

    def close(self, last: Sequence[tuple[LearningIndex, Snapshot]] = ()) -> None:
        """Write what is queued and every index of ``last`` not written at its sequence number,
        then stop (the storage is closing: its indexes no longer change)."""
        for index, snapshot in last:
            if self._written.get(snapshot.org_id, (-1, 0.0))[0] != snapshot.seq:
                self.queue(index, snapshot)
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._writer.join()

    def _write_loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closed:
                    self._wake.wait()
                if not self._pending:
                    return
                org_id, (snapshot, frozen) = self._pending.popitem()
            started = time.monotonic()
            try:
                write(path_for(self.folder, org_id), snapshot, frozen())
            except OSError as exc:  # a full disk must not stop searches: the next restart rebuilds
                log.warning("could not write the search snapshot of org %s: %s", org_id, exc)
            else:
                log.debug(
                    "search snapshot of org %s at seq %s in %.2fs",
                    org_id,
                    snapshot.seq,
                    time.monotonic() - started,
                )
