-- Passkeys (server/src/passkeys/, docs/DECISIONS.md "Passkeys"): PostgreSQL
-- twin of ../0014_passkeys.sql.
--
-- A user's registered passkeys: the credential id and the P-256 public key
-- (SEC1, uncompressed), both base64url; the signature counter last seen.
CREATE TABLE passkeys (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    user_id        TEXT NOT NULL REFERENCES users(id),
    credential_id  TEXT NOT NULL UNIQUE,
    public_key     TEXT NOT NULL,
    sign_count     BIGINT NOT NULL,
    name           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    last_used_at   TEXT
);
CREATE INDEX passkeys_user ON passkeys (tenant_id, user_id);

-- Challenges handed to a browser: each is taken once, by the user it was
-- made for, before it expires. `purpose` is `register` (the challenge is
-- random) or `step_up` (it is the nonce of a step-up challenge).
CREATE TABLE passkey_challenges (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    challenge   TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT
);
CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
