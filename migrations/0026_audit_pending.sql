-- Audit entries written but not yet linked into the chain (issue 31, goal 2;
-- docs/DECISIONS.md "Two instances on PostgreSQL: entries are linked after
-- their transaction commits").
--
-- On PostgreSQL a transaction that records a change writes its audit entries
-- here, without the chain's lock; right after it commits, one short
-- transaction under the lock moves every committed pending entry into
-- `audit_log`, numbered and hash-linked in the order it finds them. So
-- several instances' writes no longer wait for each other's commits.
--
-- SQLite has one writer: it links each entry as it is written, as before, and
-- never writes here. The table exists on both so the schemas stay twins.
CREATE TABLE audit_pending (
    -- the order entries are linked in (smaller first)
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    at            TEXT NOT NULL,
    tenant_id     TEXT,
    actor         TEXT NOT NULL,
    action        TEXT NOT NULL,
    proposal_id   TEXT,
    request_hash  TEXT,
    data          TEXT NOT NULL              -- JSON, account numbers masked
);
CREATE INDEX audit_pending_proposal ON audit_pending (proposal_id, id);
