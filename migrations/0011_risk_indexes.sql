-- Risk signals for a page of proposals (server/src/store/risk.rs) read each
-- row's history and duplicate invoices from an index alone.
--
-- The invoice id gets a column of its own, written at intake: indexing the
-- JSON expression (migration 0010) parsed every new proposal's canonical
-- request once more inside the write transaction. Copying it into existing
-- rows must not look like a change to each of them, so the change-log
-- trigger (migration 0006) is set aside while it runs and put back as it was.
ALTER TABLE proposals ADD COLUMN invoice_id TEXT;
DROP TRIGGER change_log_proposal_update;
UPDATE proposals SET invoice_id = json_extract(canonical_request, '$.invoice_id')
    WHERE json_extract(canonical_request, '$.invoice_id') IS NOT NULL;
CREATE TRIGGER change_log_proposal_update AFTER UPDATE ON proposals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.id);
END;

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
