-- Controls from the security review (docs/SECURITY.md, "Review of wave 2").
--
-- 1. Console sessions live in a table of our own. A session record is only
--    ever updated in place, never re-inserted, so a request still in flight
--    when its session is signed out cannot bring the session back. The user
--    id is a column, so every session of a user can be revoked at once
--    (password reset, deactivation).
-- 2. A rail reference names one operation: a transfer is never settled or
--    reversed twice under another operation's name.
-- 3. Registry changes made on the console wait for a second admin.

CREATE TABLE console_sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT,
    data        TEXT NOT NULL,             -- JSON of the session's values
    expires_at  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX console_sessions_user ON console_sessions (user_id);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The session store of earlier versions (created by tower-sessions-sqlx-store
-- at start-up): everyone signs in again once after the upgrade.
DROP TABLE IF EXISTS tower_sessions;

CREATE UNIQUE INDEX operations_rail_reference ON operations (rail_reference)
    WHERE rail_reference IS NOT NULL;

CREATE TABLE registry_changes (
    id           TEXT PRIMARY KEY,         -- chg_…
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    kind         TEXT NOT NULL,            -- user | agent | payee | slack_link
    subject      TEXT NOT NULL,            -- username, agent id or payee id
    -- JSON: exactly what will be applied (password and key as hashes only)
    change       TEXT NOT NULL,
    -- JSON: what a person reads (accounts masked) and why it needs a second admin
    summary      TEXT NOT NULL,
    status       TEXT NOT NULL,            -- pending | applied | rejected | superseded
    proposed_by  TEXT NOT NULL,            -- user id
    proposed_at  TEXT NOT NULL,
    decided_by   TEXT,
    decided_at   TEXT,
    note         TEXT
);
CREATE INDEX registry_changes_pending ON registry_changes (tenant_id, status, id);
