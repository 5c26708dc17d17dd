//! What the durable outboxes share (Slack's `slack_outbox`, Teams'
//! `teams_outbox` and the `notifications` table): the same bookkeeping columns (`status`,
//! `attempts`, `next_attempt_at`, `last_error`, `created_at`,
//! `finished_at`), and the same three moves on them: claim the due rows for
//! this instance, end a row, schedule its next attempt.

use chrono::{DateTime, Utc};

use super::{query, ts, Exec, Pool, Result, Row};

/// A claimed row: when and under which id it was queued (claims come back
/// oldest first, as queued).
pub trait Queued {
    fn queued(&self) -> (DateTime<Utc>, &str);
}

/// An outbox table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Slack,
    Notifications,
    Teams,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Slack => "slack_outbox",
            Table::Notifications => "notifications",
            Table::Teams => "teams_outbox",
        }
    }
}

/// Claims up to `limit` rows of `table` due at `now` for this instance:
/// each is moved out of everyone's way until `lease_until` (its next
/// attempt, should this instance stop before finishing it) and returned
/// (`returning`: the columns to read), oldest first. Several
/// instances on one PostgreSQL database each get other rows (`FOR UPDATE
/// SKIP LOCKED`), so one row is handled once; on SQLite the one writer
/// serializes the claims anyway.
pub async fn claim<T: super::rows::Decoded + Queued>(
    pool: &Pool,
    table: Table,
    returning: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<T>> {
    let (name, skip_locked) = (table.name(), if pool.is_postgres() { " FOR UPDATE SKIP LOCKED" } else { "" });
    let sql = format!(
        "UPDATE {name} SET next_attempt_at = ?
         WHERE id IN (SELECT id FROM {name} WHERE status = 'pending' AND next_attempt_at <= ?
                      ORDER BY next_attempt_at, id LIMIT ?{skip_locked})
         RETURNING {returning}"
    );
    let rows = query(&sql).bind(ts(lease_until)).bind(ts(now)).bind(i64::from(limit)).fetch_all(pool).await?;
    let mut claimed = rows.iter().map(Row::decode).collect::<Result<Vec<T>>>()?;
    // RETURNING follows no ORDER BY.
    claimed.sort_by(|a, b| a.queued().cmp(&b.queued()));
    Ok(claimed)
}

/// Ends a pending row: `delivered`, or `abandoned` with why.
pub async fn finish<'e>(
    db: impl Into<Exec<'e>>,
    table: Table,
    id: &str,
    delivered: bool,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let sql = format!(
        "UPDATE {} SET status = ?, attempts = attempts + ?, last_error = COALESCE(?, last_error),
         finished_at = ? WHERE id = ? AND status = 'pending'",
        table.name()
    );
    query(&sql)
        .bind(if delivered { "delivered" } else { "abandoned" })
        .bind(i64::from(delivered))
        .bind(error)
        .bind(ts(now))
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Counts a failed attempt and sets the next one.
pub async fn retry_at<'e>(
    db: impl Into<Exec<'e>>,
    table: Table,
    id: &str,
    at: DateTime<Utc>,
    error: &str,
) -> Result<()> {
    let sql = format!(
        "UPDATE {} SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
         WHERE id = ? AND status = 'pending'",
        table.name()
    );
    query(&sql).bind(ts(at)).bind(error).bind(id).execute(db).await?;
    Ok(())
}
