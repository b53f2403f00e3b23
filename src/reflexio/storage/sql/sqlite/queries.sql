-- The queries the shared storage runs, SQLite's text. Each starts with "-- name: <name>";
-- sql/postgres/queries.sql defines the same names (tests/storage/test_queries.py checks).
-- Values are named parameters. Templates take {placeholders} filled with fixed SQL only:
-- {where} a fragment compiled by storage.queries (its values stay parameters), {order} ASC or
-- DESC, {columns} rows.LEARNING_COLUMNS, {sets} "column = :column" pairs of fixed columns.
-- An id list is one parameter, JSON text read with json_each (Dialect.bind_list).
-- "+org_id" keeps SQLite from walking an org's rows by index where rowid lookups are wanted.

-- name: ping
SELECT 1

-- name: insert_request
INSERT INTO requests (
    org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash,
    skip_aggregation
) VALUES (
    :org_id, :request_id, :user_id, :session_id, :source, :agent_version, :created_at, :payload_hash,
    :skip_aggregation
)

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
RETURNING id

-- name: get_request
SELECT org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash,
       skip_aggregation
FROM requests WHERE org_id = :org_id AND request_id = :request_id

-- name: list_requests
SELECT * FROM requests WHERE org_id = :org_id AND ({where})
ORDER BY created_at DESC, request_id DESC LIMIT :limit OFFSET :offset

-- name: list_interactions
SELECT * FROM interactions WHERE org_id = :org_id AND ({where})
ORDER BY id {order} LIMIT coalesce(:limit, -1)

-- name: search_interactions
-- :terms is an FTS5 OR query of quoted words (text_query). The filter's columns are the
-- interactions' own: the full-text table has none of those names.
SELECT i.*, -bm25(interactions_fts) AS score FROM interactions_fts
JOIN interactions i ON i.id = interactions_fts.rowid
WHERE interactions_fts MATCH :terms AND i.org_id = :org_id AND ({where})
ORDER BY score DESC LIMIT :limit

-- name: delete_request_interactions
DELETE FROM interactions WHERE org_id = :org_id AND request_id IN (
    SELECT request_id FROM requests WHERE org_id = :org_id AND ({where})
)

-- name: delete_requests
DELETE FROM requests WHERE org_id = :org_id AND ({where})

-- name: delete_interactions
DELETE FROM interactions WHERE org_id = :org_id AND ({where})

-- name: learnings_by_ids
SELECT {columns} FROM learnings
WHERE +org_id = :org_id AND id IN (SELECT value FROM json_each(:ids))

-- name: get_learnings
SELECT {columns} FROM learnings WHERE org_id = :org_id AND ({where}) ORDER BY id

-- name: list_learnings
SELECT {columns} FROM learnings WHERE org_id = :org_id AND ({where})
ORDER BY updated_at {order}, id {order} LIMIT :limit OFFSET :offset

-- name: count_learnings
SELECT count(*) AS n FROM learnings WHERE org_id = :org_id AND ({where})

-- name: tags_overlap
-- A WHERE fragment: the row carries at least one of the tags in {tags} (a list parameter).
EXISTS (SELECT 1 FROM json_each(tags) WHERE value IN (SELECT value FROM json_each({tags})))

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

-- name: update_learning_fields
UPDATE learnings SET {sets}, updated_at = :updated_at, seq = :seq
WHERE +org_id = :org_id AND id IN (SELECT value FROM json_each(:ids))

-- name: delete_learnings
DELETE FROM learnings WHERE +org_id = :org_id AND id IN (SELECT value FROM json_each(:ids))

-- name: bump_seq
INSERT INTO org_state (org_id, learning_seq) VALUES (:org_id, 1)
ON CONFLICT (org_id) DO UPDATE SET learning_seq = learning_seq + 1
RETURNING learning_seq

-- name: insert_changes
INSERT INTO learning_changes (org_id, seq, learning_id)
SELECT :org_id, :seq, value FROM json_each(:ids)

-- name: prune_changes
DELETE FROM learning_changes WHERE org_id = :org_id AND seq <= :upto

-- name: set_pruned
UPDATE org_state SET pruned_seq = :upto WHERE org_id = :org_id

-- name: list_events
SELECT * FROM learning_events WHERE org_id = :org_id AND ({where}) ORDER BY id DESC LIMIT :limit

-- name: add_exposure
INSERT INTO session_exposures (org_id, session_id, kind, learning_id, served_at)
VALUES (:org_id, :session_id, :kind, :learning_id, :served_at) ON CONFLICT DO NOTHING

-- name: list_exposures
SELECT kind, learning_id FROM session_exposures WHERE org_id = :org_id AND session_id = :session_id

-- name: insert_evaluation
INSERT INTO evaluations (
    org_id, kind, user_id, session_id, agent_version, learning_kind, learning_id, interaction_id, result, created_at
) VALUES (
    :org_id, :kind, :user_id, :session_id, :agent_version, :learning_kind, :learning_id, :interaction_id, :result, :created_at
)
RETURNING id

-- name: list_evaluations
SELECT * FROM evaluations WHERE org_id = :org_id AND ({where}) ORDER BY id DESC LIMIT :limit

-- name: session_verdict_days
-- Session verdicts tallied per day of a window (see Storage.session_verdict_days).
SELECT CAST((created_at - :start) / :day AS INTEGER) AS day,
       count(*) AS judged,
       sum(json_extract(result, '$.is_success') = 1) AS succeeded,
       sum(coalesce(json_extract(result, '$.number_of_correction_per_session'), 0)) AS corrections,
       sum(json_extract(result, '$.is_escalated') = 1) AS escalated,
       sum(coalesce(json_extract(result, '$.regular_vs_shadow'), '') <> '') AS shadow_judged,
       sum(json_extract(result, '$.regular_vs_shadow') IN ('shadow_is_better', 'shadow_is_slightly_better')) AS shadow_won
FROM evaluations WHERE org_id = :org_id AND ({where})
GROUP BY 1 ORDER BY 1

-- name: get_bookmark
SELECT org_id, user_id, extractor, last_interaction_id, updated_at
FROM bookmarks WHERE org_id = :org_id AND user_id = :user_id AND extractor = :extractor

-- name: put_bookmark
INSERT INTO bookmarks (org_id, user_id, extractor, last_interaction_id, updated_at)
VALUES (:org_id, :user_id, :extractor, :last_interaction_id, :updated_at)
ON CONFLICT (org_id, user_id, extractor) DO UPDATE SET
    last_interaction_id = excluded.last_interaction_id, updated_at = excluded.updated_at

-- name: get_config
SELECT config FROM org_configs WHERE org_id = :org_id

-- name: put_config
INSERT INTO org_configs (org_id, config, updated_at) VALUES (:org_id, :config, :updated_at)
ON CONFLICT (org_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at

-- name: clear_user_exposures
DELETE FROM session_exposures WHERE org_id = :org_id AND session_id IN (
    SELECT session_id FROM requests WHERE org_id = :org_id AND user_id = :user_id
)

-- name: clear_user_events
DELETE FROM learning_events WHERE org_id = :org_id AND user_id = :user_id

-- name: clear_user_evaluations
DELETE FROM evaluations WHERE org_id = :org_id AND user_id = :user_id

-- name: clear_user_bookmarks
DELETE FROM bookmarks WHERE org_id = :org_id AND user_id = :user_id

-- name: insert_api_key
INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at, reviewer)
VALUES (:org_id, :key_hash, :prefix, :name, :created_at, :reviewer)
RETURNING id

-- name: find_api_key
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at, reviewer
FROM api_keys WHERE key_hash = :key_hash AND revoked_at IS NULL

-- name: list_api_keys
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at, reviewer
FROM api_keys WHERE (:org_id IS NULL OR org_id = :org_id) ORDER BY id

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL

-- name: set_api_key_reviewer
UPDATE api_keys SET reviewer = :reviewer WHERE id = :id AND revoked_at IS NULL

-- name: has_api_keys
SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL) AS present

-- name: enqueue_job
-- Jobs. The partial unique index jobs_queued_key is the arbiter of dedupe: a job whose
-- (org, task, key) is already queued returns the queued row (unchanged, or moved later and
-- carrying the newer payload when debounced).
INSERT INTO jobs (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    :org_id, :task, :key, :payload, 'queued', :run_at, 0, :max_attempts, :request_id, :now, :now,
    :trace_context
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET updated_at = jobs.updated_at
RETURNING *

-- name: enqueue_job_debounced
INSERT INTO jobs (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    :org_id, :task, :key, :payload, 'queued', :run_at, 0, :max_attempts, :request_id, :now, :now,
    :trace_context
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued' DO UPDATE SET
    run_at = max(jobs.run_at, excluded.run_at),
    payload = excluded.payload,
    request_id = coalesce(nullif(excluded.request_id, ''), jobs.request_id),
    updated_at = excluded.updated_at
RETURNING *

-- name: enqueue_job_sooner
-- An on-demand run: a job of that key already queued for later is brought forward to now,
-- with the newer payload (a debounced trigger must not delay what a caller asked for now).
INSERT INTO jobs (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    :org_id, :task, :key, :payload, 'queued', :run_at, 0, :max_attempts, :request_id, :now, :now,
    :trace_context
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued' DO UPDATE SET
    run_at = min(jobs.run_at, excluded.run_at),
    payload = excluded.payload,
    request_id = coalesce(nullif(excluded.request_id, ''), jobs.request_id),
    updated_at = excluded.updated_at
RETURNING *

-- name: bury_exhausted_jobs
UPDATE jobs SET status = 'dead', last_error = :error, lease_owner = NULL,
    lease_expires_at = NULL, finished_at = :now, updated_at = :now
WHERE status = 'running' AND lease_expires_at < :now AND attempts >= max_attempts
RETURNING id, org_id, task, last_error

-- name: claim_jobs
-- A queued job waits while a job of its key runs (even one whose lease expired: that one is
-- reclaimed first), so jobs sharing a key never run at the same time. :tasks is a list or NULL.
UPDATE jobs SET status = 'running', lease_owner = :worker, lease_expires_at = :until,
    attempts = attempts + 1, updated_at = :now
WHERE id IN (
    SELECT id FROM jobs j
    WHERE (
        (j.status = 'queued' AND j.run_at <= :now AND NOT EXISTS (
            SELECT 1 FROM jobs r
            WHERE r.org_id = j.org_id AND r.task = j.task AND r.key = j.key AND r.status = 'running'
        ))
        OR (j.status = 'running' AND j.lease_expires_at < :now)
    )
    AND (:tasks IS NULL OR j.task IN (SELECT value FROM json_each(:tasks)))
    AND (:org_id IS NULL OR j.org_id = :org_id)
    ORDER BY j.run_at, j.id
    LIMIT :limit
)
RETURNING *

-- name: heartbeat_jobs
UPDATE jobs SET lease_expires_at = :until, updated_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'running' AND lease_owner = :worker
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

-- name: finish_job_defer
-- Requeued without spending the attempt its claim counted: the job did not fail, it waits
-- (an org's learning paused by its quota).
UPDATE jobs SET status = 'queued', last_error = :error, lease_owner = NULL, lease_expires_at = NULL,
    run_at = :retry_at, attempts = attempts - 1, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: finish_job_dead
UPDATE jobs SET status = 'dead', last_error = :error, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker
RETURNING id, org_id, task, last_error

-- name: queued_twin
SELECT q.id FROM jobs j
JOIN jobs q ON q.org_id = j.org_id AND q.task = j.task AND q.key = j.key
    AND q.status = 'queued' AND q.id <> j.id
WHERE j.id = :id

-- name: absorb_retry
UPDATE jobs SET run_at = min(run_at, :retry_at), updated_at = :now WHERE id = :id

-- name: release_job
UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    attempts = max(0, attempts - 1), run_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :worker

-- name: get_job
SELECT * FROM jobs WHERE id = :id

-- name: list_jobs
SELECT * FROM jobs WHERE org_id = :org_id AND ({where}) ORDER BY id DESC LIMIT :limit

-- name: expedite_job
UPDATE jobs SET run_at = min(run_at, :now), updated_at = :now
WHERE org_id = :org_id AND task = :task AND key = :key AND status = 'queued'

-- name: retry_jobs
-- A dead job goes back to the queue unless its key is already queued; of several dead jobs
-- sharing a key only the newest is revived (the unique index allows one queued per key).
-- :ids is a list of job ids, or NULL for every dead job of the org.
UPDATE jobs SET status = 'queued', attempts = 0, run_at = :now, updated_at = :now, finished_at = NULL
WHERE org_id = :org_id AND status = 'dead'
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND NOT EXISTS (
      SELECT 1 FROM jobs q
      WHERE q.org_id = jobs.org_id AND q.task = jobs.task AND q.key = jobs.key AND q.status = 'queued'
  )
  AND (jobs.key IS NULL OR jobs.id = (
      SELECT max(d.id) FROM jobs d
      WHERE d.org_id = jobs.org_id AND d.task = jobs.task AND d.key = jobs.key AND d.status = 'dead'
        AND (:ids IS NULL OR d.id IN (SELECT value FROM json_each(:ids)))
  ))

-- name: list_orgs
SELECT org_id FROM org_state ORDER BY org_id

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

-- name: stale_learnings
SELECT {columns} FROM learnings
WHERE org_id = :org_id AND (embed_model <> :model OR embedding IS NULL) LIMIT :limit

-- name: set_vector
UPDATE learnings SET embedding = :embedding, embed_model = :embed_model, embed_dim = :embed_dim,
    text_hash = :text_hash, seq = :seq
WHERE org_id = :org_id AND id = :id

-- name: get_plan
SELECT plan FROM org_plans WHERE org_id = :org_id

-- name: put_plan
INSERT INTO org_plans (org_id, plan, updated_at) VALUES (:org_id, :plan, :updated_at)
ON CONFLICT (org_id) DO UPDATE SET plan = excluded.plan, updated_at = excluded.updated_at

-- name: delete_plan
DELETE FROM org_plans WHERE org_id = :org_id

-- name: count_usage
INSERT INTO usage_counters (org_id, period, meter, used) VALUES (:org_id, :period, :meter, :amount)
ON CONFLICT (org_id, period, meter) DO UPDATE SET used = usage_counters.used + excluded.used
WHERE :limit IS NULL OR usage_counters.used + excluded.used <= :limit
RETURNING used

-- name: usage_of_period
SELECT meter, used FROM usage_counters WHERE org_id = :org_id AND period = :period

-- name: bump_event_seq
-- The org's next :n stream event numbers (the last one is returned). Under the org's row lock,
-- held to commit, so numbers are handed out in commit order.
INSERT INTO org_state (org_id, event_seq) VALUES (:org_id, :n)
ON CONFLICT (org_id) DO UPDATE SET event_seq = event_seq + :n
RETURNING event_seq

-- name: insert_stream_event
INSERT INTO stream_events (org_id, seq, type, kind, subject_id, user_id, data, created_at)
VALUES (:org_id, :seq, :type, :kind, :subject_id, :user_id, :data, :created_at)

-- name: list_stream_events
SELECT * FROM stream_events WHERE org_id = :org_id AND seq > :after AND ({where})
ORDER BY seq LIMIT :limit

-- name: last_stream_event
SELECT coalesce(max(seq), 0) AS seq FROM stream_events WHERE org_id = :org_id

-- name: clear_user_stream_events
DELETE FROM stream_events WHERE org_id = :org_id AND user_id = :user_id

-- name: job_stats
-- What /metrics reports about the queue: jobs per org, task and open status, and the oldest
-- due queued job's run time (its age is how late the queue runs).
SELECT org_id, task, status, count(*) AS n,
       min(CASE WHEN status = 'queued' AND run_at <= :now THEN run_at END) AS oldest_due
FROM jobs WHERE status IN ('queued', 'running', 'dead')
GROUP BY org_id, task, status

-- name: llm_usage_by_org
SELECT org_id, model, coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
FROM llm_usage GROUP BY org_id, model

-- name: insert_outcome
INSERT INTO session_outcomes (
    org_id, outcome_id, session_id, user_id, revision, outcome, occurred_at, source, label, value,
    metadata, created_at
) VALUES (
    :org_id, :outcome_id, :session_id, :user_id,
    (SELECT coalesce(max(revision), 0) + 1 FROM session_outcomes
     WHERE org_id = :org_id AND session_id = :session_id AND user_id = :user_id),
    :outcome, :occurred_at, :source, :label, :value, :metadata, :created_at
)
RETURNING id, revision

-- name: list_outcomes
SELECT * FROM session_outcomes o WHERE org_id = :org_id AND ({where})
ORDER BY occurred_at DESC, id DESC LIMIT :limit OFFSET :offset

-- name: latest_outcome_only
NOT EXISTS (SELECT 1 FROM session_outcomes n WHERE n.org_id = o.org_id AND n.session_id = o.session_id
            AND n.user_id = o.user_id AND n.revision > o.revision)

-- name: clear_user_outcomes
DELETE FROM session_outcomes WHERE org_id = :org_id AND user_id = :user_id

-- name: record_exposure
INSERT INTO session_exposures (org_id, session_id, user_id, kind, learning_id, withheld, holdout_rate, served_at)
VALUES (:org_id, :session_id, :user_id, :kind, :learning_id, :withheld, :holdout_rate, :served_at)
ON CONFLICT DO NOTHING

-- name: learning_exposures
SELECT session_id, user_id, kind, learning_id, withheld, holdout_rate, served_at FROM session_exposures
WHERE org_id = :org_id AND kind = :kind AND learning_id IN (SELECT value FROM json_each(:ids))
ORDER BY served_at

-- name: most_exposed
SELECT kind, learning_id, count(*) AS sessions FROM session_exposures
WHERE org_id = :org_id AND (:kind IS NULL OR kind = :kind)
GROUP BY kind, learning_id ORDER BY sessions DESC, max(served_at) DESC LIMIT :limit

-- name: delete_session_evaluations
DELETE FROM evaluations WHERE org_id = :org_id AND user_id = :user_id AND session_id = :session_id
    AND kind IN (SELECT value FROM json_each(:kinds))

-- name: insert_reflection_action
INSERT INTO reflection_actions (
    org_id, learning_id, kind, action, reason, evidence, status_before, status_after,
    related_learning_id, actor, job_id, created_at
) VALUES (
    :org_id, :learning_id, :kind, :action, :reason, :evidence, :status_before, :status_after,
    :related_learning_id, :actor, :job_id, :created_at
)
RETURNING id

-- name: list_reflection_actions
SELECT * FROM reflection_actions WHERE org_id = :org_id AND ({where}) ORDER BY id DESC LIMIT :limit

-- name: revert_reflection_action
UPDATE reflection_actions SET reverted_at = :reverted_at, reverted_by = :reverted_by, revert_note = :revert_note
WHERE org_id = :org_id AND id = :id AND reverted_at IS NULL

-- name: clear_user_reflection_actions
DELETE FROM reflection_actions WHERE org_id = :org_id AND learning_id IN (SELECT value FROM json_each(:ids))

-- name: list_clusters
SELECT * FROM aggregation_clusters
WHERE org_id = :org_id AND agent_version = :agent_version AND playbook_name = :playbook_name
ORDER BY id

-- name: insert_cluster
INSERT INTO aggregation_clusters (
    org_id, agent_version, playbook_name, member_ids, fingerprint, decided_fingerprint,
    agent_playbook_id, revision_id, basis, updated_at
) VALUES (
    :org_id, :agent_version, :playbook_name, :member_ids, :fingerprint, :decided_fingerprint,
    :agent_playbook_id, :revision_id, :basis, :updated_at
)
RETURNING id

-- name: update_cluster
UPDATE aggregation_clusters SET member_ids = :member_ids, fingerprint = :fingerprint,
    decided_fingerprint = :decided_fingerprint, agent_playbook_id = :agent_playbook_id,
    revision_id = :revision_id, basis = :basis, updated_at = :updated_at
WHERE org_id = :org_id AND agent_version = :agent_version AND playbook_name = :playbook_name
  AND id = :id

-- name: delete_clusters
DELETE FROM aggregation_clusters
WHERE org_id = :org_id AND agent_version = :agent_version AND playbook_name = :playbook_name
  AND id IN (SELECT value FROM json_each(:ids))

-- name: insert_proposal
INSERT INTO agent_playbook_proposals (
    org_id, agent_playbook_id, cluster_id, member_ids, user_ids, revises_id,
    follows_rejection_id, job_id, created_at
) VALUES (
    :org_id, :agent_playbook_id, :cluster_id, :member_ids, :user_ids, :revises_id,
    :follows_rejection_id, :job_id, :created_at
)
ON CONFLICT (org_id, agent_playbook_id) DO UPDATE SET cluster_id = excluded.cluster_id,
    member_ids = excluded.member_ids, user_ids = excluded.user_ids,
    revises_id = excluded.revises_id, follows_rejection_id = excluded.follows_rejection_id,
    job_id = excluded.job_id, created_at = excluded.created_at

-- name: user_proposals
SELECT * FROM agent_playbook_proposals
WHERE org_id = :org_id AND EXISTS (SELECT 1 FROM json_each(user_ids) WHERE value = :user_id)
ORDER BY agent_playbook_id

-- name: update_proposal_evidence
UPDATE agent_playbook_proposals SET member_ids = :member_ids, user_ids = :user_ids
WHERE org_id = :org_id AND agent_playbook_id = :agent_playbook_id

-- name: get_proposals
SELECT * FROM agent_playbook_proposals
WHERE org_id = :org_id AND agent_playbook_id IN (SELECT value FROM json_each(:ids))
ORDER BY agent_playbook_id

-- name: insert_change_log
INSERT INTO aggregation_change_logs (
    org_id, agent_version, playbook_name, run_mode, added, removed, updated, job_id, created_at
) VALUES (
    :org_id, :agent_version, :playbook_name, :run_mode, :added, :removed, :updated, :job_id,
    :created_at
)
RETURNING id

-- name: list_change_logs
SELECT * FROM aggregation_change_logs
WHERE org_id = :org_id AND agent_version = :agent_version AND playbook_name = :playbook_name
ORDER BY id DESC LIMIT :limit
