-- The agent event stream (`GET /api/v1/events`) reads an agent's proposals
-- changed after a cursor (updated_at, id), oldest first.
CREATE INDEX proposals_agent_changes ON proposals (tenant_id, agent_id, updated_at, id);
