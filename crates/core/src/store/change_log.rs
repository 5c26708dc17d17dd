//! The change log that triggers fill (migration 0006) and the server follows
//! to keep its read caches true (`crate::platform::changes::follow`).

use super::{query, scalar, Builder, Int, Pool, Result, Row};

/// What one logged change invalidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// One proposal's view (its row, approvals, token or operation changed).
    Proposal(String),
    /// Every cached agent credential.
    Agents,
    /// Every cached view: a view shows its payee's trust.
    Payees,
    /// A kind this build does not know: drop everything.
    Unknown,
}

/// The channel the PostgreSQL trigger notifies at each entry
/// (migrations/postgres/0006_change_log.sql).
const CHANNEL: &str = "countersign_changes";

/// On PostgreSQL, a connection listening for the log's notifications.
pub struct Listener(sqlx::postgres::PgListener);

impl Listener {
    /// A listener on its own connection of `pool`; `None` on SQLite, which
    /// has no notifications (the log is only read on a tick).
    pub async fn start(pool: &Pool) -> Result<Option<Listener>> {
        let Pool::Pg(pg) = pool else {
            return Ok(None);
        };
        let mut listener = sqlx::postgres::PgListener::connect_with(pg).await?;
        listener.listen(CHANNEL).await?;
        Ok(Some(Listener(listener)))
    }

    /// Waits until an entry is notified, or the connection was lost and made
    /// again (what was notified meanwhile is unknown: read the log either way).
    pub async fn changed(&mut self) -> Result<()> {
        self.0.try_recv().await?;
        Ok(())
    }
}

/// The newest sequence number, 0 when nothing was ever logged.
pub async fn latest(pool: &Pool) -> Result<i64> {
    Ok(scalar("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetch_one(pool).await?)
}

/// Up to `limit` changes after `seq`, oldest first, with their sequence numbers.
pub async fn since(pool: &Pool, seq: i64, limit: u32) -> Result<Vec<(i64, Change)>> {
    let rows = query("SELECT seq, kind, proposal_id FROM change_log WHERE seq > ? ORDER BY seq LIMIT ?")
        .bind(seq)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    read_changes(&rows)
}

/// The entries numbered `seqs` that are visible now (gaps a follower saw:
/// on PostgreSQL a number is taken at insert, so an entry can commit after
/// a larger one was read), by seq.
pub async fn these(pool: &Pool, seqs: &[i64]) -> Result<Vec<(i64, Change)>> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new("SELECT seq, kind, proposal_id FROM change_log WHERE seq IN (");
    q.push_list(seqs.iter().copied()).push(") ORDER BY seq");
    read_changes(&q.build().fetch_all(pool).await?)
}

/// A logged change as stored.
#[derive(sqlx::FromRow)]
struct Logged {
    #[sqlx(try_from = "Int")]
    seq: i64,
    kind: String,
    proposal_id: Option<String>,
}

fn read_changes(rows: &[Row]) -> Result<Vec<(i64, Change)>> {
    rows.iter()
        .map(|r| {
            let Logged { seq, kind, proposal_id } = r.decode()?;
            let change = match (kind.as_str(), proposal_id) {
                ("proposal", Some(id)) => Change::Proposal(id),
                ("agents", _) => Change::Agents,
                ("payees", _) => Change::Payees,
                _ => Change::Unknown,
            };
            Ok((seq, change))
        })
        .collect()
}

/// Drops entries older than `minutes` before `now`; returns how many.
pub async fn prune(pool: &Pool, now: chrono::DateTime<chrono::Utc>, minutes: u32) -> Result<u64> {
    let cutoff = super::ts(now - chrono::Duration::minutes(i64::from(minutes)));
    let done = query("DELETE FROM change_log WHERE at < ?").bind(cutoff).execute(pool).await?;
    Ok(done.rows_affected())
}
