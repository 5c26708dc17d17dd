//! A write transaction's statements as one command to SQLite's writer
//! thread (docs/DECISIONS.md, "The commit's writes in one command on
//! SQLite").
//!
//! sqlx runs each SQLite connection on a thread of its own, and every
//! statement is a round trip to it: on this project's 2-core machines
//! 70–220 µs each, more than most statements take. A query text of several
//! statements goes to the thread as one command, its `?` bound in order
//! across them, so a transaction whose values are all known before it opens
//! can run as three round trips (`BEGIN`, the command, `COMMIT`).
//!
//! What such a transaction checks between its writes (the token unused,
//! the budget left, the status still the one read) becomes a **guard**: a
//! row into a temporary table whose `CHECK` refuses a false value, so the
//! first guard that does not hold stops the command there with the
//! constraint's error. [`Guarded::run`] answers `None` for it; the caller
//! rolls the transaction back and does the work step by step, where each
//! check has its own answer. The command never decides a refusal itself.

use super::{Builder, Conn, Result, Row};

/// The name of the guards' constraint, in the error a failed guard raises.
const GUARD: &str = "commit_guard";

/// Statements to run as one command on SQLite, with guards between them.
pub struct Guarded<'q> {
    q: Builder<'q>,
}

impl<'q> Guarded<'q> {
    pub fn new() -> Self {
        // The table lives as long as the connection; its rows only as long as
        // the command (emptied first: a command stopped by a guard leaves its
        // rows to the rollback, one that commits leaves them here).
        Guarded {
            q: Builder::new(format!(
                "CREATE TEMP TABLE IF NOT EXISTS {GUARD} (step TEXT NOT NULL, ok INTEGER NOT NULL, \
                 CONSTRAINT {GUARD} CHECK (ok = 1));\nDELETE FROM temp.{GUARD};\n"
            )),
        }
    }

    /// One statement, written by `write` without its `;`.
    pub fn statement(&mut self, write: impl FnOnce(&mut Builder<'q>)) -> &mut Self {
        write(&mut self.q);
        self.q.push(";\n");
        self
    }

    /// A guard: the value `write` writes (an expression) must be 1.
    pub fn guard(&mut self, step: &'static str, write: impl FnOnce(&mut Builder<'q>)) -> &mut Self {
        debug_assert!(!step.contains('\''), "a step's name is written into the text");
        self.q.push(format!("INSERT INTO temp.{GUARD} (step, ok) SELECT '{step}', "));
        self.statement(write)
    }

    /// A guard: the statement just before changed exactly one row.
    pub fn changed_one(&mut self, step: &'static str) -> &mut Self {
        self.guard(step, |q| {
            q.push("changes() = 1");
        })
    }

    /// Runs the statements on `tx` (an open SQLite transaction): the rows
    /// they return, or `None` when a guard did not hold (the statements
    /// before it took effect: roll the transaction back).
    pub async fn run(self, tx: &mut Conn) -> Result<Option<Vec<Row>>> {
        debug_assert!(!tx.is_postgres(), "one command of several statements is SQLite's");
        match self.q.build().fetch_all(&mut *tx).await {
            Ok(rows) => Ok(Some(rows)),
            Err(sqlx::Error::Database(e)) if e.message().contains(GUARD) => {
                tracing::debug!(guard = %e.message(), "a guard did not hold");
                Ok(None)
            }
            Err(e) => Err(e.into()),
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

    /// Rows of a scratch table, in order.
    async fn seen(tx: &mut Conn) -> Vec<(i64, String)> {
        query("SELECT n, label FROM temp.scratch ORDER BY n")
            .fetch_all(&mut *tx)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.try_int("n").unwrap().unwrap(), r.try_get("label").unwrap()))
            .collect()
    }

    #[tokio::test]
    async fn values_bind_in_order_across_statements_and_the_first_failed_guard_stops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).await.unwrap();
        let mut tx = db.begin().await.unwrap();
        query("CREATE TEMP TABLE scratch (n INTEGER PRIMARY KEY, label TEXT NOT NULL)")
            .execute(&mut *tx)
            .await
            .unwrap();
        let written = |g: &mut Guarded<'static>, n: i64, label: &'static str| {
            g.statement(|q| {
                q.push("INSERT INTO temp.scratch (n, label) VALUES (").push_bind(n).push(", ").push_bind(label);
                q.push(")");
            });
        };

        // Every guard holds: each statement got its own values, the rows
        // come back, and the guards' rows say what was checked.
        let mut g = Guarded::new();
        written(&mut g, 1, "one");
        g.changed_one("the first went in");
        written(&mut g, 2, "two");
        g.guard("two rows", |q| {
            q.push("(SELECT count(*) FROM temp.scratch) = ").push_bind(2i64);
        });
        g.statement(|q| {
            q.push("SELECT label FROM temp.scratch WHERE n = ").push_bind(2i64);
        });
        let rows = g.run(&mut tx).await.unwrap().expect("every guard held");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].try_get::<String>("label").unwrap(), "two");
        assert_eq!(seen(&mut tx).await, [(1, "one".to_owned()), (2, "two".to_owned())]);

        // A guard that fails: what came before it stands until the rollback,
        // nothing after it ran.
        let mut g = Guarded::new();
        written(&mut g, 3, "three");
        g.statement(|q| {
            q.push("UPDATE temp.scratch SET label = 'x' WHERE n = ").push_bind(99i64);
        });
        g.changed_one("no row 99: fails");
        written(&mut g, 4, "four");
        assert!(g.run(&mut tx).await.unwrap().is_none(), "a failed guard is None, not an error");
        let rows = seen(&mut tx).await;
        assert_eq!(rows.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 3], "4 never ran");

        // An error that is not a guard's stays an error.
        let mut g = Guarded::new();
        written(&mut g, 1, "again");
        assert!(g.run(&mut tx).await.is_err(), "a duplicate key is the database's error");
        tx.rollback().await.unwrap();
    }
}
