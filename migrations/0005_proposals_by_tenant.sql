-- The console queue's "All" tab lists a tenant's proposals newest (or
-- oldest) first with no status filter. Without an index that starts with
-- (tenant_id, id), SQLite read every proposal of the tenant and sorted them
-- to return one page: about 300 ms at 100,000 proposals (docs/BENCHMARKS.md).
-- With it, a page reads its 26 rows in index order.
CREATE INDEX proposals_tenant_recent ON proposals (tenant_id, id);
