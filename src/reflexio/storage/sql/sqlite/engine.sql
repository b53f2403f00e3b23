-- Queries only the SQLite engine's own code runs (storage.sqlite, storage.sqlite_search):
-- opening connections, migrating, housekeeping, bulk inserts and the in-process search index.

-- name: connection_pragmas
-- WAL with NORMAL sync (durable at checkpoints, never corrupt); automatic checkpoints are
-- off because they run inside whichever commit crosses the threshold, adding a multi-ms
-- stall to a publish: a background thread of each process checkpoints instead.
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA busy_timeout = 30000;
PRAGMA wal_autocheckpoint = 0;

-- name: begin_write
-- IMMEDIATE: take the write lock now, so a transaction never fails to upgrade a read lock.
BEGIN IMMEDIATE

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- name: checkpoint
-- PASSIVE: never waits for readers or writers.
PRAGMA wal_checkpoint(PASSIVE)

-- name: create_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)

-- name: applied_migrations
SELECT version FROM schema_migrations

-- name: record_migration
INSERT INTO schema_migrations (version) VALUES (:version)

-- name: insert_learnings
INSERT INTO learnings (
    org_id, kind, profile_id, user_id, agent_version, playbook_name, content, "trigger", rationale,
    pitfall, blocking_issue, status, approval, source, tags, custom_features, extractor_names, ttl,
    expires_at, request_id, source_interaction_ids, superseded_by, metadata, created_at, updated_at,
    embedding, embed_model, embed_dim, text_hash, seq
) VALUES (
    :org_id, :kind, :profile_id, :user_id, :agent_version, :playbook_name, :content, :trigger, :rationale,
    :pitfall, :blocking_issue, :status, :approval, :source, :tags, :custom_features, :extractor_names, :ttl,
    :expires_at, :request_id, :source_interaction_ids, :superseded_by, :metadata, :created_at, :updated_at,
    :embedding, :embed_model, :embed_dim, :text_hash, :seq
)
RETURNING id

-- name: insert_learning_events
INSERT INTO learning_events (
    org_id, learning_id, kind, user_id, event, actor, reason, request_id, job_id, before, after, created_at
) VALUES (
    :org_id, :learning_id, :kind, :user_id, :event, :actor, :reason, :request_id, :job_id, :before, :after, :created_at
)

-- name: interaction_fts_behind
-- Interactions are full-text indexed in batches after they are stored (migration 004).
SELECT (SELECT COALESCE(MAX(id), 0) FROM interactions)
     > (SELECT indexed_upto FROM fts_progress WHERE name = 'interactions') AS behind

-- name: index_new_interactions
INSERT INTO interactions_fts (rowid, content, user_action_description)
SELECT id, content, user_action_description FROM interactions
WHERE id > (SELECT indexed_upto FROM fts_progress WHERE name = 'interactions')
ORDER BY id

-- name: advance_interaction_fts
UPDATE fts_progress
SET indexed_upto = MAX(indexed_upto, (SELECT COALESCE(MAX(id), 0) FROM interactions))
WHERE name = 'interactions'

-- name: get_seq
-- The in-process search index: an org's index is current when it has seen learning_seq.
SELECT learning_seq, pruned_seq FROM org_state WHERE org_id = :org_id

-- name: seq_and_learnings
-- A search's one statement when its org's index is current: the org's committed learning_seq
-- (NULL before its first write) beside the rows of the hits not cached, from one snapshot;
-- one row with NULL columns when no row is asked for.
SELECT st.learning_seq AS state_seq, l.*
FROM (SELECT 1 AS one) AS one
LEFT JOIN org_state AS st ON st.org_id = :org_id
LEFT JOIN (SELECT {columns} FROM learnings WHERE +org_id = :org_id AND id IN (SELECT value FROM json_each(:ids))) AS l ON 1

-- name: changed_since
SELECT DISTINCT learning_id FROM learning_changes WHERE org_id = :org_id AND seq > :seq

-- name: changes_at
-- What a search-index snapshot fingerprints: the learnings changed at its sequence number, with
-- their text hash and time while no later write has changed them ('' and 0 once one has).
SELECT c.learning_id,
       CASE WHEN l.seq = c.seq THEN l.text_hash ELSE '' END,
       CASE WHEN l.seq = c.seq THEN l.updated_at ELSE 0 END
FROM learning_changes c LEFT JOIN learnings l ON l.id = c.learning_id AND l.org_id = c.org_id
WHERE c.org_id = :org_id AND c.seq = :seq
ORDER BY c.learning_id

-- name: database_name
SELECT name FROM database_identity

-- name: indexed_orgs
-- The orgs with learnings (or once with them), those first whose indexes changed most.
SELECT org_id FROM org_state ORDER BY learning_seq DESC

-- name: index_order
-- The order the search index loads an org in: each scope's rows together (see storage.index).
SELECT id FROM learnings WHERE org_id = :org_id ORDER BY kind, user_id, agent_version, id

-- name: index_rows
-- Only the columns the index keeps, read by position (sqlite_search._index_row).
SELECT id, kind, profile_id, user_id, agent_version, playbook_name, content, "trigger", status,
       approval, source, tags, custom_features, expires_at, request_id, created_at, updated_at,
       embedding, embed_model
FROM learnings WHERE +org_id = :org_id AND id IN (SELECT value FROM json_each(:ids))
