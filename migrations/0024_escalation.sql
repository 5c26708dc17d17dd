-- Escalation that fails closed (issue 29 item 3, docs/NOTIFICATIONS.md):
-- when a waiting proposal reminds its approvers and escalates to a backup
-- group, planned from the tenant's `[[escalation]]` rule when it starts
-- waiting; and each person's quiet hours, in their own time zone.
--
-- A row exists only for proposals a rule covers. `escalated_at` is set once,
-- by the sweep that escalates (audited as `proposal.escalated`); the
-- notifications themselves are rows of `notifications` (kinds `reminder`
-- and `escalated`). Nothing here ever approves: at `expires_at` the
-- proposal is `expired`, as without a rule.

CREATE TABLE escalations (
    proposal_id  TEXT PRIMARY KEY REFERENCES proposals(id),
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    remind_at    TEXT,
    escalate_at  TEXT,
    -- the `[[approval_group]]` escalated to, by name
    escalate_to  TEXT,
    escalated_at TEXT
);
CREATE INDEX escalations_due ON escalations (escalate_at) WHERE escalated_at IS NULL;

-- An IANA zone ("Europe/Paris") and "HH:MM-HH:MM" in it; both or neither.
ALTER TABLE users ADD COLUMN time_zone TEXT;
ALTER TABLE users ADD COLUMN quiet_hours TEXT;
