-- Delegation while away (issue 29 item 4, docs/DELEGATION.md): an approver
-- lets another approver approve for them between two instants. A
-- delegation that would let the delegate count for an approval group they
-- are not in waits (`pending`) for a second admin's confirmation, the
-- registry change `change_id`; otherwise it is `active` at once. Ending
-- one (`revoked`) applies at once. Rows are never deleted: each approval
-- given under one names it.

CREATE TABLE delegations (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    delegator_id TEXT NOT NULL REFERENCES users(id),
    delegate_id  TEXT NOT NULL REFERENCES users(id),
    starts_at    TEXT NOT NULL,
    ends_at      TEXT NOT NULL,
    -- pending | active | revoked | refused
    status       TEXT NOT NULL,
    change_id    TEXT,
    created_at   TEXT NOT NULL,
    ended_at     TEXT
);
CREATE INDEX delegations_of ON delegations (tenant_id, status, ends_at);

-- An approval a delegate gave for someone: whom it counts for, and under
-- which delegation. `approver_id` stays the person who pressed Approve.
ALTER TABLE approvals ADD COLUMN on_behalf_of TEXT;
ALTER TABLE approvals ADD COLUMN delegation_id TEXT;
