-- Generalize: what aggregation keeps between runs. Clusters carry the fingerprint they had when
-- last decided (an unchanged cluster costs nothing); proposals are the evidence each agent
-- playbook was proposed from (provenance, revision and rejection links); change logs are what
-- each run added, removed and rewrote. Operations are jobs (status, attempts, progress).
CREATE TABLE aggregation_clusters (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id              TEXT    NOT NULL,
    agent_version       TEXT    NOT NULL,
    playbook_name       TEXT    NOT NULL,
    member_ids          TEXT    NOT NULL,
    fingerprint         TEXT    NOT NULL,
    decided_fingerprint TEXT,
    agent_playbook_id   INTEGER,
    revision_id         INTEGER,
    updated_at          REAL    NOT NULL
);
CREATE INDEX aggregation_clusters_scope ON aggregation_clusters (org_id, agent_version, playbook_name);

CREATE TABLE agent_playbook_proposals (
    org_id               TEXT    NOT NULL,
    agent_playbook_id    INTEGER NOT NULL,
    cluster_id           INTEGER NOT NULL,
    member_ids           TEXT    NOT NULL,
    user_ids             TEXT    NOT NULL,
    revises_id           INTEGER,
    follows_rejection_id INTEGER,
    job_id               INTEGER,
    created_at           REAL    NOT NULL,
    PRIMARY KEY (org_id, agent_playbook_id)
);

CREATE TABLE aggregation_change_logs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id        TEXT    NOT NULL,
    agent_version TEXT    NOT NULL,
    playbook_name TEXT    NOT NULL,
    run_mode      TEXT    NOT NULL,
    added         TEXT    NOT NULL,
    removed       TEXT    NOT NULL,
    updated       TEXT    NOT NULL,
    job_id        INTEGER,
    created_at    REAL    NOT NULL
);
CREATE INDEX aggregation_change_logs_scope ON aggregation_change_logs (org_id, agent_version, playbook_name, id);

-- A publish with skip_aggregation: what is learned from it queues no aggregation run.
ALTER TABLE requests ADD COLUMN skip_aggregation INTEGER NOT NULL DEFAULT 0;
