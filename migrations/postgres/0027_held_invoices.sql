-- One invoice is paid once, enforced by the database (docs/DECISIONS.md
-- "The operation that pays an invoice holds it").
--
-- A transfer that names an invoice holds it from the commit's transaction
-- on: its operation row carries the payee and the invoice id, and the unique
-- index below lets one operation of a tenant hold them. A second copy's
-- commit finds the invoice held (or, racing, is stopped by the index) and is
-- refused before the rail is called. A failed operation (the money did not
-- move) lets go: the columns are set to NULL with its status. A copy that
-- its approvers confirmed as not a duplicate holds nothing.
ALTER TABLE operations ADD COLUMN held_payee_id TEXT;
ALTER TABLE operations ADD COLUMN held_invoice_id TEXT;

-- Operations recorded before: the oldest one of each invoice that did not
-- fail holds it (later copies, if any were paid, hold nothing).
UPDATE operations
   SET held_payee_id = (SELECT p.payee_id FROM proposals p WHERE p.id = operations.proposal_id),
       held_invoice_id = (SELECT p.invoice_id FROM proposals p WHERE p.id = operations.proposal_id)
 WHERE kind = 'transfer' AND status <> 'failed'
   AND id = (SELECT MIN(o2.id) FROM operations o2
               JOIN proposals p2 ON p2.id = o2.proposal_id
               JOIN proposals p1 ON p1.id = operations.proposal_id
              WHERE o2.kind = 'transfer' AND o2.status <> 'failed'
                AND p2.tenant_id = p1.tenant_id AND p2.payee_id = p1.payee_id
                AND p1.invoice_id IS NOT NULL AND p2.invoice_id = p1.invoice_id);

CREATE UNIQUE INDEX operations_held_invoice ON operations (tenant_id, held_payee_id, held_invoice_id)
    WHERE held_invoice_id IS NOT NULL;
