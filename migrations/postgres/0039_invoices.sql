-- The invoice registry (crates/core/src/payables, docs/POLICY.md "Invoices").
--
-- An invoice is owed by the tenant to one payee: its number is unique per
-- tenant and payee account (two vendors may both send an invoice 1001).
-- `vendor_name` and `payee_id` are what the invoice says it is owed to; a
-- proposal naming the invoice must be to that account, whose legal name must
-- be the vendor's. `status` is what the accounting export said (`open`,
-- `paid`, `void`); `paid_minor` is what was paid, before Countersign and
-- through it; `reserved_minor` is what payments in flight hold. The checks
-- make it impossible to pay more than an invoice's amount, whatever races:
-- a commit reserves its amount with one conditional UPDATE (the open
-- balance read in the same statement), a failed payment gives it back, a
-- settled one moves it from reserved to paid.
CREATE TABLE invoices (
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    payee_id        TEXT NOT NULL,
    number          TEXT NOT NULL,
    vendor_name     TEXT NOT NULL,
    amount_minor    BIGINT NOT NULL CHECK (amount_minor > 0),
    currency        TEXT NOT NULL,
    due_date        TEXT NOT NULL,               -- YYYY-MM-DD
    status          TEXT NOT NULL,               -- open | paid | void
    purpose         TEXT NOT NULL,               -- the purpose code a payment of it has
    paid_minor      BIGINT NOT NULL DEFAULT 0 CHECK (paid_minor >= 0),
    reserved_minor  BIGINT NOT NULL DEFAULT 0 CHECK (reserved_minor >= 0),
    -- Free text from outside (the accounting export): shown and returned as
    -- untrusted data, never as an instruction.
    note            TEXT,
    vendor_memo     TEXT,
    import_id       TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, payee_id, number),
    CHECK (paid_minor + reserved_minor <= amount_minor)
);
-- An invoice named by its number alone (a proposal to another payee).
CREATE INDEX invoices_number ON invoices (tenant_id, number);
-- The agents' search: open invoices by due date.
CREATE INDEX invoices_due ON invoices (tenant_id, status, due_date, number);

-- One import: who, when, and what the file held (its SHA-256, never its rows).
CREATE TABLE invoice_imports (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    imported_by TEXT NOT NULL,                   -- user:<id> or cli
    created     BIGINT NOT NULL,
    updated     BIGINT NOT NULL,
    unchanged   BIGINT NOT NULL,
    sha256      TEXT NOT NULL,
    at          TEXT NOT NULL
);

-- The registered invoice whose open balance an operation holds (its
-- amount_minor), from the commit's transaction until it fails (given back)
-- or succeeds (paid). NULL: none (no invoice, or one not in the registry).
ALTER TABLE operations ADD COLUMN invoice_payee_id TEXT;
ALTER TABLE operations ADD COLUMN invoice_number TEXT;
