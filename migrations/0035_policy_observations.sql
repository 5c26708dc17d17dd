-- Observe mode (docs/POLICY.md, "Observe mode"): a proposal the observed
-- candidate policy would have decided differently from the enforced one.
-- Only differences are stored; nothing here is ever enforced.
-- `proposal_id` is empty for a proposal the enforced policy refused (it
-- is not stored; its request hash is). `enforced` and `observed` are the
-- two decisions as JSON; `change` is "auto_approved -> needs_approval"
-- and the like.
CREATE TABLE policy_observations (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    proposal_id      TEXT NOT NULL,
    request_hash     TEXT NOT NULL,
    amount_minor     INTEGER NOT NULL,
    currency         TEXT NOT NULL,
    change           TEXT NOT NULL,
    enforced         TEXT NOT NULL,
    observed         TEXT NOT NULL,
    observed_digest  TEXT NOT NULL,
    at               TEXT NOT NULL
);
CREATE INDEX policy_observations_tenant_at ON policy_observations (tenant_id, at);
