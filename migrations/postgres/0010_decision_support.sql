-- Risk signals on every proposal (server/src/risk.rs, docs/CONFIG.md
-- `[risk]`): PostgreSQL twin of ../0010_decision_support.sql.
--
-- When a payee's legal name last changed (NULL: never since it was added):
-- "payee details changed in the last N days" reads it.
ALTER TABLE payees ADD COLUMN details_changed_at TEXT;

-- Duplicate invoices: the same payee and invoice id proposed before. The
-- invoice id lives in the canonical request (JSON text): SQLite's
-- json_extract(canonical_request, '$.invoice_id') is this expression here.
-- (Migration 0011 replaces it with a column.)
CREATE INDEX proposals_payee_invoice
    ON proposals (tenant_id, payee_id, ((canonical_request::jsonb) ->> 'invoice_id'));

-- A payee's history (first payment, usual amounts, recent payments).
CREATE INDEX proposals_payee_history ON proposals (tenant_id, payee_id, created_at);
