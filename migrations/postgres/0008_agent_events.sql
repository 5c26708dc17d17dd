-- The agent event stream (`GET /api/v1/events`) reads an agent's proposals
-- changed after a cursor (updated_at, id), oldest first. PostgreSQL twin of
-- ../0008_agent_events.sql.
CREATE INDEX proposals_agent_changes ON proposals (tenant_id, agent_id, updated_at, id);
