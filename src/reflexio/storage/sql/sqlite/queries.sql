-- Named queries for the SQLite backend. Each starts with "-- name: <name>".

-- name: insert_request
INSERT INTO requests (org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash)
VALUES (:org_id, :request_id, :user_id, :session_id, :source, :agent_version, :created_at, :payload_hash)

-- name: insert_interaction
INSERT INTO interactions (
    org_id, request_id, user_id, session_id, role, content, shadow_content, expert_content,
    user_action, user_action_description, interacted_image_url, image_encoding,
    tools_used, citations, retrieved_learnings, created_at
) VALUES (
    :org_id, :request_id, :user_id, :session_id, :role, :content, :shadow_content, :expert_content,
    :user_action, :user_action_description, :interacted_image_url, :image_encoding,
    :tools_used, :citations, :retrieved_learnings, :created_at
)

-- name: get_request
SELECT org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash
FROM requests WHERE org_id = ? AND request_id = ?

-- name: insert_learning
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

-- name: update_learning
UPDATE learnings SET
    kind = :kind, profile_id = :profile_id, user_id = :user_id, agent_version = :agent_version,
    playbook_name = :playbook_name, content = :content, "trigger" = :trigger, rationale = :rationale,
    pitfall = :pitfall, blocking_issue = :blocking_issue, status = :status, approval = :approval,
    source = :source, tags = :tags, custom_features = :custom_features,
    extractor_names = :extractor_names, ttl = :ttl, expires_at = :expires_at,
    request_id = :request_id, source_interaction_ids = :source_interaction_ids,
    superseded_by = :superseded_by, metadata = :metadata, updated_at = :updated_at,
    embedding = :embedding, embed_model = :embed_model, embed_dim = :embed_dim,
    text_hash = :text_hash, seq = :seq
WHERE org_id = :org_id AND id = :id

-- name: bump_seq
INSERT INTO org_state (org_id, learning_seq) VALUES (?, 1)
ON CONFLICT (org_id) DO UPDATE SET learning_seq = learning_seq + 1
RETURNING learning_seq

-- name: get_seq
SELECT learning_seq, pruned_seq FROM org_state WHERE org_id = ?

-- name: index_order
-- The order the search index loads an org in: each scope's rows together (see storage.index).
SELECT id FROM learnings WHERE org_id = ? ORDER BY kind, user_id, agent_version, id

-- name: insert_change
INSERT INTO learning_changes (org_id, seq, learning_id) VALUES (?, ?, ?)

-- name: changed_since
SELECT DISTINCT learning_id FROM learning_changes WHERE org_id = ? AND seq > ?

-- name: prune_changes
DELETE FROM learning_changes WHERE org_id = :org_id AND seq <= :upto

-- name: set_pruned
UPDATE org_state SET pruned_seq = :upto WHERE org_id = :org_id

-- name: insert_event
INSERT INTO learning_events (
    org_id, learning_id, kind, user_id, event, actor, reason, request_id, job_id, before, after, created_at
) VALUES (
    :org_id, :learning_id, :kind, :user_id, :event, :actor, :reason, :request_id, :job_id, :before, :after, :created_at
)

-- name: insert_evaluation
INSERT INTO evaluations (
    org_id, kind, user_id, session_id, agent_version, learning_kind, learning_id, interaction_id, result, created_at
) VALUES (
    :org_id, :kind, :user_id, :session_id, :agent_version, :learning_kind, :learning_id, :interaction_id, :result, :created_at
)

-- name: get_bookmark
SELECT org_id, user_id, extractor, last_interaction_id, updated_at
FROM bookmarks WHERE org_id = ? AND user_id = ? AND extractor = ?

-- name: put_bookmark
INSERT INTO bookmarks (org_id, user_id, extractor, last_interaction_id, updated_at)
VALUES (:org_id, :user_id, :extractor, :last_interaction_id, :updated_at)
ON CONFLICT (org_id, user_id, extractor) DO UPDATE SET
    last_interaction_id = excluded.last_interaction_id, updated_at = excluded.updated_at

-- name: get_config
SELECT config FROM org_configs WHERE org_id = ?

-- name: put_config
INSERT INTO org_configs (org_id, config, updated_at) VALUES (:org_id, :config, :updated_at)
ON CONFLICT (org_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at

-- name: insert_api_key
INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at)
VALUES (:org_id, :key_hash, :prefix, :name, :created_at)
RETURNING id

-- name: find_api_key
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at
FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL

-- name: list_api_keys
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at
FROM api_keys WHERE (:org_id IS NULL OR org_id = :org_id) ORDER BY id

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL

-- name: has_api_keys
SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)

-- name: enqueue_job
INSERT INTO jobs (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at
) VALUES (
    :org_id, :task, :key, :payload, 'queued', :run_at, 0, :max_attempts, :request_id, :now, :now
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued' DO NOTHING
RETURNING *

-- name: enqueue_job_debounced
INSERT INTO jobs (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at
) VALUES (
    :org_id, :task, :key, :payload, 'queued', :run_at, 0, :max_attempts, :request_id, :now, :now
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued' DO UPDATE SET
    run_at = max(jobs.run_at, excluded.run_at),
    payload = excluded.payload,
    request_id = coalesce(nullif(excluded.request_id, ''), jobs.request_id),
    updated_at = excluded.updated_at
RETURNING *

-- name: queued_job_by_key
SELECT * FROM jobs WHERE org_id = ? AND task = ? AND key = ? AND status = 'queued'

-- name: bury_exhausted_jobs
UPDATE jobs SET status = 'dead', last_error = :error, lease_owner = NULL,
    lease_expires_at = NULL, finished_at = :now, updated_at = :now
WHERE status = 'running' AND lease_expires_at < :now AND attempts >= max_attempts

-- name: heartbeat_job
UPDATE jobs SET lease_expires_at = :until, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker
RETURNING id

-- name: set_job_progress
UPDATE jobs SET progress = :progress, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: finish_job_done
UPDATE jobs SET status = 'done', last_error = :error, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: finish_job_retry
UPDATE jobs SET status = 'queued', last_error = :error, lease_owner = NULL, lease_expires_at = NULL,
    run_at = :retry_at, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: finish_job_dead
UPDATE jobs SET status = 'dead', last_error = :error, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: absorb_retry
UPDATE jobs SET run_at = min(run_at, :retry_at), updated_at = :now WHERE id = :id

-- name: release_job
UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    attempts = max(0, attempts - 1), run_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: get_job
SELECT * FROM jobs WHERE id = ?

-- name: add_exposure
INSERT INTO session_exposures (org_id, session_id, kind, learning_id, served_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING

-- name: list_exposures
SELECT kind, learning_id FROM session_exposures WHERE org_id = ? AND session_id = ?

-- name: expedite_job
UPDATE jobs SET run_at = min(run_at, :now), updated_at = :now
WHERE org_id = :org_id AND task = :task AND key = :key AND status = 'queued'

-- name: insert_llm_usage
INSERT INTO llm_usage (
    org_id, job_id, role, model, prompt, prompt_version, prompt_tokens, completion_tokens,
    cost_usd, latency_ms, ok, error, created_at
) VALUES (
    :org_id, :job_id, :role, :model, :prompt, :prompt_version, :prompt_tokens, :completion_tokens,
    :cost_usd, :latency_ms, :ok, :error, :created_at
)

-- name: llm_usage_by_role
SELECT role, count(*) AS calls, coalesce(sum(1 - ok), 0) AS failed,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens,
       coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(sum(latency_ms), 0) AS latency_ms
FROM llm_usage
WHERE org_id = :org_id
  AND (:job_id IS NULL OR job_id = :job_id)
  AND (:since IS NULL OR created_at >= :since)
GROUP BY role

-- name: orgs_with_stale_vectors
SELECT DISTINCT org_id FROM learnings WHERE embed_model <> :model OR embedding IS NULL

-- name: set_vector
UPDATE learnings SET embedding = :embedding, embed_model = :embed_model, embed_dim = :embed_dim,
    text_hash = :text_hash, seq = :seq
WHERE org_id = :org_id AND id = :id

-- name: interaction_fts_behind
SELECT (SELECT COALESCE(MAX(id), 0) FROM interactions)
     > (SELECT indexed_upto FROM fts_progress WHERE name = 'interactions')

-- name: index_new_interactions
INSERT INTO interactions_fts (rowid, content, user_action_description)
SELECT id, content, user_action_description FROM interactions
WHERE id > (SELECT indexed_upto FROM fts_progress WHERE name = 'interactions')
ORDER BY id

-- name: advance_interaction_fts
UPDATE fts_progress
SET indexed_upto = MAX(indexed_upto, (SELECT COALESCE(MAX(id), 0) FROM interactions))
WHERE name = 'interactions'

-- name: queued_twin
SELECT q.id FROM jobs j
JOIN jobs q ON q.org_id = j.org_id AND q.task = j.task AND q.key = j.key
    AND q.status = 'queued' AND q.id <> j.id
WHERE j.id = :id
