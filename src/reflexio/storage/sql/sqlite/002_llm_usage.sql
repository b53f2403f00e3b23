-- LLM accounting: one row per logical call (retries and the repair attempt included), so cost,
-- tokens and latency can be reported per org, per job and per role.
CREATE TABLE llm_usage (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id            TEXT    NOT NULL,
    job_id            INTEGER,
    role              TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    prompt            TEXT    NOT NULL,
    prompt_version    TEXT    NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL    NOT NULL DEFAULT 0,
    latency_ms        REAL    NOT NULL DEFAULT 0,
    ok                INTEGER NOT NULL DEFAULT 1,
    error             TEXT,
    created_at        REAL    NOT NULL
);
CREATE INDEX llm_usage_org ON llm_usage (org_id, created_at);
CREATE INDEX llm_usage_job ON llm_usage (org_id, job_id);
