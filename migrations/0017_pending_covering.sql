-- The count of proposals waiting for a reviewer (the console's page titles,
-- server/src/flow.rs, `store::proposals::pending_for`) reads each pending
-- proposal's agent, currency, amount and approval round: the queue index
-- covers them, so a page of pending proposals is read from the index alone,
-- not from one table page per proposal. It still serves the queue listing
-- by status (its first three columns are unchanged), so intake maintains
-- as many indexes as before.
DROP INDEX proposals_queue;
CREATE INDEX proposals_queue
    ON proposals (tenant_id, status, id, agent_id, currency, amount_minor, approval_round);
