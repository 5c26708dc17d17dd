-- Approval rounds and approval tokens: PostgreSQL twin of ../0002_approvals.sql.
--
-- An approval whose token expires unredeemed moves the proposal to
-- `approval_expired`; humans must approve again, so approvals belong to a
-- round and only the current round counts.

ALTER TABLE proposals ADD COLUMN approval_round BIGINT NOT NULL DEFAULT 1;

-- The same rebuild as on SQLite, so `round` is the second column here too.
CREATE TABLE approvals_v2 (
    proposal_id  TEXT NOT NULL REFERENCES proposals(id),
    round        BIGINT NOT NULL,
    approver_id  TEXT NOT NULL,
    decision     TEXT NOT NULL,
    reason       TEXT,
    via          TEXT NOT NULL,
    amr          TEXT NOT NULL,
    at           TEXT NOT NULL,
    -- one person counts once per round
    PRIMARY KEY (proposal_id, round, approver_id)
);
INSERT INTO approvals_v2 (proposal_id, round, approver_id, decision, reason, via, amr, at)
    SELECT proposal_id, 1, approver_id, decision, reason, via, amr, at FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_v2 RENAME TO approvals;
-- PostgreSQL names constraints (and the key's index) after the table they
-- were created on: give them the names a table created as `approvals` has.
ALTER TABLE approvals RENAME CONSTRAINT approvals_v2_pkey TO approvals_pkey;
ALTER TABLE approvals RENAME CONSTRAINT approvals_v2_proposal_id_fkey TO approvals_proposal_id_fkey;

-- The token minted when the last required approval of a round was given.
-- It is not a bearer of authority by itself: commit also needs the agent's key.
CREATE TABLE approval_tokens (
    jti          TEXT PRIMARY KEY,
    proposal_id  TEXT NOT NULL REFERENCES proposals(id),
    round        BIGINT NOT NULL,
    token        TEXT NOT NULL,
    kid          TEXT NOT NULL,
    issued_at    TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    UNIQUE (proposal_id, round)
);
CREATE INDEX approval_tokens_expiry ON approval_tokens (used_at, expires_at);
