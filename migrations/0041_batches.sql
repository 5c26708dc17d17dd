-- Batches (crates/core/src/batches, docs/API.md "Batches"): an
-- agent proposes several payments (a payroll, a vendor run) that people
-- review and approve as one. Lines that fail their checks are held back
-- with their reasons; a reviewer may hold back more. Approvers approve the
-- batch hash (over the included lines), and one approval token, bound to
-- it, is minted for the batch. At commit each included line becomes a
-- proposal of its own with one operation on the tenant's rail (made in its
-- own transaction, before its rail call) and is reconciled like any other.
CREATE TABLE batches (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants(id),
    agent_id            TEXT NOT NULL,
    run_id              TEXT NOT NULL,
    -- Untrusted text from the agent ("March payroll").
    label               TEXT,
    -- pending_approval | approved | approval_expired | rejected | cancelled
    -- | expired | committed
    status              TEXT NOT NULL,
    -- The submitted lines' digest: the same batch sent again in its run is
    -- the same batch.
    body_hash           TEXT NOT NULL,
    -- The digest of the included lines: what approvers approve and the
    -- approval token binds (`rh`).
    batch_hash          TEXT NOT NULL,
    policy              TEXT NOT NULL,
    required_approvals  INTEGER NOT NULL,
    round               INTEGER NOT NULL DEFAULT 1,
    token               TEXT,
    token_jti           TEXT UNIQUE,
    token_expires_at    TEXT,
    token_used_at       TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    expires_at          TEXT NOT NULL,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents(tenant_id, id),
    UNIQUE (tenant_id, agent_id, run_id, body_hash)
);
CREATE INDEX batches_queue ON batches (tenant_id, status, id);
CREATE INDEX batches_agent ON batches (tenant_id, agent_id, id);

CREATE TABLE batch_lines (
    batch_id          TEXT NOT NULL REFERENCES batches(id),
    line              INTEGER NOT NULL,
    -- included | held | committed
    status            TEXT NOT NULL,
    -- What the line asked for; NULL where it could not be read.
    payee_id          TEXT,
    legal_name        TEXT,
    amount_minor      INTEGER,
    currency          TEXT,
    invoice_id        TEXT,
    canonical_request TEXT,
    request_hash      TEXT,
    policy            TEXT,
    -- Who held it back (`checks` at intake, `user:<id>` on review, `commit`)
    -- and why (JSON: [{rule, message}]).
    held_by           TEXT,
    held_reasons      TEXT,
    -- The line's proposal, made when the batch is committed.
    proposal_id       TEXT,
    PRIMARY KEY (batch_id, line)
);
CREATE UNIQUE INDEX batch_lines_proposal ON batch_lines (proposal_id) WHERE proposal_id IS NOT NULL;

CREATE TABLE batch_approvals (
    batch_id     TEXT NOT NULL REFERENCES batches(id),
    round        INTEGER NOT NULL,
    approver_id  TEXT NOT NULL,
    decision     TEXT NOT NULL,
    reason       TEXT,
    -- The batch hash the decision was given on.
    batch_hash   TEXT NOT NULL,
    via          TEXT NOT NULL,
    amr          TEXT NOT NULL,
    at           TEXT NOT NULL,
    PRIMARY KEY (batch_id, round, approver_id)
);
