-- Reflect: session outcomes from the agent's systems, every serve-or-withhold decision of the
-- per-learning holdout, and the actions reflection takes on learnings.

-- Every report is a revision; the highest revision of a session is its outcome.
CREATE TABLE session_outcomes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id      TEXT    NOT NULL,
    outcome_id  TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('success', 'failure', 'unknown')),
    occurred_at INTEGER NOT NULL,
    source      TEXT    NOT NULL DEFAULT 'reported',
    label       TEXT,
    value       REAL,
    metadata    TEXT,
    created_at  REAL    NOT NULL,
    UNIQUE (org_id, session_id, user_id, revision)
);
CREATE INDEX session_outcomes_occurred ON session_outcomes (org_id, occurred_at);
CREATE INDEX session_outcomes_user ON session_outcomes (org_id, user_id);

-- An exposure is a decision: served, or withheld by the holdout (with the rate that decided).
ALTER TABLE session_exposures ADD COLUMN user_id TEXT;
ALTER TABLE session_exposures ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_exposures ADD COLUMN holdout_rate REAL NOT NULL DEFAULT 0;
CREATE INDEX session_exposures_learning ON session_exposures (org_id, kind, learning_id);

CREATE INDEX evaluations_learning ON evaluations (org_id, learning_kind, learning_id);

CREATE TABLE reflection_actions (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id              TEXT    NOT NULL,
    learning_id         INTEGER NOT NULL,
    kind                TEXT    NOT NULL,
    action              TEXT    NOT NULL,
    reason              TEXT    NOT NULL,
    evidence            TEXT    NOT NULL,
    status_before       TEXT,
    status_after        TEXT,
    related_learning_id INTEGER,
    actor               TEXT    NOT NULL,
    job_id              INTEGER,
    created_at          REAL    NOT NULL,
    reverted_at         REAL,
    reverted_by         TEXT,
    revert_note         TEXT
);
CREATE INDEX reflection_actions_learning ON reflection_actions (org_id, learning_id, id);
