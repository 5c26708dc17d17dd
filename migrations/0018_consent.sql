-- Consent that cannot be manufactured (issue 24, docs/DECISIONS.md
-- "Passkeys: who may add one, and when it counts").
--
-- A passkey registered from now on counts for approvals only from
-- `usable_from` (its cool-off), or once an admin other than its holder
-- confirms it (`confirmed_by`, `confirmed_at`). NULL `usable_from`: a
-- passkey registered before this migration, usable as before.
-- `enrolment_id` names the enrolment code it was registered with, if any.
ALTER TABLE passkeys ADD COLUMN usable_from TEXT;
ALTER TABLE passkeys ADD COLUMN confirmed_by TEXT;
ALTER TABLE passkeys ADD COLUMN confirmed_at TEXT;
ALTER TABLE passkeys ADD COLUMN enrolment_id TEXT;

-- One-time enrolment codes: what lets someone register a passkey without
-- an assertion from one they already have (their first, or after losing
-- all). Issued by the operator's CLI or by two admins (a registry change);
-- only the code's SHA-256 is kept. `revealed_to` is the admin who was shown
-- the code (NULL: the CLI's operator), who may then not cut the cool-off of
-- a passkey registered with it.
CREATE TABLE passkey_enrolments (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    user_id      TEXT NOT NULL REFERENCES users(id),
    code_sha256  TEXT NOT NULL UNIQUE,
    issued_by    TEXT NOT NULL,
    revealed_to  TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT
);
CREATE INDEX passkey_enrolments_user ON passkey_enrolments (tenant_id, user_id);

-- What a person is told about their own account (a passkey added or
-- removed, an enrolment code issued): shown on the account page and flagged
-- in the top bar until read.
CREATE TABLE user_notices (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    user_id     TEXT NOT NULL REFERENCES users(id),
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    read_at     TEXT
);
CREATE INDEX user_notices_user ON user_notices (user_id, id);

-- Browsers someone has signed in from before: only the token's SHA-256 is
-- kept. A sign-in from such a browser is judged by its own failures, not by
-- the username's (docs/SECURITY.md, "Guessing passwords").
CREATE TABLE sign_in_devices (
    token_sha256  TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id),
    created_at    TEXT NOT NULL,
    last_used_at  TEXT NOT NULL
);
CREATE INDEX sign_in_devices_user ON sign_in_devices (user_id);

-- The person an agent's key was shown to, when that was a console user
-- (NULL: the operator's CLI or provisioning file). Segregation of duties
-- bars them from approving that agent's proposals, as it bars `acts_for`.
ALTER TABLE agents ADD COLUMN key_holder TEXT;
