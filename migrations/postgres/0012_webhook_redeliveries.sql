-- Redeliveries an admin asked for from the delivery log on the admin page
-- (`webhooks::redeliver`, docs/CONFIG.md "Agent webhooks"): PostgreSQL twin
-- of ../0012_webhook_redeliveries.sql.
--
-- A redelivery sends the proposal's current state again as a new event, with
-- an event id of its own, beside the webhook's stream: it never moves the
-- webhook's cursor or its count of failed attempts. The dispatcher sends it
-- with the same retries and backoff as the stream; each attempt is logged in
-- webhook_deliveries with `redelivery_id` set.
CREATE TABLE webhook_redeliveries (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    proposal_id      TEXT NOT NULL,
    -- The logged attempt whose Redeliver button was pressed.
    delivery_id      TEXT NOT NULL REFERENCES webhook_deliveries (id),
    event_id         TEXT NOT NULL,
    -- `user:<id>` of the admin.
    requested_by     TEXT NOT NULL,
    requested_at     TEXT NOT NULL,
    -- Failed attempts so far.
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    -- When it was delivered or given up; NULL while it is queued.
    done_at          TEXT,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);
-- One queued redelivery per proposal and agent: pressing Redeliver again
-- while one waits is refused rather than sending the same state twice.
CREATE UNIQUE INDEX webhook_redeliveries_queued
    ON webhook_redeliveries (tenant_id, agent_id, proposal_id) WHERE done_at IS NULL;
CREATE INDEX webhook_redeliveries_due ON webhook_redeliveries (next_attempt_at) WHERE done_at IS NULL;

-- The redelivery an attempt belongs to; NULL for the stream's own attempts.
ALTER TABLE webhook_deliveries ADD COLUMN redelivery_id TEXT;
