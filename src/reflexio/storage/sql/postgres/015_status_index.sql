-- The review queue's suspended and retired tabs list learnings of every kind in one lifecycle
-- status, newest first. Those statuses are rare, yet without this index the planner walks the
-- org's whole updated_at index to find a page of them.
CREATE INDEX learnings_status_updated ON learnings (org_id, status, updated_at, id);
