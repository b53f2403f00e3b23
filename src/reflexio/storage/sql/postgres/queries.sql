-- Named queries for the PostgreSQL backend. Each starts with "-- name: <name>".
-- Values are always parameters. A few templates take {placeholders} that the backend fills
-- with fixed SQL only: a WHERE fragment compiled by storage.sql (its values stay parameters)
-- or a vector dimension that was validated as an int.

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

-- name: index_rows
-- How many rows an index holds, as last counted (CREATE INDEX, VACUUM, ANALYZE).
SELECT greatest(reltuples, 0)::bigint AS n FROM pg_class WHERE oid = to_regclass(%(name)s)

-- name: insert_request
INSERT INTO requests (org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash)
VALUES (%(org_id)s, %(request_id)s, %(user_id)s, %(session_id)s, %(source)s, %(agent_version)s,
        %(created_at)s, %(payload_hash)s)

-- name: insert_interaction
INSERT INTO interactions (
    org_id, request_id, user_id, session_id, role, content, shadow_content, expert_content,
    user_action, user_action_description, interacted_image_url, image_encoding,
    tools_used, citations, retrieved_learnings, created_at
) VALUES (
    %(org_id)s, %(request_id)s, %(user_id)s, %(session_id)s, %(role)s, %(content)s,
    %(shadow_content)s, %(expert_content)s, %(user_action)s, %(user_action_description)s,
    %(interacted_image_url)s, %(image_encoding)s, %(tools_used)s, %(citations)s,
    %(retrieved_learnings)s, %(created_at)s
)
RETURNING id

-- name: get_request
SELECT org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash
FROM requests WHERE org_id = %(org_id)s AND request_id = %(request_id)s

-- name: search_interactions
SELECT {columns}, ts_rank(tsv, to_tsquery('english', %s)) AS score
FROM interactions
WHERE org_id = %s AND ({where}) AND tsv @@ to_tsquery('english', %s)
ORDER BY score DESC, id DESC
LIMIT %s

-- name: learning_ids
-- Ids for a bulk insert, drawn before COPY (which cannot return them); the sequence is
-- resolved once, not per row.
SELECT nextval(seq.oid) AS id
FROM (SELECT pg_get_serial_sequence('learnings', 'id')::regclass::oid AS oid) seq,
     generate_series(1, %(n)s)
ORDER BY 1

-- name: update_learning
UPDATE learnings SET
    kind = %(kind)s, profile_id = %(profile_id)s, user_id = %(user_id)s,
    agent_version = %(agent_version)s, playbook_name = %(playbook_name)s, content = %(content)s,
    "trigger" = %(trigger)s, rationale = %(rationale)s, pitfall = %(pitfall)s,
    blocking_issue = %(blocking_issue)s, status = %(status)s, approval = %(approval)s,
    source = %(source)s, tags = %(tags)s, custom_features = %(custom_features)s,
    extractor_names = %(extractor_names)s, ttl = %(ttl)s, expires_at = %(expires_at)s,
    request_id = %(request_id)s, source_interaction_ids = %(source_interaction_ids)s,
    superseded_by = %(superseded_by)s, metadata = %(metadata)s, updated_at = %(updated_at)s,
    embedding = %(embedding)s, embed_model = %(embed_model)s, text_hash = %(text_hash)s,
    seq = %(seq)s
WHERE org_id = %(org_id)s AND id = %(id)s

-- name: bump_seq
INSERT INTO org_state AS s (org_id, learning_seq) VALUES (%(org_id)s, 1)
ON CONFLICT (org_id) DO UPDATE SET learning_seq = s.learning_seq + 1
RETURNING learning_seq

-- name: insert_changes
INSERT INTO learning_changes (org_id, seq, learning_id)
SELECT %(org_id)s, %(seq)s, unnest(%(ids)s::bigint[])

-- name: prune_changes
DELETE FROM learning_changes WHERE org_id = %(org_id)s AND seq <= %(upto)s

-- name: set_pruned
UPDATE org_state SET pruned_seq = %(upto)s WHERE org_id = %(org_id)s

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
        SELECT id, ts_rank(tsv, to_tsquery('english', %s)) AS score
        FROM learnings
        WHERE org_id = %s AND ({where}) AND tsv @@ to_tsquery('english', %s)
        ORDER BY score DESC, id
        LIMIT %s
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
        WHERE org_id = %s AND ({where}) AND embed_model = %s AND embed_dim = {dim}
        ORDER BY distance
        LIMIT %s
    ) top
)

-- name: search_hnsw_distance
embedding::vector({dim}) <#> %s::vector({dim})

-- name: search_exact_distance
embedding <#> %s::vector({dim})

-- name: scope_estimate
-- How many rows the planner expects in a scope: the vector arm walks its kind's HNSW graph
-- only for scopes that are big, absolutely and as a share of the graph (index_rows).
EXPLAIN (FORMAT JSON)
SELECT 1 FROM learnings WHERE org_id = %s AND ({where}) AND embed_model = %s AND embed_dim = {dim}

-- name: search_no_arm
{name} AS (SELECT NULL::bigint AS id, NULL::bigint AS rank WHERE FALSE)

-- name: search_fts_score
ts_rank(l.tsv, to_tsquery('english', %s))

-- name: search_vector_score
CASE WHEN l.embed_model = %s AND l.embed_dim = {dim}
     THEN -(l.embedding::vector({dim}) <#> %s::vector({dim})) END

-- name: list_exposures
SELECT kind, learning_id FROM session_exposures
WHERE org_id = %(org_id)s AND session_id = %(session_id)s

-- name: add_exposure
INSERT INTO session_exposures (org_id, session_id, kind, learning_id, served_at)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING

-- name: insert_evaluation
INSERT INTO evaluations (
    org_id, kind, user_id, session_id, agent_version, learning_kind, learning_id,
    interaction_id, result, created_at
) VALUES (
    %(org_id)s, %(kind)s, %(user_id)s, %(session_id)s, %(agent_version)s, %(learning_kind)s,
    %(learning_id)s, %(interaction_id)s, %(result)s, %(created_at)s
)
RETURNING id

-- name: get_bookmark
SELECT org_id, user_id, extractor, last_interaction_id, updated_at
FROM bookmarks WHERE org_id = %(org_id)s AND user_id = %(user_id)s AND extractor = %(extractor)s

-- name: put_bookmark
INSERT INTO bookmarks (org_id, user_id, extractor, last_interaction_id, updated_at)
VALUES (%(org_id)s, %(user_id)s, %(extractor)s, %(last_interaction_id)s, %(updated_at)s)
ON CONFLICT (org_id, user_id, extractor) DO UPDATE SET
    last_interaction_id = excluded.last_interaction_id, updated_at = excluded.updated_at

-- name: get_config
SELECT config FROM org_configs WHERE org_id = %(org_id)s

-- name: put_config
INSERT INTO org_configs (org_id, config, updated_at)
VALUES (%(org_id)s, %(config)s, %(updated_at)s)
ON CONFLICT (org_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at

-- name: clear_exposures
DELETE FROM session_exposures WHERE org_id = %(org_id)s AND session_id IN (
    SELECT session_id FROM requests WHERE org_id = %(org_id)s AND user_id = %(user_id)s
)

-- name: clear_user_events
DELETE FROM learning_events WHERE org_id = %(org_id)s AND user_id = %(user_id)s

-- name: clear_user_evaluations
DELETE FROM evaluations WHERE org_id = %(org_id)s AND user_id = %(user_id)s

-- name: clear_user_bookmarks
DELETE FROM bookmarks WHERE org_id = %(org_id)s AND user_id = %(user_id)s

-- name: insert_api_key
INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at)
VALUES (%(org_id)s, %(key_hash)s, %(prefix)s, %(name)s, %(created_at)s)
RETURNING id

-- name: find_api_key
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at
FROM api_keys WHERE key_hash = %(key_hash)s AND revoked_at IS NULL

-- name: list_api_keys
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at
FROM api_keys WHERE (%(org_id)s::text IS NULL OR org_id = %(org_id)s::text) ORDER BY id

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = %(now)s WHERE id = %(id)s AND revoked_at IS NULL

-- name: has_api_keys
SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL) AS present

-- name: enqueue_job
-- Jobs. The partial unique index jobs_queued_key is the arbiter of dedupe: a job whose
-- (org, task, key) is already queued returns the queued row (unchanged, or moved later and
-- carrying the newer payload when debounced), even when two processes enqueue at once.
INSERT INTO jobs AS j (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at
) VALUES (
    %(org_id)s, %(task)s, %(key)s, %(payload)s, 'queued', %(run_at)s, 0, %(max_attempts)s,
    %(request_id)s, %(now)s, %(now)s
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET updated_at = j.updated_at
RETURNING *

-- name: enqueue_job_debounced
INSERT INTO jobs AS j (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at
) VALUES (
    %(org_id)s, %(task)s, %(key)s, %(payload)s, 'queued', %(run_at)s, 0, %(max_attempts)s,
    %(request_id)s, %(now)s, %(now)s
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET run_at = greatest(j.run_at, excluded.run_at), payload = excluded.payload,
    request_id = coalesce(nullif(excluded.request_id, ''), j.request_id), updated_at = excluded.updated_at
RETURNING *

-- name: bury_exhausted_jobs
UPDATE jobs SET status = 'dead', last_error = %(error)s, lease_owner = NULL,
    lease_expires_at = NULL, finished_at = %(now)s, updated_at = %(now)s
WHERE id IN (
    SELECT id FROM jobs
    WHERE status = 'running' AND lease_expires_at < %(now)s AND attempts >= max_attempts
    FOR UPDATE SKIP LOCKED
)

-- name: claim_jobs
-- A queued job waits while a job of its key runs (even one whose lease expired: that one is
-- reclaimed first), so jobs sharing a key never run at the same time.
UPDATE jobs SET status = 'running', lease_owner = %(worker)s, lease_expires_at = %(until)s,
    attempts = attempts + 1, updated_at = %(now)s
WHERE id IN (
    SELECT id FROM jobs j
    WHERE (
        (status = 'queued' AND run_at <= %(now)s AND NOT EXISTS (
            SELECT 1 FROM jobs r
            WHERE r.org_id = j.org_id AND r.task = j.task AND r.key = j.key AND r.status = 'running'
        ))
        OR (status = 'running' AND lease_expires_at < %(now)s)
    )
    AND (%(tasks)s::text[] IS NULL OR task = ANY(%(tasks)s::text[]))
    ORDER BY run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING *

-- name: heartbeat_jobs
UPDATE jobs SET lease_expires_at = %(until)s, updated_at = %(now)s
WHERE id = ANY(%(ids)s::bigint[]) AND status = 'running' AND lease_owner = %(worker)s
RETURNING id

-- name: set_job_progress
UPDATE jobs SET progress = %(progress)s::jsonb, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: finish_job_done
UPDATE jobs SET status = 'done', last_error = %(error)s, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = %(now)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: finish_job_retry
UPDATE jobs SET status = 'queued', last_error = %(error)s, lease_owner = NULL, lease_expires_at = NULL,
    run_at = %(retry_at)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: finish_job_dead
UPDATE jobs SET status = 'dead', last_error = %(error)s, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = %(now)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: queued_twin
SELECT q.id FROM jobs j
JOIN jobs q ON q.org_id = j.org_id AND q.task = j.task AND q.key = j.key
    AND q.status = 'queued' AND q.id <> j.id
WHERE j.id = %(id)s

-- name: absorb_retry
UPDATE jobs SET run_at = least(run_at, %(retry_at)s), updated_at = %(now)s WHERE id = %(id)s

-- name: release_job
UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    attempts = greatest(0, attempts - 1), run_at = %(now)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: get_job
SELECT * FROM jobs WHERE id = %(id)s

-- name: expedite_job
UPDATE jobs SET run_at = least(run_at, %(now)s), updated_at = %(now)s
WHERE org_id = %(org_id)s AND task = %(task)s AND key = %(key)s AND status = 'queued'

-- name: retry_jobs
-- A dead job goes back to the queue unless its key is already queued; of several dead jobs
-- sharing a key only the newest is revived (the unique index allows one queued per key).
UPDATE jobs SET status = 'queued', attempts = 0, run_at = %(now)s, updated_at = %(now)s,
    finished_at = NULL
WHERE id IN (
    SELECT DISTINCT ON (d.task, d.key IS NULL, coalesce(d.key, d.id::text)) d.id
    FROM jobs d
    WHERE d.org_id = %(org_id)s AND d.status = 'dead'
      AND (%(ids)s::bigint[] IS NULL OR d.id = ANY(%(ids)s::bigint[]))
      AND NOT EXISTS (
          SELECT 1 FROM jobs q
          WHERE q.org_id = d.org_id AND q.task = d.task AND q.key = d.key AND q.status = 'queued'
      )
    ORDER BY d.task, d.key IS NULL, coalesce(d.key, d.id::text), d.id DESC
)

-- name: insert_llm_usage
INSERT INTO llm_usage (
    org_id, job_id, role, model, prompt, prompt_version, prompt_tokens, completion_tokens,
    cost_usd, latency_ms, ok, error, created_at
) VALUES (
    %(org_id)s, %(job_id)s, %(role)s, %(model)s, %(prompt)s, %(prompt_version)s, %(prompt_tokens)s,
    %(completion_tokens)s, %(cost_usd)s, %(latency_ms)s, %(ok)s, %(error)s, %(created_at)s
)

-- name: llm_usage_by_role
SELECT role, count(*) AS calls, count(*) FILTER (WHERE NOT ok) AS failed,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens,
       coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(sum(latency_ms), 0) AS latency_ms
FROM llm_usage
WHERE org_id = %(org_id)s
  AND (%(job_id)s::bigint IS NULL OR job_id = %(job_id)s::bigint)
  AND (%(since)s::float8 IS NULL OR created_at >= %(since)s::float8)
GROUP BY role

-- name: orgs_with_stale_vectors
SELECT DISTINCT org_id FROM learnings WHERE embed_model <> %(model)s OR embedding IS NULL

-- name: set_vector
UPDATE learnings SET embedding = %(embedding)s, embed_model = %(embed_model)s,
    text_hash = %(text_hash)s, seq = %(seq)s
WHERE org_id = %(org_id)s AND id = %(id)s
