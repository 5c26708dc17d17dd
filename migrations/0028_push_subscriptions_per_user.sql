-- A Web Push subscription belongs to one user of one tenant: the same
-- endpoint (one browser) may be subscribed by several people signed in on
-- it, each with a row of their own, and subscribing again replaces only
-- that person's row. Keyed by the endpoint alone, another tenant's user
-- who learnt an endpoint could subscribe it and take it away from its
-- owner, who then stopped being notified (docs/SECURITY.md).
CREATE TABLE push_subscriptions_v2 (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    user_id      TEXT NOT NULL REFERENCES users(id),
    -- the push service's URL for this device (checked against
    -- notifications.push.allowed_hosts when stored and before each post)
    endpoint     TEXT NOT NULL,
    p256dh       TEXT NOT NULL,   -- the browser's P-256 key, base64url
    auth         TEXT NOT NULL,   -- the 16-byte auth secret, base64url
    label        TEXT NOT NULL,   -- "Chrome on Android", shown on the account page
    created_at   TEXT NOT NULL,
    last_sent_at TEXT,
    UNIQUE (tenant_id, user_id, endpoint)
);
INSERT INTO push_subscriptions_v2 (id, tenant_id, user_id, endpoint, p256dh, auth, label, created_at, last_sent_at)
    SELECT id, tenant_id, user_id, endpoint, p256dh, auth, label, created_at, last_sent_at FROM push_subscriptions;
DROP TABLE push_subscriptions;
ALTER TABLE push_subscriptions_v2 RENAME TO push_subscriptions;
CREATE INDEX push_subscriptions_by_user ON push_subscriptions (user_id);
