"""Opening a PostgreSQL schema: pgvector, numbered migrations, and the HNSW index when it pays.

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
from reflexio.storage.postgres_search import Conn, one_row, vector_dim
from reflexio.storage.sql import migrations, queries

__all__ = ["Schema", "migrate"]

_Q = queries("postgres")
#: First key of the advisory lock migrations take (the second is the schema's hash).
_LOCK_NAMESPACE: Final = 0x52464C58
#: pgvector's limit for an HNSW index (a ``vector`` itself may have 16000 dimensions).
_HNSW_MAX_DIM: Final = 2_000


@dataclass(frozen=True, slots=True)
class Schema:
    """What opening found: the vector type, filtered-scan support, dimensions with HNSW."""

    vector_type: TypeInfo
    iterative_scan: bool
    hnsw_dims: frozenset[int]


def migrate(url: str, dim: int, hnsw_min_rows: int | None) -> Schema:
    """Apply missing migrations under an advisory lock (several processes may open at once)."""
    hnsw_dims: frozenset[int] = frozenset()
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
            if _ensure_hnsw(conn, dim, hnsw_min_rows):
                hnsw_dims = frozenset({dim})
        info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StorageError("the pgvector type 'vector' is not on the search_path")
    return Schema(info, version >= (0, 8), hnsw_dims)


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


def _ensure_hnsw(conn: Conn, dim: int, min_rows: int | None) -> bool:
    """Build the HNSW index for ``dim`` once enough vectors of that dimension exist;
    returns whether the index exists."""
    if not 1 <= vector_dim(dim) <= _HNSW_MAX_DIM:
        return False
    if one_row(conn, _Q["index_exists"], {"name": f"learnings_hnsw_{dim}"})["present"]:
        return True
    if min_rows is None:
        return False
    if min_rows > 0 and one_row(conn, _Q["count_dim"], {"dim": dim, "cap": min_rows})["n"] < min_rows:
        return False
    conn.execute(_Q["create_hnsw"].format(dim=vector_dim(dim)))
    return True
