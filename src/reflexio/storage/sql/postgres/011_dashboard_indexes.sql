-- Indexes the dashboard's screens read through (migration 011 is the dashboard's). Those that
-- start with (org_id, kind) cover what counts per kind read, so whichever one the planner picks
-- for a count never reads the rows.
-- Learnings created per day, of a kind and agent version: the Overview counts each day of its
-- window (covering, so a day is counted from the index alone).
CREATE INDEX learnings_created ON learnings (org_id, created_at, kind, agent_version);
-- One user's learnings of a kind, newest first (a user's page, the Learnings screen filtered
-- to a user): without it the planner walks the org's whole updated_at index to skip a sort.
CREATE INDEX learnings_user_updated ON learnings (org_id, user_id, kind, updated_at);
-- Review decisions (approved, rejected, archived...) newest first, among far more edits.
CREATE INDEX learning_events_event ON learning_events (org_id, event, id);
-- The review queue's counts per review state (pending, approved, rejected), optionally of one
-- agent version: covering, so a tab's count never reads the rows.
CREATE INDEX learnings_review ON learnings (org_id, kind, approval, status, agent_version);
