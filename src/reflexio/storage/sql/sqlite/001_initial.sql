-- Reflexio schema, SQLite. Every row carries org_id and every query filters on it.

CREATE TABLE requests (
    org_id        TEXT    NOT NULL,
    request_id    TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    source        TEXT    NOT NULL DEFAULT '',
    agent_version TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    payload_hash  TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, request_id)
);
CREATE INDEX requests_user ON requests (org_id, user_id, created_at);
CREATE INDEX requests_session ON requests (org_id, session_id, created_at);
CREATE INDEX requests_created ON requests (org_id, created_at);

CREATE TABLE interactions (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                  TEXT    NOT NULL,
    request_id              TEXT    NOT NULL,
    user_id                 TEXT    NOT NULL,
    session_id              TEXT    NOT NULL,
    role                    TEXT    NOT NULL DEFAULT 'User',
    content                 TEXT    NOT NULL DEFAULT '',
    shadow_content          TEXT    NOT NULL DEFAULT '',
    expert_content          TEXT    NOT NULL DEFAULT '',
    user_action             TEXT    NOT NULL DEFAULT 'none',
    user_action_description TEXT    NOT NULL DEFAULT '',
    interacted_image_url    TEXT    NOT NULL DEFAULT '',
    image_encoding          TEXT    NOT NULL DEFAULT '',
    tools_used              TEXT    NOT NULL DEFAULT '[]',
    citations               TEXT    NOT NULL DEFAULT '[]',
    retrieved_learnings     TEXT    NOT NULL DEFAULT '[]',
    created_at              INTEGER NOT NULL
);
CREATE INDEX interactions_user ON interactions (org_id, user_id, id);
CREATE INDEX interactions_request ON interactions (org_id, request_id);
CREATE INDEX interactions_session ON interactions (org_id, session_id, id);

-- Full-text index over interactions, kept in sync by triggers (external content table).
CREATE VIRTUAL TABLE interactions_fts USING fts5 (
    content, user_action_description,
    content = 'interactions', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER interactions_fts_insert AFTER INSERT ON interactions BEGIN
    INSERT INTO interactions_fts (rowid, content, user_action_description)
    VALUES (new.id, new.content, new.user_action_description);
END;
CREATE TRIGGER interactions_fts_delete AFTER DELETE ON interactions BEGIN
    INSERT INTO interactions_fts (interactions_fts, rowid, content, user_action_description)
    VALUES ('delete', old.id, old.content, old.user_action_description);
END;

-- Profiles, user playbooks and agent playbooks: one table, a kind column.
CREATE TABLE learnings (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                 TEXT    NOT NULL,
    kind                   TEXT    NOT NULL CHECK (kind IN ('profile', 'user_playbook', 'agent_playbook')),
    profile_id             TEXT,
    user_id                TEXT,
    agent_version          TEXT    NOT NULL DEFAULT '',
    playbook_name          TEXT    NOT NULL DEFAULT '',
    content                TEXT    NOT NULL,
    "trigger"              TEXT,
    rationale              TEXT,
    pitfall                TEXT,
    blocking_issue         TEXT,
    status                 TEXT    NOT NULL DEFAULT 'current',
    approval               TEXT,
    source                 TEXT,
    tags                   TEXT    NOT NULL DEFAULT '[]',
    custom_features        TEXT,
    extractor_names        TEXT,
    ttl                    TEXT    NOT NULL DEFAULT 'infinity',
    expires_at             INTEGER NOT NULL DEFAULT 4102444800,
    request_id             TEXT    NOT NULL DEFAULT '',
    source_interaction_ids TEXT    NOT NULL DEFAULT '[]',
    superseded_by          INTEGER,
    metadata               TEXT    NOT NULL DEFAULT '',
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL,
    embedding              BLOB,
    embed_model            TEXT    NOT NULL DEFAULT '',
    embed_dim              INTEGER NOT NULL DEFAULT 0,
    text_hash              TEXT    NOT NULL DEFAULT '',
    seq                    INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX learnings_profile_id ON learnings (org_id, profile_id) WHERE profile_id IS NOT NULL;
CREATE INDEX learnings_user ON learnings (org_id, kind, user_id, status);
CREATE INDEX learnings_agent ON learnings (org_id, kind, agent_version, status);
CREATE INDEX learnings_updated ON learnings (org_id, updated_at);

-- A per-org change counter: learning writes are serialised (BEGIN IMMEDIATE), so sequence
-- order is commit order and an in-memory search index can catch up from learning_changes.
CREATE TABLE org_state (
    org_id       TEXT PRIMARY KEY,
    learning_seq INTEGER NOT NULL DEFAULT 0,
    pruned_seq   INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE learning_changes (
    org_id      TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    learning_id INTEGER NOT NULL
);
CREATE INDEX learning_changes_seq ON learning_changes (org_id, seq);

CREATE TABLE learning_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id      TEXT    NOT NULL,
    learning_id INTEGER NOT NULL,
    kind        TEXT    NOT NULL,
    user_id     TEXT,
    event       TEXT    NOT NULL,
    actor       TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    request_id  TEXT,
    job_id      INTEGER,
    before      TEXT,
    after       TEXT,
    created_at  REAL    NOT NULL
);
CREATE INDEX learning_events_learning ON learning_events (org_id, learning_id, id);
CREATE INDEX learning_events_user ON learning_events (org_id, user_id, id);

-- What search served in a session, so a session is not served the same learning twice.
CREATE TABLE session_exposures (
    org_id      TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    learning_id TEXT NOT NULL,
    served_at   REAL NOT NULL,
    PRIMARY KEY (org_id, session_id, kind, learning_id)
);

CREATE TABLE evaluations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id         TEXT NOT NULL,
    kind           TEXT NOT NULL,
    user_id        TEXT,
    session_id     TEXT,
    agent_version  TEXT,
    learning_kind  TEXT,
    learning_id    TEXT,
    interaction_id INTEGER,
    result         TEXT NOT NULL,
    created_at     REAL NOT NULL
);
CREATE INDEX evaluations_kind ON evaluations (org_id, kind, created_at);
CREATE INDEX evaluations_session ON evaluations (org_id, session_id);
CREATE INDEX evaluations_user ON evaluations (org_id, user_id);

CREATE TABLE bookmarks (
    org_id              TEXT    NOT NULL,
    user_id             TEXT    NOT NULL,
    extractor           TEXT    NOT NULL,
    last_interaction_id INTEGER NOT NULL DEFAULT 0,
    updated_at          REAL    NOT NULL,
    PRIMARY KEY (org_id, user_id, extractor)
);

CREATE TABLE org_configs (
    org_id     TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    updated_at REAL NOT NULL
);

CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id     TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);

CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id           TEXT    NOT NULL,
    task             TEXT    NOT NULL,
    key              TEXT,
    payload          TEXT    NOT NULL DEFAULT '{}',
    status           TEXT    NOT NULL DEFAULT 'queued'
                             CHECK (status IN ('queued', 'running', 'done', 'dead')),
    run_at           REAL    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 5,
    lease_owner      TEXT,
    lease_expires_at REAL,
    last_error       TEXT,
    request_id       TEXT,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    finished_at      REAL
);
-- At most one queued job per key (the dedupe and debounce guarantee) and at most one running
-- job per key (jobs sharing a key, e.g. one user's extraction, never run concurrently).
CREATE UNIQUE INDEX jobs_queued_key ON jobs (org_id, task, key) WHERE key IS NOT NULL AND status = 'queued';
CREATE UNIQUE INDEX jobs_running_key ON jobs (org_id, task, key) WHERE key IS NOT NULL AND status = 'running';
CREATE INDEX jobs_due ON jobs (status, run_at);
CREATE INDEX jobs_org ON jobs (org_id, status, id);
CREATE INDEX jobs_request ON jobs (org_id, request_id);
