-- Reaching approvers (issue 29 items 1 and 2, docs/NOTIFICATIONS.md): each
-- person's email address, their devices subscribed to Web Push, and a
-- durable outbox of notifications.
--
-- An `announce` row is written in the transaction that makes a proposal
-- wait for a decision (and an `expiring` row due shortly before it
-- expires). A worker expands each into one row per recipient and channel,
-- reading who may approve at that moment, and delivers those with backoff.
-- Bodies are rendered at delivery from the proposal, never stored: the
-- outbox holds no payee, amount or account.

ALTER TABLE users ADD COLUMN email TEXT;

CREATE TABLE push_subscriptions (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    user_id      TEXT NOT NULL REFERENCES users(id),
    -- the push service's URL for this device (checked against
    -- notifications.push.allowed_hosts when stored and before each post)
    endpoint     TEXT NOT NULL UNIQUE,
    p256dh       TEXT NOT NULL,   -- the browser's P-256 key, base64url
    auth         TEXT NOT NULL,   -- the 16-byte auth secret, base64url
    label        TEXT NOT NULL,   -- "Chrome on Android", shown on the account page
    created_at   TEXT NOT NULL,
    last_sent_at TEXT
);
CREATE INDEX push_subscriptions_by_user ON push_subscriptions (user_id);

CREATE TABLE notifications (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id),
    proposal_id      TEXT NOT NULL REFERENCES proposals(id),
    -- arrived | expiring
    kind             TEXT NOT NULL,
    -- fanout (to be expanded) | email | push
    channel          TEXT NOT NULL CHECK (channel IN ('fanout', 'email', 'push')),
    user_id          TEXT REFERENCES users(id),
    subscription_id  TEXT,
    -- pending | delivered | abandoned
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    last_error       TEXT,                    -- a status code or error kind, never a body
    created_at       TEXT NOT NULL,
    finished_at      TEXT,
    CHECK (channel = 'fanout' OR user_id IS NOT NULL)
);
CREATE INDEX notifications_due ON notifications (status, next_attempt_at);
CREATE INDEX notifications_by_proposal ON notifications (proposal_id);
