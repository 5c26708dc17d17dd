-- The kill switch (issue 30, docs/SECURITY.md "Kill switch"): while a row
-- covers a commit, it is refused before any rail call. `scope` is `all`
-- (every tenant; tenant_id and agent_id empty), `tenant` (agent_id empty)
-- or `agent`. A freeze applies at once; lifting one is a registry change a
-- second admin confirms (or the operator's CLI for `all`).
CREATE TABLE freezes (
    scope      TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    frozen_by  TEXT NOT NULL,
    reason     TEXT NOT NULL,
    at         TEXT NOT NULL,
    PRIMARY KEY (scope, tenant_id, agent_id)
);
