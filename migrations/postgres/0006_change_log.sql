-- What changed, for the server's in-memory read caches (docs/ARCHITECTURE.md
-- "Read caches"): PostgreSQL twin of ../0006_change_log.sql.
--
-- Triggers write a row in the same transaction as the change itself, so no
-- writer can forget: the server, the CLI and a hand-run psql alike. The
-- triggers have the same names, tables and events as on SQLite and write the
-- same rows; their bodies are PL/pgSQL functions. Each row is also announced
-- with NOTIFY on the channel `countersign_changes` (payload: the row as JSON,
-- {"seq", "kind", "proposal_id"}), delivered when the transaction commits, so
-- several server instances can hear each other's changes without polling.
--
-- A new proposal needs no row: nothing is cached about an id before it exists.

CREATE TABLE change_log (
    -- An identity, never reused even after pruning empties the table (as
    -- SQLite's AUTOINCREMENT). Unlike SQLite's, numbers are taken when a row
    -- is inserted, not when its transaction commits: with concurrent writers
    -- a smaller number can become visible after a larger one.
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- proposal: that proposal's view; agents: every cached credential;
    -- payees: every cached view (a view shows its payee's trust)
    kind         TEXT NOT NULL,
    proposal_id  TEXT,
    -- the same text as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    at           TEXT NOT NULL
                 DEFAULT (to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
CREATE INDEX change_log_age ON change_log (at);

-- Appends one entry and announces it.
CREATE FUNCTION change_log_append(change_kind TEXT, change_proposal_id TEXT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    new_seq BIGINT;
BEGIN
    INSERT INTO change_log (kind, proposal_id) VALUES (change_kind, change_proposal_id)
        RETURNING seq INTO new_seq;
    PERFORM pg_notify('countersign_changes',
        json_build_object('seq', new_seq, 'kind', change_kind, 'proposal_id', change_proposal_id)::text);
END
$$;

-- A proposal row changed: its own id.
CREATE FUNCTION change_log_proposal() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM change_log_append('proposal', OLD.id);
    ELSE
        PERFORM change_log_append('proposal', NEW.id);
    END IF;
    RETURN NULL;
END
$$;

-- A row that belongs to a proposal (approval, token, operation) changed.
CREATE FUNCTION change_log_proposal_part() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM change_log_append('proposal', OLD.proposal_id);
    ELSE
        PERFORM change_log_append('proposal', NEW.proposal_id);
    END IF;
    RETURN NULL;
END
$$;

-- A registry row changed: the kind given as the trigger's argument.
CREATE FUNCTION change_log_registry() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM change_log_append(TG_ARGV[0], NULL);
    RETURN NULL;
END
$$;

CREATE TRIGGER change_log_proposal_update AFTER UPDATE ON proposals
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal();
CREATE TRIGGER change_log_proposal_delete AFTER DELETE ON proposals
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal();

CREATE TRIGGER change_log_approval_insert AFTER INSERT ON approvals
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();
CREATE TRIGGER change_log_approval_update AFTER UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();
CREATE TRIGGER change_log_approval_delete AFTER DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();

CREATE TRIGGER change_log_token_insert AFTER INSERT ON approval_tokens
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();
CREATE TRIGGER change_log_token_update AFTER UPDATE ON approval_tokens
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();

CREATE TRIGGER change_log_operation_insert AFTER INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();
CREATE TRIGGER change_log_operation_update AFTER UPDATE ON operations
    FOR EACH ROW EXECUTE FUNCTION change_log_proposal_part();

CREATE TRIGGER change_log_agent_insert AFTER INSERT ON agents
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('agents');
CREATE TRIGGER change_log_agent_update AFTER UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('agents');
CREATE TRIGGER change_log_agent_delete AFTER DELETE ON agents
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('agents');

CREATE TRIGGER change_log_payee_update AFTER UPDATE ON payees
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('payees');
CREATE TRIGGER change_log_payee_insert AFTER INSERT ON payees
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('payees');
CREATE TRIGGER change_log_payee_delete AFTER DELETE ON payees
    FOR EACH ROW EXECUTE FUNCTION change_log_registry('payees');
