-- What a long job reports while it runs (users done, counts...), written by its worker under
-- the lease and read by whoever polls the operation.
ALTER TABLE jobs ADD COLUMN progress jsonb NOT NULL DEFAULT '{}';
