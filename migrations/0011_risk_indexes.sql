-- Risk signals for a page of proposals (server/src/store/risk.rs) read each
-- row's history and duplicate invoices from the index alone.
--
-- The history summary (any paid, the succeeded amounts) of a payee's last 50
-- proposals: ordered by (created_at, id) and covering the columns it sums,
-- so no table row is read.
DROP INDEX proposals_payee_history;
CREATE INDEX proposals_payee_history
    ON proposals (tenant_id, payee_id, created_at, id, status, currency, amount_minor);

-- The same invoice, oldest first: the order comes from the index too, so a
-- payee with many proposals for one invoice is not sorted per question.
DROP INDEX proposals_payee_invoice;
CREATE INDEX proposals_payee_invoice
    ON proposals (tenant_id, payee_id, json_extract(canonical_request, '$.invoice_id'), created_at, id);
