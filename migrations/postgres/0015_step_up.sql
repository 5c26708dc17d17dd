-- Passkey step-up bound to the payment (server/src/passkeys/step_up.rs,
-- docs/DECISIONS.md "Passkeys bound to the payment"): PostgreSQL twin of
-- ../0015_step_up.sql.
--
-- A step-up nonce is handed out for one proposal (`subject` = its id) or for
-- a listed set (`subject` = the set's digest); NULL for registrations.
ALTER TABLE passkey_challenges ADD COLUMN subject TEXT;

-- The assertion an approval was given with, kept so an auditor can re-verify
-- offline that this person's key signed this payment
-- (`countersign audit verify-approvals`). Everything the check needs is
-- copied here: the public key (the passkey may be removed later), the
-- relying party, the nonce, the request hash, and for a bulk approval the
-- listed set (`listed`: JSON `[[proposal id, request hash], …]`, in order).
-- Binary values are base64url.
CREATE TABLE approval_assertions (
    proposal_id         TEXT NOT NULL REFERENCES proposals(id),
    round               BIGINT NOT NULL,
    approver_id         TEXT NOT NULL,
    tenant_id           TEXT NOT NULL,
    kind                TEXT NOT NULL,
    request_hash        TEXT NOT NULL,
    listed              TEXT,
    nonce               TEXT NOT NULL,
    passkey_id          TEXT NOT NULL,
    public_key          TEXT NOT NULL,
    rp_id               TEXT NOT NULL,
    origin              TEXT NOT NULL,
    credential_id       TEXT NOT NULL,
    authenticator_data  TEXT NOT NULL,
    client_data_json    TEXT NOT NULL,
    signature           TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    PRIMARY KEY (proposal_id, round, approver_id)
);
