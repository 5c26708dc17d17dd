-- A tenant's Cedar policies set by a confirmed four-eyes policy change
-- (docs/POLICY.md, "Changing a policy"). The newest row of a tenant and
-- mode wins over the file its config names. `mode` is `enforce` or
-- `observe`; `text` empty means back to the config's own (the file, or
-- the TOML rules); `digest` is the text's sha256. Rows are never updated:
-- the history of a tenant's policies is the table.
CREATE TABLE tenant_policies (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    mode          TEXT NOT NULL,
    text          TEXT NOT NULL,
    digest        TEXT NOT NULL,
    change_id     TEXT NOT NULL,
    proposed_by   TEXT NOT NULL,
    confirmed_by  TEXT NOT NULL,
    at            TEXT NOT NULL
);
CREATE INDEX tenant_policies_latest ON tenant_policies (tenant_id, mode, at);
