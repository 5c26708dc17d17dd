-- Risk signals for a page of proposals (server/src/store/risk.rs) read each
-- row's history and duplicate invoices from an index alone. PostgreSQL twin
-- of ../0011_risk_indexes.sql.
--
-- The invoice id gets a column of its own, written at intake. Copying it
-- into existing rows must not look like a change to each of them, so the
-- change-log trigger (migration 0006) is disabled while it runs (SQLite has
-- no such switch: there it is dropped and created again).
ALTER TABLE proposals ADD COLUMN invoice_id TEXT;
ALTER TABLE proposals DISABLE TRIGGER change_log_proposal_update;
UPDATE proposals SET invoice_id = (canonical_request::jsonb) ->> 'invoice_id'
    WHERE (canonical_request::jsonb) ->> 'invoice_id' IS NOT NULL;
ALTER TABLE proposals ENABLE TRIGGER change_log_proposal_update;

-- The same invoice, oldest first; only proposals that name an invoice.
DROP INDEX proposals_payee_invoice;
CREATE INDEX proposals_payee_invoice
    ON proposals (tenant_id, payee_id, invoice_id, created_at, id) WHERE invoice_id IS NOT NULL;

-- The history summary (any paid, the succeeded amounts) of a payee's last
-- 50 proposals: ordered by (created_at, id) and covering the columns it
-- sums, so no table row is read.
DROP INDEX proposals_payee_history;
CREATE INDEX proposals_payee_history
    ON proposals (tenant_id, payee_id, created_at, id, status, currency, amount_minor);
