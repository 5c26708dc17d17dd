-- The salts of a proposal's account commitments (issue 26, docs/EVIDENCE.md
-- "Commitments"): `field` is `source_account` or `destination`, `salt` 32
-- random bytes. A commitment is SHA-256(salt || account); the salt stays
-- here, never in the audit trail or the log, and is disclosed only in a
-- proof bundle exported with `disclose=`. Made once, at the first commit or
-- export, and never changed.
CREATE TABLE evidence_salts (
    proposal_id  TEXT NOT NULL,
    field        TEXT NOT NULL,
    salt         BLOB NOT NULL,
    PRIMARY KEY (proposal_id, field)
);
