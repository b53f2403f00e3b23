"""PostgreSQL types for Reflexio's rows: pgvector loaders, and the column types of binary COPY.

psycopg has no adapter for pgvector's formats that yields numpy arrays as we store them, and
binary COPY (bulk saves: far faster than INSERTs, ``bench/results/ingest-postgres.json``)
needs every column's type and a jsonb dumper for the JSON text ``storage.rows`` produces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.rows import DictRow

from reflexio.records import Vector
from reflexio.storage.queries import queries

__all__ = ["COPY_TYPES", "Conn", "JsonTextDumper", "VectorBinaryLoader", "VectorTextLoader", "copy_rows"]

#: The connection type of every PostgreSQL storage module (rows come back as dicts).
Conn = psycopg.Connection[DictRow]

# Binary COPY needs every column's type. Keys are fixed column names (never input) and
# match the keys of rows.learning_params / rows.event_params.
_LEARNING_COPY: Final = {
    "id": "int8", "org_id": "text", "kind": "text", "profile_id": "text", "user_id": "text",
    "agent_version": "text", "playbook_name": "text", "content": "text", "trigger": "text",
    "rationale": "text", "pitfall": "text", "blocking_issue": "jsonb", "status": "text",
    "approval": "text", "source": "text", "tags": "text[]", "custom_features": "jsonb",
    "extractor_names": "jsonb", "ttl": "text", "expires_at": "int8", "request_id": "text",
    "source_interaction_ids": "jsonb", "superseded_by": "int8", "metadata": "text",
    "created_at": "int8", "updated_at": "int8", "embedding": "vector", "embed_model": "text",
    "text_hash": "text", "seq": "int8",
}  # fmt: skip
_EVENT_COPY: Final = {
    "org_id": "text", "learning_id": "int8", "kind": "text", "user_id": "text",
    "event": "text", "actor": "text", "reason": "text", "request_id": "text", "job_id": "int8",
    "before": "jsonb", "after": "jsonb", "created_at": "float8",
}  # fmt: skip
#: The tables ``bulk_insert`` copies into, with their columns' types.
COPY_TYPES: Final[Mapping[str, Mapping[str, str]]] = {
    "learnings": _LEARNING_COPY,
    "learning_events": _EVENT_COPY,
}


class VectorBinaryLoader(Loader):
    """pgvector's binary format (uint16 dim, uint16 unused, big-endian float4s) to numpy."""

    format = Format.BINARY

    def load(self, data: Buffer) -> Vector:
        return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


class VectorTextLoader(Loader):
    """pgvector's text format (``[1,2,3]``) to numpy."""

    def load(self, data: Buffer) -> Vector:
        return np.array(bytes(data)[1:-1].split(b","), dtype=np.float32)


class JsonTextDumper(Dumper):
    """jsonb for binary COPY from the JSON text ``rows`` produces (version byte + text)."""

    format = Format.BINARY
    oid = psycopg.postgres.types["jsonb"].oid

    def dump(self, obj: Any) -> Buffer | None:
        return b"\x01" + str(obj).encode()


def copy_rows(conn: Conn, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Binary COPY of ``rows`` (parameter dicts) into one of the ``COPY_TYPES`` tables."""
    types = COPY_TYPES[table]
    columns = ", ".join(f'"{c}"' for c in types)
    with conn.cursor() as cur:
        cur.adapters.register_dumper(None, JsonTextDumper)
        with cur.copy(
            queries("postgres").render("copy_rows", {"table": table, "columns": columns})
        ) as copier:
            copier.set_types(list(types.values()))
            for row in rows:
                copier.write_row([row[c] for c in types])
