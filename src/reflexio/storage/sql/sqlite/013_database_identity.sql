-- A random name for this database, made once: search-index snapshots on disk (storage.index_file)
-- say which database they were taken of, so a snapshot is never read into another database
-- that happens to live at the same path. A copy of the file keeps the name; the snapshot's
-- change-log fingerprint tells a copy that has since taken other writes.
CREATE TABLE database_identity (
    name TEXT NOT NULL
);
INSERT INTO database_identity (name) VALUES (lower(hex(randomblob(16))));
