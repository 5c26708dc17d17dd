-- Microsoft Teams approvals (docs/NOTIFICATIONS.md, "Approving from Microsoft
-- Teams"): who a Teams user is here, the replay guard of inbound activities,
-- and the durable outbox of the cards the bot posts and replaces.

-- A Teams user (their Entra ID object id, `from.aadObjectId` in an activity)
-- linked to one console user; each side linked at most once.
CREATE TABLE teams_links (
    aad_object_id  TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL UNIQUE REFERENCES users(id),
    linked_at      TEXT NOT NULL
);

-- One row per verified inbound activity: sha256 of "conversation id:activity
-- id", seen once. Kept while the token that carried it could still verify
-- (its expiry plus the clock leeway), then purged.
CREATE TABLE teams_activities (
    id          TEXT PRIMARY KEY,
    keep_until  TEXT NOT NULL
);
CREATE INDEX teams_activities_keep ON teams_activities (keep_until);

-- Cards to send to the Bot Connector: `post` a new card to a tenant's
-- conversation, or `update` (replace) the card of `activity_id` for everyone
-- in it. Written in the transaction that makes the change they announce;
-- a worker sends due rows with backoff (several instances: claimed with
-- FOR UPDATE SKIP LOCKED on PostgreSQL).
CREATE TABLE teams_outbox (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id),
    proposal_id      TEXT NOT NULL REFERENCES proposals(id),
    kind             TEXT NOT NULL CHECK (kind IN ('post', 'update')),
    -- the conversation: its connector URL (checked against teams.allowed_hosts
    -- before each send) and id
    service_url      TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    activity_id      TEXT,                    -- the card replaced (update)
    body             TEXT NOT NULL,           -- the activity JSON to send
    -- pending | delivered | abandoned
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    last_error       TEXT,                    -- a status code or error kind, never a body
    created_at       TEXT NOT NULL,
    finished_at      TEXT,
    CHECK (kind = 'post' OR activity_id IS NOT NULL)
);
CREATE INDEX teams_outbox_due ON teams_outbox (status, next_attempt_at);
