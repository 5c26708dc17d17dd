-- Rails besides the default one (docs/DEPLOY.md, "Choosing a tenant's
-- rail"). An operation records the rail it was submitted to, and is
-- reconciled on that rail whatever its tenant uses later; NULL is the
-- default rail (`[rail]`).
ALTER TABLE operations ADD COLUMN rail TEXT;

-- The bank-file rail's ledger (crates/core/src/rail/iso20022): one row per
-- payment handed to the bank channel, keyed by the rail and the operation's
-- idempotency key, so the same order given twice is one payment. Its
-- end-to-end id (the operation id) is what the bank's documents name.
-- `status`: queued (not yet in a file), sent (in batch `batch_id`'s file),
-- accepted (a status report accepted it), booked (a statement booked it
-- for the amount sent), rejected (a status report rejected it:
-- `reason_code`), mismatch (a statement booked another amount:
-- `booked_*`). No account number is kept here: the payee's bank details
-- stay in the rail's beneficiaries file.
CREATE TABLE bank_payments (
    rail                TEXT NOT NULL,
    idempotency_key     TEXT NOT NULL,
    end_to_end_id       TEXT NOT NULL,
    tenant_id           TEXT NOT NULL,
    amount_minor        INTEGER NOT NULL,
    currency            TEXT NOT NULL,
    destination         TEXT NOT NULL,
    reference           TEXT NOT NULL,
    status              TEXT NOT NULL,
    batch_id            TEXT,
    reason_code         TEXT,
    booked_amount_minor INTEGER,
    booked_currency     TEXT,
    document_id         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    PRIMARY KEY (rail, idempotency_key)
);
CREATE UNIQUE INDEX bank_payments_end_to_end ON bank_payments (rail, end_to_end_id);
CREATE INDEX bank_payments_batch ON bank_payments (rail, batch_id);
CREATE INDEX bank_payments_created ON bank_payments (rail, created_at);

-- One file written to the outbox: its payments carry its id. `written_at`
-- is NULL until the file is in place (a batch assigned and not written is
-- written again, byte for byte, by the next pass).
CREATE TABLE bank_batches (
    id         TEXT PRIMARY KEY,
    rail       TEXT NOT NULL,
    file_name  TEXT NOT NULL,
    payments   INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    written_at TEXT,
    sha256     TEXT
);
CREATE INDEX bank_batches_unwritten ON bank_batches (rail, written_at);

-- Every document read from the inbox, once per file name: what it was,
-- what it did, and what was wrong with it (`problems`, JSON: code,
-- end-to-end id, message) — shown on the console's operations page and
-- recorded in the audit trail. `status`: applied, duplicate (the same
-- content or message id seen before: nothing applied), refused (not a
-- document this rail reads).
CREATE TABLE bank_documents (
    id          TEXT PRIMARY KEY,
    rail        TEXT NOT NULL,
    tenant_id   TEXT,
    file_name   TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    message_id  TEXT,
    status      TEXT NOT NULL,
    problems    TEXT NOT NULL,
    entries     INTEGER NOT NULL,
    received_at TEXT NOT NULL
);
CREATE UNIQUE INDEX bank_documents_file ON bank_documents (rail, file_name);
CREATE INDEX bank_documents_sha ON bank_documents (rail, sha256);
CREATE INDEX bank_documents_tenant ON bank_documents (tenant_id, received_at);
