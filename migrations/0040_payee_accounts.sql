-- A payee's bank account changes (docs/POLICY.md "Bank-account changes").
-- A payee's id is the account it is paid to, so a change of account is a
-- new payee that takes over from the old one, applied only once a second
-- person recorded the call-back that verified it (a registry change of kind
-- `payee_account`). The new payee keeps what it took over from (`replaces`),
-- when (`account_changed_at`) and the call-back (`account_call_back`, JSON:
-- who called, whom, at which number taken from where, what they said); the
-- old one names its successor (`replaced_by`) and is no longer paid.
ALTER TABLE payees ADD COLUMN replaces TEXT;
ALTER TABLE payees ADD COLUMN replaced_by TEXT;
ALTER TABLE payees ADD COLUMN account_changed_at TEXT;
ALTER TABLE payees ADD COLUMN account_call_back TEXT;
