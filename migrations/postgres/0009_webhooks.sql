-- Signed webhooks per agent (`countersign agent webhook …`, docs/CONFIG.md):
-- PostgreSQL twin of ../0009_webhooks.sql.
--
-- The proposals table is the outbox: a webhook keeps a cursor (the last
-- change delivered, as `updated_at` then id) and the dispatcher delivers the
-- agent's proposals changed after it, in order, advancing the cursor only
-- when the receiver answered 2xx (or the event was given up). A crash loses
-- nothing; a failing receiver holds its own agent's deliveries, nobody
-- else's.
CREATE TABLE agent_webhooks (
    tenant_id        TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    url              TEXT NOT NULL,
    -- JSON array of signing secrets, newest first; each signs every
    -- delivery while a rotation is under way.
    secrets          TEXT NOT NULL,
    cursor_at        TEXT NOT NULL,
    cursor_id        TEXT NOT NULL DEFAULT '',
    -- Failed attempts at the event after the cursor.
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, agent_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);

-- Every attempt, for the delivery log.
CREATE TABLE webhook_deliveries (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    proposal_id  TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    -- delivered | failed | abandoned
    outcome      TEXT NOT NULL,
    http_status  BIGINT,
    error        TEXT,
    attempt      BIGINT NOT NULL,
    at           TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_agent ON webhook_deliveries (tenant_id, agent_id, at);
