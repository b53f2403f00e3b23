-- The queries the shared storage runs, PostgreSQL's text. Each starts with "-- name: <name>";
-- sql/sqlite/queries.sql defines the same names (tests/storage/test_queries.py checks).
-- Values are named parameters. Templates take {placeholders} filled with fixed SQL only:
-- {where} a fragment compiled by storage.queries (its values stay parameters), {order} ASC or
-- DESC, {columns} rows.LEARNING_COLUMNS, {sets} "column = %(column)s" pairs of fixed columns.
-- An id list is one array parameter (Dialect.bind_list).

-- name: ping
SELECT 1

-- name: insert_request
INSERT INTO requests (
    org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash,
    skip_aggregation
) VALUES (
    %(org_id)s, %(request_id)s, %(user_id)s, %(session_id)s, %(source)s, %(agent_version)s,
    %(created_at)s, %(payload_hash)s, %(skip_aggregation)s
)

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
SELECT org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash,
       skip_aggregation
FROM requests WHERE org_id = %(org_id)s AND request_id = %(request_id)s

-- name: list_requests
SELECT org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash,
       skip_aggregation
FROM requests WHERE org_id = %(org_id)s AND ({where})
ORDER BY created_at DESC, request_id COLLATE "C" DESC LIMIT %(limit)s OFFSET %(offset)s

-- name: list_interactions
SELECT id, org_id, request_id, user_id, session_id, role, content, shadow_content,
       expert_content, user_action, user_action_description, interacted_image_url,
       image_encoding, tools_used, citations, retrieved_learnings, created_at
FROM interactions WHERE org_id = %(org_id)s AND ({where})
ORDER BY id {order} LIMIT %(limit)s

-- name: search_interactions
-- %(terms)s is an OR tsquery of quoted words (text_query). Planned with its values on every
-- call (the connector does not prepare it): the filter decides between GIN and the btrees.
SELECT id, org_id, request_id, user_id, session_id, role, content, shadow_content,
       expert_content, user_action, user_action_description, interacted_image_url,
       image_encoding, tools_used, citations, retrieved_learnings, created_at,
       ts_rank(tsv, to_tsquery('english', %(terms)s)) AS score
FROM interactions
WHERE org_id = %(org_id)s AND ({where}) AND tsv @@ to_tsquery('english', %(terms)s)
ORDER BY score DESC, id DESC
LIMIT %(limit)s

-- name: delete_request_interactions
DELETE FROM interactions WHERE org_id = %(org_id)s AND request_id IN (
    SELECT request_id FROM requests WHERE org_id = %(org_id)s AND ({where})
)

-- name: delete_requests
DELETE FROM requests WHERE org_id = %(org_id)s AND ({where})

-- name: delete_interactions
DELETE FROM interactions WHERE org_id = %(org_id)s AND ({where})

-- name: learnings_by_ids
SELECT {columns} FROM learnings WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])

-- name: get_learnings
SELECT {columns} FROM learnings WHERE org_id = %(org_id)s AND ({where}) ORDER BY id

-- name: list_learnings
SELECT {columns} FROM learnings WHERE org_id = %(org_id)s AND ({where})
ORDER BY updated_at {order}, id {order} LIMIT %(limit)s OFFSET %(offset)s

-- name: count_learnings
SELECT count(*) AS n FROM learnings WHERE org_id = %(org_id)s AND ({where})

-- name: tags_overlap
-- A WHERE fragment: the row carries at least one of the tags in {tags} (a list parameter).
tags && {tags}::text[]

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

-- name: update_learning_fields
UPDATE learnings SET {sets}, updated_at = %(updated_at)s, seq = %(seq)s
WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])

-- name: delete_learnings
DELETE FROM learnings WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])

-- name: bump_seq
-- Also the org's learning-write lock: the row lock is held to commit, so sequence order is
-- commit order, as on SQLite.
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

-- name: list_events
SELECT * FROM learning_events WHERE org_id = %(org_id)s AND ({where}) ORDER BY id DESC LIMIT %(limit)s

-- name: add_exposure
INSERT INTO session_exposures (org_id, session_id, kind, learning_id, served_at)
VALUES (%(org_id)s, %(session_id)s, %(kind)s, %(learning_id)s, %(served_at)s) ON CONFLICT DO NOTHING

-- name: list_exposures
SELECT kind, learning_id FROM session_exposures
WHERE org_id = %(org_id)s AND session_id = %(session_id)s

-- name: insert_evaluation
INSERT INTO evaluations (
    org_id, kind, user_id, session_id, agent_version, learning_kind, learning_id,
    interaction_id, result, created_at
) VALUES (
    %(org_id)s, %(kind)s, %(user_id)s, %(session_id)s, %(agent_version)s, %(learning_kind)s,
    %(learning_id)s, %(interaction_id)s, %(result)s, %(created_at)s
)
RETURNING id

-- name: list_evaluations
SELECT * FROM evaluations WHERE org_id = %(org_id)s AND ({where}) ORDER BY id DESC LIMIT %(limit)s

-- name: session_verdict_days
-- Session verdicts tallied per day of a window (see Storage.session_verdict_days).
SELECT floor((created_at - %(start)s) / %(day)s)::bigint AS day,
       count(*) AS judged,
       count(*) FILTER (WHERE result->'is_success' = 'true'::jsonb) AS succeeded,
       coalesce(sum(CASE WHEN jsonb_typeof(result->'number_of_correction_per_session') = 'number'
                         THEN (result->>'number_of_correction_per_session')::numeric END), 0)::bigint AS corrections,
       count(*) FILTER (WHERE result->'is_escalated' = 'true'::jsonb) AS escalated,
       count(*) FILTER (WHERE coalesce(result->>'regular_vs_shadow', '') <> '') AS shadow_judged,
       count(*) FILTER (WHERE result->>'regular_vs_shadow' IN ('shadow_is_better', 'shadow_is_slightly_better')) AS shadow_won
FROM evaluations WHERE org_id = %(org_id)s AND ({where})
GROUP BY 1 ORDER BY 1

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

-- name: clear_user_exposures
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
INSERT INTO api_keys (org_id, key_hash, prefix, name, created_at, reviewer)
VALUES (%(org_id)s, %(key_hash)s, %(prefix)s, %(name)s, %(created_at)s, %(reviewer)s)
RETURNING id

-- name: find_api_key
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at, reviewer
FROM api_keys WHERE key_hash = %(key_hash)s AND revoked_at IS NULL

-- name: list_api_keys
SELECT id, org_id, key_hash, prefix, name, created_at, revoked_at, reviewer
FROM api_keys WHERE (%(org_id)s::text IS NULL OR org_id = %(org_id)s::text) ORDER BY id

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = %(now)s WHERE id = %(id)s AND revoked_at IS NULL

-- name: set_api_key_reviewer
UPDATE api_keys SET reviewer = %(reviewer)s WHERE id = %(id)s AND revoked_at IS NULL

-- name: has_api_keys
SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL) AS present

-- name: enqueue_job
-- Jobs. The partial unique index jobs_queued_key is the arbiter of dedupe: a job whose
-- (org, task, key) is already queued returns the queued row (unchanged, or moved later and
-- carrying the newer payload when debounced), even when two processes enqueue at once.
INSERT INTO jobs AS j (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    %(org_id)s, %(task)s, %(key)s, %(payload)s, 'queued', %(run_at)s, 0, %(max_attempts)s,
    %(request_id)s, %(now)s, %(now)s, %(trace_context)s
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET updated_at = j.updated_at
RETURNING *

-- name: enqueue_job_debounced
INSERT INTO jobs AS j (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    %(org_id)s, %(task)s, %(key)s, %(payload)s, 'queued', %(run_at)s, 0, %(max_attempts)s,
    %(request_id)s, %(now)s, %(now)s, %(trace_context)s
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET run_at = greatest(j.run_at, excluded.run_at), payload = excluded.payload,
    request_id = coalesce(nullif(excluded.request_id, ''), j.request_id), updated_at = excluded.updated_at
RETURNING *

-- name: enqueue_job_sooner
-- An on-demand run: a job of that key already queued for later is brought forward to now,
-- with the newer payload (a debounced trigger must not delay what a caller asked for now).
INSERT INTO jobs AS j (
    org_id, task, key, payload, status, run_at, attempts, max_attempts, request_id, created_at, updated_at,
    trace_context
) VALUES (
    %(org_id)s, %(task)s, %(key)s, %(payload)s, 'queued', %(run_at)s, 0, %(max_attempts)s,
    %(request_id)s, %(now)s, %(now)s, %(trace_context)s
)
ON CONFLICT (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued'
DO UPDATE SET run_at = least(j.run_at, excluded.run_at), payload = excluded.payload,
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
RETURNING id, org_id, task, last_error

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
    AND (%(org_id)s::text IS NULL OR org_id = %(org_id)s::text)
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

-- name: finish_job_defer
-- Requeued without spending the attempt its claim counted: the job did not fail, it waits
-- (an org's learning paused by its quota).
UPDATE jobs SET status = 'queued', last_error = %(error)s, lease_owner = NULL, lease_expires_at = NULL,
    run_at = %(retry_at)s, attempts = attempts - 1, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s

-- name: finish_job_dead
UPDATE jobs SET status = 'dead', last_error = %(error)s, lease_owner = NULL, lease_expires_at = NULL,
    finished_at = %(now)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(worker)s
RETURNING id, org_id, task, last_error

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

-- name: list_jobs
SELECT * FROM jobs WHERE org_id = %(org_id)s AND ({where}) ORDER BY id DESC LIMIT %(limit)s

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

-- name: list_orgs
SELECT org_id FROM org_state ORDER BY org_id

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

-- name: stale_learnings
SELECT {columns} FROM learnings
WHERE org_id = %(org_id)s AND (embed_model <> %(model)s OR embedding IS NULL) LIMIT %(limit)s

-- name: set_vector
UPDATE learnings SET embedding = %(embedding)s, embed_model = %(embed_model)s,
    text_hash = %(text_hash)s, seq = %(seq)s
WHERE org_id = %(org_id)s AND id = %(id)s

-- name: get_plan
SELECT plan FROM org_plans WHERE org_id = %(org_id)s

-- name: put_plan
INSERT INTO org_plans (org_id, plan, updated_at) VALUES (%(org_id)s, %(plan)s, %(updated_at)s)
ON CONFLICT (org_id) DO UPDATE SET plan = excluded.plan, updated_at = excluded.updated_at

-- name: delete_plan
DELETE FROM org_plans WHERE org_id = %(org_id)s

-- name: count_usage
INSERT INTO usage_counters (org_id, period, meter, used)
VALUES (%(org_id)s, %(period)s, %(meter)s, %(amount)s)
ON CONFLICT (org_id, period, meter) DO UPDATE SET used = usage_counters.used + excluded.used
WHERE %(limit)s::bigint IS NULL OR usage_counters.used + excluded.used <= %(limit)s::bigint
RETURNING used

-- name: usage_of_period
SELECT meter, used FROM usage_counters WHERE org_id = %(org_id)s AND period = %(period)s

-- name: bump_event_seq
-- The org's next :n stream event numbers (the last one is returned). Under the org's row lock,
-- held to commit, so numbers are handed out in commit order.
INSERT INTO org_state AS s (org_id, event_seq) VALUES (%(org_id)s, %(n)s)
ON CONFLICT (org_id) DO UPDATE SET event_seq = s.event_seq + %(n)s
RETURNING event_seq

-- name: insert_stream_event
INSERT INTO stream_events (org_id, seq, type, kind, subject_id, user_id, data, created_at)
VALUES (%(org_id)s, %(seq)s, %(type)s, %(kind)s, %(subject_id)s, %(user_id)s, %(data)s, %(created_at)s)

-- name: list_stream_events
SELECT * FROM stream_events WHERE org_id = %(org_id)s AND seq > %(after)s AND ({where})
ORDER BY seq LIMIT %(limit)s

-- name: last_stream_event
SELECT coalesce(max(seq), 0) AS seq FROM stream_events WHERE org_id = %(org_id)s

-- name: clear_user_stream_events
DELETE FROM stream_events WHERE org_id = %(org_id)s AND user_id = %(user_id)s

-- name: job_stats
-- What /metrics reports about the queue: jobs per org, task and open status, and the oldest
-- due queued job's run time (its age is how late the queue runs).
SELECT org_id, task, status, count(*) AS n,
       min(CASE WHEN status = 'queued' AND run_at <= %(now)s THEN run_at END) AS oldest_due
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
    %(org_id)s, %(outcome_id)s, %(session_id)s, %(user_id)s,
    (SELECT coalesce(max(revision), 0) + 1 FROM session_outcomes
     WHERE org_id = %(org_id)s AND session_id = %(session_id)s AND user_id = %(user_id)s),
    %(outcome)s, %(occurred_at)s, %(source)s, %(label)s, %(value)s, %(metadata)s, %(created_at)s
)
RETURNING id, revision

-- name: list_outcomes
SELECT * FROM session_outcomes o WHERE org_id = %(org_id)s AND ({where})
ORDER BY occurred_at DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s

-- name: latest_outcome_only
NOT EXISTS (SELECT 1 FROM session_outcomes n WHERE n.org_id = o.org_id AND n.session_id = o.session_id
            AND n.user_id = o.user_id AND n.revision > o.revision)

-- name: clear_user_outcomes
DELETE FROM session_outcomes WHERE org_id = %(org_id)s AND user_id = %(user_id)s

-- name: record_exposure
INSERT INTO session_exposures (org_id, session_id, user_id, kind, learning_id, withheld, holdout_rate, served_at)
VALUES (%(org_id)s, %(session_id)s, %(user_id)s, %(kind)s, %(learning_id)s, %(withheld)s, %(holdout_rate)s,
        %(served_at)s)
ON CONFLICT DO NOTHING

-- name: learning_exposures
SELECT session_id, user_id, kind, learning_id, withheld, holdout_rate, served_at FROM session_exposures
WHERE org_id = %(org_id)s AND kind = %(kind)s AND learning_id = ANY(%(ids)s::text[])
ORDER BY served_at

-- name: most_exposed
SELECT kind, learning_id, count(*) AS sessions FROM session_exposures
WHERE org_id = %(org_id)s AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
GROUP BY kind, learning_id ORDER BY sessions DESC, max(served_at) DESC LIMIT %(limit)s

-- name: delete_session_evaluations
DELETE FROM evaluations WHERE org_id = %(org_id)s AND user_id = %(user_id)s AND session_id = %(session_id)s
    AND kind = ANY(%(kinds)s::text[])

-- name: insert_reflection_action
INSERT INTO reflection_actions (
    org_id, learning_id, kind, action, reason, evidence, status_before, status_after,
    related_learning_id, actor, job_id, created_at
) VALUES (
    %(org_id)s, %(learning_id)s, %(kind)s, %(action)s, %(reason)s, %(evidence)s, %(status_before)s,
    %(status_after)s, %(related_learning_id)s, %(actor)s, %(job_id)s, %(created_at)s
)
RETURNING id

-- name: list_reflection_actions
SELECT * FROM reflection_actions WHERE org_id = %(org_id)s AND ({where}) ORDER BY id DESC LIMIT %(limit)s

-- name: revert_reflection_action
UPDATE reflection_actions SET reverted_at = %(reverted_at)s, reverted_by = %(reverted_by)s,
    revert_note = %(revert_note)s
WHERE org_id = %(org_id)s AND id = %(id)s AND reverted_at IS NULL

-- name: clear_user_reflection_actions
DELETE FROM reflection_actions WHERE org_id = %(org_id)s AND learning_id = ANY(%(ids)s::bigint[])

-- name: list_clusters
SELECT * FROM aggregation_clusters
WHERE org_id = %(org_id)s AND agent_version = %(agent_version)s
  AND playbook_name = %(playbook_name)s
ORDER BY id

-- name: insert_cluster
INSERT INTO aggregation_clusters (
    org_id, agent_version, playbook_name, member_ids, fingerprint, decided_fingerprint,
    agent_playbook_id, revision_id, basis, updated_at
) VALUES (
    %(org_id)s, %(agent_version)s, %(playbook_name)s, %(member_ids)s, %(fingerprint)s,
    %(decided_fingerprint)s, %(agent_playbook_id)s, %(revision_id)s, %(basis)s, %(updated_at)s
)
RETURNING id

-- name: update_cluster
UPDATE aggregation_clusters SET member_ids = %(member_ids)s, fingerprint = %(fingerprint)s,
    decided_fingerprint = %(decided_fingerprint)s, agent_playbook_id = %(agent_playbook_id)s,
    revision_id = %(revision_id)s, basis = %(basis)s, updated_at = %(updated_at)s
WHERE org_id = %(org_id)s AND agent_version = %(agent_version)s
  AND playbook_name = %(playbook_name)s AND id = %(id)s

-- name: delete_clusters
DELETE FROM aggregation_clusters
WHERE org_id = %(org_id)s AND agent_version = %(agent_version)s
  AND playbook_name = %(playbook_name)s AND id = ANY(%(ids)s::bigint[])

-- name: insert_proposal
INSERT INTO agent_playbook_proposals (
    org_id, agent_playbook_id, cluster_id, member_ids, user_ids, revises_id,
    follows_rejection_id, job_id, created_at
) VALUES (
    %(org_id)s, %(agent_playbook_id)s, %(cluster_id)s, %(member_ids)s, %(user_ids)s,
    %(revises_id)s, %(follows_rejection_id)s, %(job_id)s, %(created_at)s
)
ON CONFLICT (org_id, agent_playbook_id) DO UPDATE SET cluster_id = excluded.cluster_id,
    member_ids = excluded.member_ids, user_ids = excluded.user_ids,
    revises_id = excluded.revises_id, follows_rejection_id = excluded.follows_rejection_id,
    job_id = excluded.job_id, created_at = excluded.created_at

-- name: user_proposals
SELECT * FROM agent_playbook_proposals
WHERE org_id = %(org_id)s AND user_ids @> jsonb_build_array(%(user_id)s::text)
ORDER BY agent_playbook_id

-- name: update_proposal_evidence
UPDATE agent_playbook_proposals SET member_ids = %(member_ids)s, user_ids = %(user_ids)s
WHERE org_id = %(org_id)s AND agent_playbook_id = %(agent_playbook_id)s

-- name: get_proposals
SELECT * FROM agent_playbook_proposals
WHERE org_id = %(org_id)s AND agent_playbook_id = ANY(%(ids)s::bigint[])
ORDER BY agent_playbook_id

-- name: insert_change_log
INSERT INTO aggregation_change_logs (
    org_id, agent_version, playbook_name, run_mode, added, removed, updated, job_id, created_at
) VALUES (
    %(org_id)s, %(agent_version)s, %(playbook_name)s, %(run_mode)s, %(added)s, %(removed)s,
    %(updated)s, %(job_id)s, %(created_at)s
)
RETURNING id

-- name: list_change_logs
SELECT * FROM aggregation_change_logs
WHERE org_id = %(org_id)s AND agent_version = %(agent_version)s
  AND playbook_name = %(playbook_name)s
ORDER BY id DESC LIMIT %(limit)s
