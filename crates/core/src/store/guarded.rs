//! A write transaction as one command to SQLite's writer thread,
//! `BEGIN IMMEDIATE` to `COMMIT` (docs/DECISIONS.md, "The commit's writes
//! in one command on SQLite").
//!
//! sqlx runs each SQLite connection on a thread of its own, and every
//! statement is a round trip to it: on this project's 2-core machines
//! 70–220 µs each, more than most statements take. A query text of several
//! statements goes to the thread as one command, its `?` bound in order
//! across them, so a transaction whose values are all known before it opens
//! is one round trip, its `BEGIN` and its `COMMIT` included.
//!
//! What such a transaction checks between its writes (the token unused,
//! the budget left, the status still the one read) becomes a **guard**: a
//! row into a temporary table whose `CHECK` refuses a false value, inserted
//! `OR ROLLBACK`, so the first guard that does not hold stops the command
//! there and rolls the whole transaction back. [`Guarded::commit`] answers
//! `None` for it; the caller does the work step by step, where each check
//! has its own answer. The command never decides a refusal itself.
//!
//! A command that appends to the audit chain does it last
//! ([`Guarded::append_last`]): the entry is linked to the chain's head as
//! this process knows it once the writer's connection is held, when no
//! other write of this process can move the head before the command runs.
//! Linked when the command was planned, any write of the process in
//! between (reconciliation's, the intake's, the log's) made its guard fail
//! and its caller redo the transaction step by step — a commit in fifty
//! that way under reconciliation (docs/BENCHMARKS.md, "Commit latency").
//!
//! sqlx's connection thread stops running a command's statements as soon
//! as nobody reads its answer. A command that opens its own transaction
//! must therefore not be dropped half-way (a client that goes away drops
//! its handler): it runs in a task of its own, which reads it to the end
//! and rolls back whatever error left the transaction open, before the
//! writer's connection goes back to its pool.

use super::audit::{AuditEntry, Planned};
use super::{Builder, Conn, Pool, Result, Row, StoreError};
use tracing::Instrument;

/// The name of the guards' constraint, in the error a failed guard raises.
const GUARD: &str = "commit_guard";

/// Statements to run as one transaction in one command on SQLite, with
/// guards between them.
pub struct Guarded<'q> {
    q: Builder<'q>,
    /// Appended to the audit chain after every other statement.
    last: Option<&'q AuditEntry>,
}

/// What a command that ran to its `COMMIT` returned.
pub struct Committed {
    /// The rows its statements returned, in order.
    pub rows: Vec<Row>,
    /// The number of the entry [`Guarded::append_last`] appended.
    pub appended: Option<i64>,
}

impl<'q> Guarded<'q> {
    pub fn new() -> Self {
        // The table lives as long as the connection; its rows only as long as
        // the command (emptied first: a command stopped by a guard leaves its
        // rows to the rollback, one that commits leaves them here).
        Guarded {
            q: Builder::new(format!(
                "BEGIN IMMEDIATE;\nCREATE TEMP TABLE IF NOT EXISTS {GUARD} (step TEXT NOT NULL, ok INTEGER NOT NULL, \
                 CONSTRAINT {GUARD} CHECK (ok = 1));\nDELETE FROM temp.{GUARD};\n"
            )),
            last: None,
        }
    }

    /// Appends `entry` to the audit chain as the command's last statement,
    /// guarded by the chain's head (see the module's doc). The command does
    /// not run when this process knows no head yet.
    pub fn append_last(&mut self, entry: &'q AuditEntry) -> &mut Self {
        self.last = Some(entry);
        self
    }

    /// One statement, written by `write` without its `;`.
    pub fn statement(&mut self, write: impl FnOnce(&mut Builder<'q>)) -> &mut Self {
        write(&mut self.q);
        self.q.push(";\n");
        self
    }

    /// A guard: the value `write` writes (an expression) must be 1, or the
    /// transaction is rolled back and the command stops here.
    pub fn guard(&mut self, step: &'static str, write: impl FnOnce(&mut Builder<'q>)) -> &mut Self {
        debug_assert!(!step.contains('\''), "a step's name is written into the text");
        self.q.push(format!("INSERT OR ROLLBACK INTO temp.{GUARD} (step, ok) SELECT '{step}', "));
        self.statement(write)
    }

    /// A guard: the statement just before changed exactly one row.
    pub fn changed_one(&mut self, step: &'static str) -> &mut Self {
        self.guard(step, |q| {
            q.push("changes() = 1");
        })
    }

    /// Runs the statements and commits them, as one command on `writer`
    /// (SQLite's writer pool): the rows they return, or `None` when a guard
    /// did not hold (nothing they wrote stands) or the entry to append last
    /// could not be linked (this process knows no head of the chain:
    /// nothing ran). The command runs to its end even if the caller stops
    /// waiting (see the module's doc).
    pub async fn commit(mut self, writer: &Pool) -> Result<Option<Committed>> {
        let Pool::Sqlite(pool) = writer else {
            return Err(StoreError::Database(sqlx::Error::Configuration(
                "one command of several statements is SQLite's writer's".into(),
            )));
        };
        // Held from here, the head cannot move under this process's own
        // writes. Nothing awaits between here and the task that runs the
        // command: a caller that stops waiting before it only gives the
        // connection back.
        let conn = pool.acquire().await?;
        let planned = match self.last {
            Some(entry) => {
                let mut planned = None;
                self.statement(|q| planned = Planned::push(q, entry));
                let Some(planned) = planned else { return Ok(None) };
                self.changed_one("the chain head as remembered");
                Some(planned)
            }
            None => None,
        };
        let mut q = self.q;
        q.push("COMMIT;\n");
        let command = q.build().into_owned();
        // In the caller's span: its statements belong to the caller's trace.
        let ran = tokio::spawn(
            async move {
                let mut conn = Conn::Sqlite(conn);
                match command.fetch_all(&mut conn).await {
                    Ok(rows) => {
                        // Remembered before the writer's connection goes
                        // back: the next command links to this entry.
                        if let Some(planned) = &planned {
                            planned.inserted();
                        }
                        Ok(Committed { rows, appended: planned.as_ref().map(Planned::seq) })
                    }
                    Err(e) => {
                        rolled_back(conn).await;
                        Err(e)
                    }
                }
            }
            .instrument(tracing::Span::current()),
        )
        .await;
        match ran {
            Ok(Ok(committed)) => Ok(Some(committed)),
            Ok(Err(sqlx::Error::Database(e))) if e.message().contains(GUARD) => {
                tracing::debug!(guard = %e.message(), "a guard did not hold");
                Ok(None)
            }
            Ok(Err(e)) => Err(e.into()),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Only when the runtime shuts down, which ends the process.
            Err(_) => Err(StoreError::Unavailable(sqlx::Error::PoolClosed)),
        }
    }
}

/// Ends whatever transaction a command that failed left open (a guard's
/// `OR ROLLBACK` has ended it already; a statement's own error has not). A
/// connection that cannot roll back is closed rather than reused.
async fn rolled_back(mut conn: Conn) {
    match super::query("ROLLBACK").execute(&mut conn).await {
        Ok(_) => {}
        Err(sqlx::Error::Database(e)) if e.message().contains("no transaction is active") => {}
        Err(e) => {
            tracing::error!(error = %e, "a failed command's transaction could not be rolled back; closing the writer's connection");
            if let Conn::Sqlite(c) = conn {
                c.close().await.ok();
            }
        }
    }
}

impl Default for Guarded<'_> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{query, Db};
    use std::time::Duration;

    /// The scratch table's rows, in order, as another connection sees them
    /// (committed only).
    async fn seen(db: &Db) -> Vec<(i64, String)> {
        query("SELECT n, label FROM scratch ORDER BY n")
            .fetch_all(&db.read)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.try_int("n").unwrap().unwrap(), r.try_get("label").unwrap()))
            .collect()
    }

    async fn scratch() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).await.unwrap();
        query("CREATE TABLE scratch (n INTEGER PRIMARY KEY, label TEXT NOT NULL)").execute(&db.write).await.unwrap();
        (dir, db)
    }

    fn written(g: &mut Guarded<'static>, n: i64, label: &'static str) {
        g.statement(|q| {
            q.push("INSERT INTO scratch (n, label) VALUES (").push_bind(n).push(", ").push_bind(label);
            q.push(")");
        });
    }

    /// The writer is outside any transaction: a usual one opens and commits.
    async fn writes_on(db: &Db, n: i64) {
        let mut tx = db.begin().await.expect("the writer is outside any transaction");
        query("INSERT INTO scratch (n, label) VALUES (?, 'usual')").bind(n).execute(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
    }

    #[tokio::test]
    async fn values_bind_in_order_across_statements_and_the_first_failed_guard_rolls_all_back() {
        let (_dir, db) = scratch().await;

        // Every guard holds: each statement got its own values, the rows
        // come back, and it is committed (another connection sees it).
        let mut g = Guarded::new();
        written(&mut g, 1, "one");
        g.changed_one("the first went in");
        written(&mut g, 2, "two");
        g.guard("two rows", |q| {
            q.push("(SELECT count(*) FROM scratch) = ").push_bind(2i64);
        });
        g.statement(|q| {
            q.push("SELECT label FROM scratch WHERE n = ").push_bind(2i64);
        });
        let rows = g.commit(&db.write).await.unwrap().expect("every guard held").rows;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].try_get::<String>("label").unwrap(), "two");
        assert_eq!(seen(&db).await, [(1, "one".to_owned()), (2, "two".to_owned())]);

        // A guard that fails: nothing after it ran, and what came before it
        // was rolled back with the rest.
        let mut g = Guarded::new();
        written(&mut g, 3, "three");
        g.statement(|q| {
            q.push("UPDATE scratch SET label = 'x' WHERE n = ").push_bind(99i64);
        });
        g.changed_one("no row 99: fails");
        written(&mut g, 4, "four");
        assert!(g.commit(&db.write).await.unwrap().is_none(), "a failed guard is None, not an error");
        assert_eq!(seen(&db).await.len(), 2, "3 rolled back, 4 never ran");
        writes_on(&db, 5).await;

        // An error that is not a guard's stays an error, and is rolled back
        // too (the statement's own error leaves the transaction open).
        let mut g = Guarded::new();
        written(&mut g, 6, "six");
        written(&mut g, 1, "again");
        assert!(g.commit(&db.write).await.is_err(), "a duplicate key is the database's error");
        assert_eq!(seen(&db).await.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 5], "6 rolled back");
        writes_on(&db, 7).await;
    }

    fn entry(action: &str) -> AuditEntry {
        AuditEntry {
            tenant_id: None,
            actor: "cli".into(),
            action: action.into(),
            proposal_id: None,
            request_hash: None,
            data: serde_json::json!({}),
        }
    }

    #[tokio::test]
    async fn the_entry_appended_last_links_to_the_head_when_the_command_runs_not_when_it_was_planned() {
        use crate::store::audit::{self, Verification};
        let (_dir, db) = scratch().await;

        // This process knows no head yet: nothing runs.
        // (`written` builds commands of 'static values.)
        let late: &'static AuditEntry = Box::leak(Box::new(entry("planned first")));
        let mut g = Guarded::new();
        written(&mut g, 1, "not yet");
        g.append_last(late);
        assert!(g.commit(&db.write).await.unwrap().is_none(), "no head known: nothing ran");
        assert_eq!(seen(&db).await, [], "its other statements did not run either");

        // Planned, then another write of this process moves the head (as
        // reconciliation's or the intake's do between a commit's planning
        // and its turn on the writer): the command still holds.
        audit::append_alone(&db.write, &entry("first")).await.unwrap();
        let mut g = Guarded::new();
        written(&mut g, 1, "with the entry");
        g.append_last(late);
        audit::append_alone(&db.write, &entry("in between")).await.unwrap();
        let committed = g.commit(&db.write).await.unwrap().expect("linked to the head as it was when the command ran");
        assert_eq!(committed.appended, Some(3));
        assert_eq!(seen(&db).await, [(1, "with the entry".to_owned())]);

        // The next append links after it without reading the head again, and
        // the chain is whole.
        audit::append_alone(&db.write, &entry("after")).await.unwrap();
        let actions: Vec<String> =
            crate::store::scalar("SELECT action FROM audit_log ORDER BY seq").fetch_all(&db.read).await.unwrap();
        assert_eq!(actions, ["first", "in between", "planned first", "after"]);
        assert_eq!(audit::verify(&db.read).await.unwrap(), Verification::Intact { entries: 4 });
    }

    #[tokio::test]
    async fn a_caller_that_stops_waiting_does_not_stop_the_transaction_half_way() {
        let (_dir, db) = scratch().await;
        let mut g = Guarded::new();
        written(&mut g, 1, "before");
        // A statement that answers with a row after the caller has gone: sqlx
        // stops a command whose answer nobody reads at its next row.
        g.statement(|q| {
            q.push("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c");
        });
        written(&mut g, 2, "after");
        let gave_up = tokio::time::timeout(Duration::from_millis(5), g.commit(&db.write)).await;
        assert!(gave_up.is_err(), "the slow statement outlasts the wait");

        // The command went on to its `COMMIT`; the writer (waited for) is
        // outside any transaction.
        writes_on(&db, 3).await;
        let rows = seen(&db).await;
        assert_eq!(rows.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
