-- The groups a user's single sign-on provider last named for them (the
-- provider's `groups_claim`; a JSON array of names, recorded at each
-- sign-in). What they grant is the tenant's `idp_groups` setting, the same
-- as for groups pushed by SCIM (docs/PEOPLE.md).
ALTER TABLE users ADD COLUMN oidc_groups TEXT NOT NULL DEFAULT '[]';
