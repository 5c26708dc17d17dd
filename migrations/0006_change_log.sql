-- What changed, for the server's in-memory read caches (status polls and
-- agent credentials, docs/ARCHITECTURE.md "Read caches").
--
-- Triggers write a row in the same transaction as the change itself, so no
-- writer can forget: the server's own handlers, the CLI (`reconcile`,
-- `apply`, `agent add`, `user link-slack`) and a hand-run sqlite3 alike. The
-- server follows the log and drops what it cached; its own handlers also
-- drop their entries directly, at once. Rows older than a few minutes are
-- pruned by the server.
--
-- A new proposal needs no row: nothing is cached about an id before it exists.

CREATE TABLE change_log (
    -- AUTOINCREMENT: a sequence number is never reused, even after pruning
    -- empties the table, so a follower's "seen up to" stays meaningful.
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    -- proposal: that proposal's view; agents: every cached credential;
    -- payees: every cached view (a view shows its payee's trust)
    kind         TEXT NOT NULL,
    proposal_id  TEXT,
    at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX change_log_age ON change_log (at);

CREATE TRIGGER change_log_proposal_update AFTER UPDATE ON proposals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.id);
END;
CREATE TRIGGER change_log_proposal_delete AFTER DELETE ON proposals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', OLD.id);
END;

CREATE TRIGGER change_log_approval_insert AFTER INSERT ON approvals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;
CREATE TRIGGER change_log_approval_update AFTER UPDATE ON approvals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;
CREATE TRIGGER change_log_approval_delete AFTER DELETE ON approvals BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', OLD.proposal_id);
END;

CREATE TRIGGER change_log_token_insert AFTER INSERT ON approval_tokens BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;
CREATE TRIGGER change_log_token_update AFTER UPDATE ON approval_tokens BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;

CREATE TRIGGER change_log_operation_insert AFTER INSERT ON operations BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;
CREATE TRIGGER change_log_operation_update AFTER UPDATE ON operations BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES ('proposal', NEW.proposal_id);
END;

CREATE TRIGGER change_log_agent_insert AFTER INSERT ON agents BEGIN
    INSERT INTO change_log (kind) VALUES ('agents');
END;
CREATE TRIGGER change_log_agent_update AFTER UPDATE ON agents BEGIN
    INSERT INTO change_log (kind) VALUES ('agents');
END;
CREATE TRIGGER change_log_agent_delete AFTER DELETE ON agents BEGIN
    INSERT INTO change_log (kind) VALUES ('agents');
END;

CREATE TRIGGER change_log_payee_update AFTER UPDATE ON payees BEGIN
    INSERT INTO change_log (kind) VALUES ('payees');
END;
CREATE TRIGGER change_log_payee_insert AFTER INSERT ON payees BEGIN
    INSERT INTO change_log (kind) VALUES ('payees');
END;
CREATE TRIGGER change_log_payee_delete AFTER DELETE ON payees BEGIN
    INSERT INTO change_log (kind) VALUES ('payees');
END;
