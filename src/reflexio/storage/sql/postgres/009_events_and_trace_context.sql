-- The live event stream: one row per event, numbered per org in commit order (org_state's
-- event_seq, taken under the org's row lock, held to commit), so a reader resuming after seq N
-- gets every later event once, in order, across restarts. And the trace context a job continues.
ALTER TABLE org_state ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;
CREATE TABLE stream_events (
    org_id     text             NOT NULL,
    seq        bigint           NOT NULL,
    type       text             NOT NULL,
    kind       text,
    subject_id text,
    user_id    text,
    data       jsonb            NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL,
    PRIMARY KEY (org_id, seq)
);
ALTER TABLE jobs ADD COLUMN trace_context jsonb NOT NULL DEFAULT '{}';
-- Whether a key may review (approve, reject): over REST and on the MCP endpoint. Keys made
-- before this column existed could review over REST, so they keep that right; new keys are made
-- reviewers only when asked (`reflexio keys create --reviewer`).
ALTER TABLE api_keys ADD COLUMN reviewer boolean NOT NULL DEFAULT false;
UPDATE api_keys SET reviewer = true;
