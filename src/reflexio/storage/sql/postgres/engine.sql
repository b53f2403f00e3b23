-- Queries only the PostgreSQL engine's own code runs (storage.postgres*): opening and
-- migrating the schema, per-kind HNSW upkeep, binary COPY and the candidate search statement.
-- Templates take {placeholders} filled with fixed SQL only: a WHERE fragment compiled by
-- storage.queries, a vector dimension validated as an int, a kind's value, fixed column names.

-- name: migration_lock
SELECT pg_advisory_xact_lock(%(namespace)s, hashtext(current_schema()))

-- name: vector_version
SELECT extversion FROM pg_extension WHERE extname = 'vector'

-- name: create_vector
CREATE EXTENSION IF NOT EXISTS vector

-- name: create_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: applied_migrations
SELECT version FROM schema_migrations

-- name: record_migration
INSERT INTO schema_migrations (version) VALUES (%(version)s)

-- name: enable_iterative_scan
-- Without it a filtered HNSW scan stops after ef_search rows and can come back short; relaxed
-- order is fine because the vector arm re-sorts what it gets (pgvector 0.8+).
SET hnsw.iterative_scan = relaxed_order

-- name: index_exists
SELECT to_regclass(%(name)s) IS NOT NULL AS present

-- name: count_dim
SELECT count(*) AS n FROM (
    SELECT 1 FROM learnings WHERE embed_dim = %(dim)s AND kind = %(kind)s LIMIT %(cap)s
) enough

-- name: create_hnsw
-- One graph per kind and dimension: a search always filters on one kind, and a graph that
-- also held the other kinds' rows made a filtered walk skip two nodes of three.
CREATE INDEX IF NOT EXISTS learnings_hnsw_{dim}_{kind} ON learnings
USING hnsw ((embedding::vector({dim})) vector_ip_ops) WITH (m = 16, ef_construction = 64)
WHERE embed_dim = {dim} AND kind = '{kind}'

-- name: drop_shared_hnsw
-- The one graph per dimension that held every kind (before per-kind graphs).
DROP INDEX IF EXISTS learnings_hnsw_{dim}

-- name: hnsw_rows
-- How many rows an index holds, as last counted (CREATE INDEX, VACUUM, ANALYZE).
SELECT greatest(reltuples, 0)::bigint AS n FROM pg_class WHERE oid = to_regclass(%(name)s)

-- name: draw_ids
-- Ids for a bulk insert, drawn before COPY (which cannot return them); the table's identity
-- sequence is resolved once, not per row.
SELECT nextval(seq.oid) AS id
FROM (SELECT pg_get_serial_sequence(%(table)s, 'id')::regclass::oid AS oid) seq,
     generate_series(1, %(n)s)
ORDER BY 1

-- name: copy_rows
-- Binary COPY; {columns} are postgres_types' fixed column names of {table}, quoted.
COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)

-- name: search_candidates
-- Search, one statement per filter: each arm ranks its own top rows of the filtered scope
-- (the filter is in both WHERE clauses, before ranking), and the outer query scores every
-- row of the union on both arms. The arms are search_fts_arm and search_vector_arm (or
-- search_no_arm), the scores search_fts_score and search_vector_score (or NULL).
WITH {fts}, {vec}
SELECT {columns}, fts.rank AS fts_rank, vec.rank AS vector_rank,
       {fts_score} AS fts_score, {vector_score} AS vector_score
FROM (SELECT id FROM fts UNION SELECT id FROM vec) found
JOIN learnings l USING (id)
LEFT JOIN fts USING (id)
LEFT JOIN vec USING (id)
ORDER BY fts.rank NULLS LAST, vec.rank

-- name: search_fts_arm
fts AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank
    FROM (
        SELECT id, ts_rank(tsv, to_tsquery('english', %(tsquery)s)) AS score
        FROM learnings
        WHERE org_id = %(org_id)s AND ({where}) AND tsv @@ to_tsquery('english', %(tsquery)s)
        ORDER BY score DESC, id
        LIMIT %(fts_limit)s  -- down to the scope's floor (SearchStatement.fts_limit)
    ) top
)

-- name: search_vector_arm
-- The distance is search_hnsw_distance, which matches the HNSW index expression (the planner
-- may walk the graph), or search_exact_distance, which cannot (an exact scan of the scope).
vec AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS rank
    FROM (
        SELECT id, {distance} AS distance
        FROM learnings
        WHERE org_id = %(org_id)s AND ({where}) AND embed_model = %(model)s AND embed_dim = {dim}
        ORDER BY distance
        LIMIT %(limit)s
    ) top
)

-- name: search_hnsw_distance
embedding::vector({dim}) <#> %(vector)s::vector({dim})

-- name: search_exact_distance
embedding <#> %(vector)s::vector({dim})

-- name: scope_estimate
-- How many rows the planner expects in a scope: the vector arm walks its kind's HNSW graph
-- only for scopes that are big, absolutely and as a share of the graph (hnsw_rows).
EXPLAIN (FORMAT JSON)
SELECT 1 FROM learnings
WHERE org_id = %(org_id)s AND ({where}) AND embed_model = %(model)s AND embed_dim = {dim}

-- name: search_no_arm
{name} AS (SELECT NULL::bigint AS id, NULL::bigint AS rank WHERE FALSE)

-- name: search_fts_score
ts_rank(l.tsv, to_tsquery('english', %(tsquery)s))

-- name: search_vector_score
CASE WHEN l.embed_model = %(model)s AND l.embed_dim = {dim}
     THEN -(l.embedding::vector({dim}) <#> %(vector)s::vector({dim})) END

-- The in-process search index (storage.postgres_index over storage.sqlite_search's
-- SearchIndexes): the same queries by the same names as on SQLite.

-- name: get_seq
-- An org's index is current when it has seen learning_seq (one row, committed: the row lock
-- bump_seq takes makes sequence order commit order).
SELECT learning_seq, pruned_seq FROM org_state WHERE org_id = %(org_id)s

-- name: seq_and_learnings
-- A search's one statement when its org's index is current: the org's committed learning_seq
-- (NULL before its first write) beside the rows of the hits not cached, from one snapshot;
-- one row with NULL columns when no row is asked for.
SELECT st.learning_seq AS state_seq, l.*
FROM (SELECT 1 AS one) AS one
LEFT JOIN org_state AS st ON st.org_id = %(org_id)s
LEFT JOIN (SELECT {columns} FROM learnings WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])) AS l ON TRUE

-- name: changed_since
SELECT DISTINCT learning_id FROM learning_changes WHERE org_id = %(org_id)s AND seq > %(seq)s

-- name: changes_at
SELECT c.learning_id,
       CASE WHEN l.seq = c.seq THEN l.text_hash ELSE '' END,
       CASE WHEN l.seq = c.seq THEN l.updated_at ELSE 0 END
FROM learning_changes c LEFT JOIN learnings l ON l.id = c.learning_id AND l.org_id = c.org_id
WHERE c.org_id = %(org_id)s AND c.seq = %(seq)s
ORDER BY c.learning_id

-- name: indexed_orgs
-- The orgs with learnings (or once with them), those first whose indexes changed most.
SELECT org_id FROM org_state ORDER BY learning_seq DESC

-- name: org_rows
-- How many learnings an org holds: what its in-process index would keep (the memory budget).
SELECT count(*) AS n FROM learnings WHERE org_id = %(org_id)s

-- name: index_order
-- The order the search index loads an org in: each scope's rows together (see storage.index).
SELECT id FROM learnings WHERE org_id = %(org_id)s ORDER BY kind, user_id, agent_version, id

-- name: index_rows
-- Only the columns the index keeps, read by position (sqlite_search._index_row).
SELECT id, kind, profile_id, user_id, agent_version, playbook_name, content, "trigger", status,
       approval, source, tags, custom_features, expires_at, request_id, created_at, updated_at,
       embedding, embed_model
FROM learnings WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])
