-- Single sign-on with OpenID Connect (docs/DECISIONS.md, "Single sign-on"):
-- PostgreSQL twin of ../0013_oidc.sql.
--
-- 1. A console user may be linked to one identity at one identity provider:
--    the issuer (`iss`, exactly as configured and as the provider's ID
--    tokens carry it) and the subject (`sub`, the provider's stable id of
--    the person). Sign-in through the provider finds the user by this pair
--    and by nothing else (never by e-mail). An admin or the operator links
--    them; nobody is created on first sign-in.
-- 2. A sign-in in progress: what the server must remember between sending
--    the browser to the provider and its coming back (state, nonce, PKCE
--    verifier, where to go afterwards), found by the SHA-256 of a random
--    value held in a short-lived cookie, and taken (deleted) at the first
--    callback that presents it.

ALTER TABLE users ADD COLUMN oidc_issuer TEXT;
ALTER TABLE users ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX users_oidc_identity ON users (oidc_issuer, oidc_subject)
    WHERE oidc_subject IS NOT NULL;

CREATE TABLE oidc_logins (
    id_sha256      TEXT PRIMARY KEY,       -- hex SHA-256 of the pre-sign-in cookie's value
    provider       TEXT NOT NULL,          -- oidc.providers.<id>
    state          TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    pkce_verifier  TEXT NOT NULL,
    return_to      TEXT,                   -- a checked ReturnPath, or NULL for the queue
    expires_at     TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX oidc_logins_expiry ON oidc_logins (expires_at);
