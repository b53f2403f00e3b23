"""Storage: the log, learnings, history, jobs and keys behind one protocol.

``open_storage(url, embedder)`` picks the backend from the URL scheme:

* ``sqlite:////abs/path/reflexio.db`` (or ``sqlite:///relative.db``) — the embedded default;
* ``postgresql://user:password@host:5432/db`` — needs the pgvector extension;
* ``memory://`` — in-process, for tests and demos.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from reflexio.embed import Embedder
from reflexio.errors import ValidationError
from reflexio.storage.base import Storage

__all__ = ["Storage", "open_storage"]


def open_storage(url: str, embedder: Embedder) -> Storage:
    """Open (and migrate) the storage a URL names.

    Raises:
        ValidationError: The URL's scheme is not one we know.
    """
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        from reflexio.storage.memory import MemoryStorage

        return MemoryStorage(embedder)
    if scheme == "sqlite":
        from reflexio.storage.sqlite import SqliteStorage

        return SqliteStorage(_sqlite_path(url), embedder)
    if scheme in {"postgres", "postgresql", "postgresql+psycopg"}:
        from reflexio.storage.postgres import PostgresStorage

        return PostgresStorage(url.replace("postgresql+psycopg://", "postgresql://"), embedder)
    raise ValidationError(
        f"unsupported storage URL {url!r}: use sqlite:///path, postgresql://... or memory://"
    )


def _sqlite_path(url: str) -> str:
    """SQLAlchemy's convention: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db`` absolute."""
    if not url.startswith("sqlite:///"):
        raise ValidationError(
            f"malformed SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute.db"
        )
    return url[len("sqlite:///") :]
