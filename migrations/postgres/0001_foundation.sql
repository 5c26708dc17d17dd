-- Countersign foundation schema, PostgreSQL twin of ../0001_foundation.sql
-- (the rules: migrations/postgres/README.md). TEXT ids, BIGINT amounts in
-- minor units, timestamps as RFC 3339 UTC text with fixed width (sortable,
-- compared as text exactly as on SQLite), JSON kept as TEXT, flags as 0/1
-- BIGINTs. Every integer is BIGINT: sqlx reads an i64 only from INT8.

CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE budgets (
    tenant_id          TEXT NOT NULL REFERENCES tenants(id),
    currency           TEXT NOT NULL,
    daily_limit_minor  BIGINT NOT NULL CHECK (daily_limit_minor >= 0),
    PRIMARY KEY (tenant_id, currency)
);

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id),
    username       TEXT NOT NULL UNIQUE,
    password_hash  TEXT NOT NULL,
    roles          TEXT NOT NULL,            -- JSON array of viewer | approver | admin
    slack_user_id  TEXT UNIQUE,
    active         BIGINT NOT NULL DEFAULT 1,
    created_at     TEXT NOT NULL
);

CREATE TABLE approval_limits (
    user_id      TEXT NOT NULL REFERENCES users(id),
    currency     TEXT NOT NULL,
    limit_minor  BIGINT NOT NULL CHECK (limit_minor >= 0),
    PRIMARY KEY (user_id, currency)
);

CREATE TABLE agents (
    tenant_id        TEXT NOT NULL REFERENCES tenants(id),
    id               TEXT NOT NULL,
    key_sha256       TEXT NOT NULL UNIQUE,
    acts_for         TEXT NOT NULL REFERENCES users(id),
    source_accounts  TEXT NOT NULL,          -- JSON array
    purposes         TEXT NOT NULL,          -- JSON array
    active           BIGINT NOT NULL DEFAULT 1,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE payees (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    id          TEXT NOT NULL,
    legal_name  TEXT NOT NULL,
    trusted     BIGINT NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE proposals (
    id                   TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL REFERENCES tenants(id),
    agent_id             TEXT NOT NULL,
    run_id               TEXT NOT NULL,
    kind                 TEXT NOT NULL,
    status               TEXT NOT NULL,
    amount_minor         BIGINT NOT NULL CHECK (amount_minor > 0),
    currency             TEXT NOT NULL,
    payee_id             TEXT NOT NULL,
    canonical_request    TEXT NOT NULL,
    request_hash         TEXT NOT NULL,
    policy               TEXT NOT NULL,      -- JSON decision
    required_approvals   BIGINT NOT NULL,
    version              BIGINT NOT NULL DEFAULT 1,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    expires_at           TEXT NOT NULL,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents(tenant_id, id),
    -- duplicates collapse: one proposal per identical request within a run
    UNIQUE (tenant_id, agent_id, run_id, request_hash)
);
CREATE INDEX proposals_agent_listing ON proposals (tenant_id, agent_id, id);
CREATE INDEX proposals_queue ON proposals (tenant_id, status, id);
CREATE INDEX proposals_expiry ON proposals (status, expires_at);

CREATE TABLE approvals (
    proposal_id  TEXT NOT NULL REFERENCES proposals(id),
    approver_id  TEXT NOT NULL,
    decision     TEXT NOT NULL,
    reason       TEXT,
    via          TEXT NOT NULL,
    amr          TEXT NOT NULL,
    at           TEXT NOT NULL,
    -- one person counts once toward a proposal
    PRIMARY KEY (proposal_id, approver_id)
);

CREATE TABLE idempotency_keys (
    tenant_id        TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    key              TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    state            TEXT NOT NULL,          -- in_flight | done
    response_status  BIGINT,
    response_body    TEXT,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- `seq` is given by the appender (the previous entry's + 1), never generated:
-- on SQLite it is the rowid, here a plain key.
CREATE TABLE audit_log (
    seq           BIGINT PRIMARY KEY,
    at            TEXT NOT NULL,
    tenant_id     TEXT,
    actor         TEXT NOT NULL,
    action        TEXT NOT NULL,
    proposal_id   TEXT,
    request_hash  TEXT,
    data          TEXT NOT NULL,             -- JSON, account numbers masked
    prev_hash     TEXT NOT NULL UNIQUE,      -- the chain cannot fork
    hash          TEXT NOT NULL UNIQUE
);
CREATE INDEX audit_log_proposal ON audit_log (proposal_id, seq);
