"""Opening a PostgreSQL schema: pgvector, numbered migrations, and HNSW indexes where they pay.

Several processes may open the same database at once (API processes, ``reflexio worker``s), so
migrations run in one transaction under an advisory lock keyed by the schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import psycopg
from psycopg.rows import dict_row
from psycopg.types import TypeInfo

from reflexio.errors import StorageError
from reflexio.records import LearningKind
from reflexio.storage.postgres_search import hnsw_index, one_row, vector_dim
from reflexio.storage.postgres_types import Conn
from reflexio.storage.queries import migrations, queries

__all__ = ["Schema", "migrate"]

_Q = queries("postgres")
#: First key of the advisory lock migrations take (the second is the schema's hash).
_LOCK_NAMESPACE: Final = 0x52464C58
#: pgvector's limit for an HNSW index (a ``vector`` itself may have 16000 dimensions).
_HNSW_MAX_DIM: Final = 2_000


@dataclass(frozen=True, slots=True)
class Schema:
    """What opening found: the vector type, filtered-scan support, and the (dimension, kind)
    pairs that have an HNSW index."""

    vector_type: TypeInfo
    iterative_scan: bool
    hnsw: frozenset[tuple[int, LearningKind]]


def migrate(url: str, dim: int, hnsw_min_rows: int | None) -> Schema:
    """Apply missing migrations under an advisory lock (several processes may open at once)."""
    with psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10) as conn:
        with conn.transaction():
            conn.execute(_Q["migration_lock"], {"namespace": _LOCK_NAMESPACE})
            version = _ensure_vector(conn)
            conn.execute(_Q["create_migrations"])
            done = {r["version"] for r in conn.execute(_Q["applied_migrations"])}
            for number, script in migrations("postgres"):
                if number not in done:
                    conn.execute(script.encode())
                    conn.execute(_Q["record_migration"], {"version": number})
            hnsw = _ensure_hnsw(conn, dim, hnsw_min_rows)
        info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StorageError("the pgvector type 'vector' is not on the search_path")
    return Schema(info, version >= (0, 8), hnsw)


def _ensure_vector(conn: Conn) -> tuple[int, ...]:
    """The installed pgvector version, creating the extension only when it is missing
    (so a role that may not create extensions works where it is already installed)."""
    row = conn.execute(_Q["vector_version"]).fetchone()
    if row is None:
        try:
            with conn.transaction():
                conn.execute(_Q["create_vector"])
        except psycopg.errors.UniqueViolation:
            pass  # another process created it a moment ago
        except psycopg.Error as exc:
            raise StorageError(
                "the pgvector extension is not installed and could not be created "
                f"({exc}); run CREATE EXTENSION vector as a superuser"
            ) from exc
        row = conn.execute(_Q["vector_version"]).fetchone()
    assert row is not None
    return tuple(int(part) for part in str(row["extversion"]).split(".") if part.isdigit())


def _ensure_hnsw(conn: Conn, dim: int, min_rows: int | None) -> frozenset[tuple[int, LearningKind]]:
    """Build each kind's HNSW index for ``dim`` once that kind holds enough vectors of it;
    returns the (dim, kind) pairs whose index exists.

    Each kind has a graph of its own, so a search of one kind never walks past the others'
    rows. The shared graph earlier versions built for all kinds is dropped once the per-kind
    graphs are built (a kind still too small for one is served by exact scans, as it
    would have been from the start).
    """
    if not 1 <= vector_dim(dim) <= _HNSW_MAX_DIM:
        return frozenset()
    built: set[tuple[int, LearningKind]] = set()
    for kind in LearningKind:
        name = hnsw_index(dim, kind)
        if not one_row(conn, _Q["index_exists"], {"name": name})["present"]:
            if min_rows is None:
                continue
            enough = {"dim": dim, "kind": kind.value, "cap": min_rows}
            if min_rows > 0 and one_row(conn, _Q["count_dim"], enough)["n"] < min_rows:
                continue
            conn.execute(_Q.render("create_hnsw", {"dim": str(vector_dim(dim)), "kind": kind.value}))
        built.add((dim, kind))
    if built:
        conn.execute(_Q.render("drop_shared_hnsw", {"dim": str(vector_dim(dim))}))
    return frozenset(built)
