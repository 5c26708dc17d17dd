-- People come and go (docs/PEOPLE.md): provisioning from an identity
-- provider over SCIM 2.0, offboarding that takes effect at once, and the
-- identity provider's groups mapped to roles and approval groups.
--
-- users: the identity provider's id for the person (`externalId`), the
-- SCIM profile (name, displayName, emails; JSON), what the provider's
-- groups grant (roles and approval groups, recomputed from the memberships
-- below and the tenant's `idp_groups` mapping), when they were deactivated,
-- and when SCIM deleted them (the row stays: approvals and the audit trail
-- name it; the username is freed).
ALTER TABLE users ADD COLUMN external_id TEXT;
ALTER TABLE users ADD COLUMN profile TEXT;
ALTER TABLE users ADD COLUMN idp_roles TEXT NOT NULL DEFAULT '[]';
ALTER TABLE users ADD COLUMN idp_approval_groups TEXT NOT NULL DEFAULT '[]';
ALTER TABLE users ADD COLUMN deactivated_at TEXT;
ALTER TABLE users ADD COLUMN deleted_at TEXT;
ALTER TABLE users ADD COLUMN updated_at TEXT;
CREATE UNIQUE INDEX users_external_id ON users (tenant_id, external_id) WHERE external_id IS NOT NULL;

-- A tenant's SCIM bearer tokens: only the SHA-256 is stored; made by a
-- registry change two admins agree on, shown once to the one who proposed
-- it; scoped to provisioning of that tenant and nothing else.
CREATE TABLE scim_tokens (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    token_sha256  TEXT NOT NULL UNIQUE,
    label         TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    confirmed_by  TEXT,
    created_at    TEXT NOT NULL,
    revoked_at    TEXT,
    last_used_at  TEXT
);
CREATE INDEX scim_tokens_of ON scim_tokens (tenant_id);

-- The identity provider's groups and who is in them.
CREATE TABLE scim_groups (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    display_name  TEXT NOT NULL,
    external_id   TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (tenant_id, display_name)
);
CREATE TABLE scim_group_members (
    group_id  TEXT NOT NULL REFERENCES scim_groups(id),
    user_id   TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_of ON scim_group_members (user_id);

-- An approval given by someone deactivated while the proposal still waited:
-- kept (the proposal's history and the audit trail show it) but no longer
-- counted toward the proposal's approvals.
ALTER TABLE approvals ADD COLUMN withdrawn_at TEXT;

-- A freeze written because the person an agent acts for was deactivated:
-- that user's id (NULL for the kill switch). It holds until an admin
-- reassigns the agent's acts_for; proposals are refused as well as commits.
ALTER TABLE freezes ADD COLUMN offboarding_of TEXT;
