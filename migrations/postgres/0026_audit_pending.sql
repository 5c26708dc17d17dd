-- Audit entries written but not yet linked into the chain: PostgreSQL twin
-- of ../0026_audit_pending.sql (docs/DECISIONS.md "Two instances on
-- PostgreSQL: entries are linked after their transaction commits").
--
-- A transaction that records a change writes its audit entries here, without
-- the chain's lock; right after it commits, one short transaction under the
-- lock (`store::audit::link`) moves every committed pending entry into
-- `audit_log`, numbered and hash-linked in the order it finds them.
CREATE TABLE audit_pending (
    -- Taken at insert, not at commit: a smaller id may commit later and is
    -- then linked later (the chain's order is the linking order).
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            TEXT NOT NULL,
    tenant_id     TEXT,
    actor         TEXT NOT NULL,
    action        TEXT NOT NULL,
    proposal_id   TEXT,
    request_hash  TEXT,
    data          TEXT NOT NULL              -- JSON, account numbers masked
);
CREATE INDEX audit_pending_proposal ON audit_pending (proposal_id, id);
