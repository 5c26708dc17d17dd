-- Exports for finance (issue 30, docs/DEPLOY.md "Exports for finance"): a
-- tenant's proposals by creation time, read page by page in (created_at, id)
-- order, so a year of payments streams without a scan per page.
CREATE INDEX proposals_by_created ON proposals (tenant_id, created_at, id);
