-- The console queue's "All" tab: a tenant's proposals newest (or oldest)
-- first, read in index order. PostgreSQL twin of ../0005_proposals_by_tenant.sql.
CREATE INDEX proposals_tenant_recent ON proposals (tenant_id, id);
