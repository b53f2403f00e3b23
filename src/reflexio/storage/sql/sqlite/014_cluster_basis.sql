-- What a scope's clusters were grouped with (embedder and similarity threshold): a run under
-- another basis regroups the scope from scratch, since vectors of another model, or members
-- placed at another threshold, do not belong with the new ones.
ALTER TABLE aggregation_clusters ADD COLUMN basis TEXT;
