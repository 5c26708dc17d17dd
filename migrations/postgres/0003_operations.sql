-- Durable operations (one per proposal) and daily budget reservations:
-- PostgreSQL twin of ../0003_operations.sql.
--
-- "Durable before irreversible": the operation row is committed, in the same
-- transaction that marks the approval token used and reserves the budget,
-- before the rail is called. Its idempotency key is derived from the
-- proposal id and request hash, so every resubmission uses the same key.

CREATE TABLE operations (
    id               TEXT PRIMARY KEY,
    -- one operation per proposal, one per token, one per rail key
    proposal_id      TEXT NOT NULL UNIQUE REFERENCES proposals(id),
    jti              TEXT NOT NULL UNIQUE REFERENCES approval_tokens(jti),
    idempotency_key  TEXT NOT NULL UNIQUE,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id),
    kind             TEXT NOT NULL,            -- transfer | reversal
    -- pending | accepted | succeeded | failed | unknown | needs_review | too_late
    status           TEXT NOT NULL,
    amount_minor     BIGINT NOT NULL CHECK (amount_minor > 0),
    currency         TEXT NOT NULL,
    -- the UTC day whose budget holds the reservation (NULL: none, e.g. reversals)
    budget_day       TEXT,
    -- the rail's id: tr_… for a transfer, trr_… for a reversal
    rail_reference   TEXT,
    -- for a reversal: the rail transfer it reverses
    reverses         TEXT,
    error_code       TEXT,
    error_message    TEXT,
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_check_at    TEXT NOT NULL,
    resolved_by      TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX operations_open ON operations (status, next_check_at);
CREATE INDEX operations_tenant ON operations (tenant_id, status, id);

-- What each tenant has reserved per currency and UTC day. A reservation is a
-- compare-and-set UPDATE (reserved + amount <= limit), so concurrent commits
-- cannot overspend on SQLite or PostgreSQL.
CREATE TABLE budget_days (
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    currency        TEXT NOT NULL,
    day             TEXT NOT NULL,             -- YYYY-MM-DD, UTC
    reserved_minor  BIGINT NOT NULL DEFAULT 0 CHECK (reserved_minor >= 0),
    PRIMARY KEY (tenant_id, currency, day)
);
