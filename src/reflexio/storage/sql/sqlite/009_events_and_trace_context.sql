-- The live event stream: one row per event, numbered per org in commit order (org_state's
-- event_seq, taken under the org's write lock), so a reader resuming after seq N gets every
-- later event once, in order, across restarts. And the trace context a job continues.
ALTER TABLE org_state ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
CREATE TABLE stream_events (
    org_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    kind       TEXT,
    subject_id TEXT,
    user_id    TEXT,
    data       TEXT    NOT NULL DEFAULT '{}',
    created_at REAL    NOT NULL,
    PRIMARY KEY (org_id, seq)
);
ALTER TABLE jobs ADD COLUMN trace_context TEXT NOT NULL DEFAULT '{}';
-- Whether a key may review (approve, reject): over REST and on the MCP endpoint. Keys made
-- before this column existed could review over REST, so they keep that right; new keys are made
-- reviewers only when asked (`reflexio keys create --reviewer`).
ALTER TABLE api_keys ADD COLUMN reviewer INTEGER NOT NULL DEFAULT 0;
UPDATE api_keys SET reviewer = 1;
