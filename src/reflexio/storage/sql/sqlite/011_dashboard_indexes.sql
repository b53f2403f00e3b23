-- Indexes the dashboard's screens read through (migration 011 is the dashboard's).
-- Learnings created per kind and day: the Overview counts each day of its window.
CREATE INDEX learnings_created ON learnings (org_id, kind, created_at);
-- One user's learnings of a kind, newest first (a user's page, the Learnings screen filtered
-- to a user): without it the planner walks the org's whole updated_at index to skip a sort.
CREATE INDEX learnings_user_updated ON learnings (org_id, kind, user_id, updated_at);
-- Review decisions (approved, rejected, archived...) newest first, among far more edits.
CREATE INDEX learning_events_event ON learning_events (org_id, event, id);
