-- Slack-style interactive approvals, PostgreSQL twin of ../0004_slack.sql:
-- a durable outbox for outbound messages and the replay guard for inbound
-- button presses.
--
-- A message is written to the outbox in the same transaction as the change
-- it announces (a proposal entering pending_approval, a decision taken from
-- a button), so it is never lost across a crash or restart, and the agent's
-- request never waits for Slack. A worker delivers due rows with backoff
-- (with several instances: claimed with FOR UPDATE SKIP LOCKED).

CREATE TABLE slack_outbox (
    id               TEXT PRIMARY KEY,
    -- what the message is about; a reply to an unknown user names neither
    tenant_id        TEXT REFERENCES tenants(id),
    proposal_id      TEXT REFERENCES proposals(id),
    -- webhook: the tenant's incoming-webhook URL from the settings (a secret,
    -- never stored here); response_url: the `url` column (checked against the
    -- allowlist before it was stored, and again before each delivery)
    target           TEXT NOT NULL CHECK (target IN ('webhook', 'response_url')),
    url              TEXT,
    body             TEXT NOT NULL,           -- the Block Kit JSON to POST
    -- pending | delivered | abandoned
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    last_error       TEXT,                    -- a status code or error kind, never a body
    created_at       TEXT NOT NULL,
    finished_at      TEXT,
    CHECK (target = 'response_url' OR (tenant_id IS NOT NULL AND proposal_id IS NOT NULL))
);
CREATE INDEX slack_outbox_due ON slack_outbox (status, next_attempt_at);

-- One row per verified inbound request: (timestamp, signature) seen once.
-- Rows older than the 5-minute window are purged; a replay inside the
-- window hits the primary key.
CREATE TABLE slack_requests (
    id       TEXT PRIMARY KEY,                -- sha256 of "timestamp:signature"
    seen_at  TEXT NOT NULL
);
CREATE INDEX slack_requests_seen ON slack_requests (seen_at);
