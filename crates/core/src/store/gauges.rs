//! What `GET /metrics` reads from the database at each scrape
//! (`crate::platform::metrics::record_gauges`): the whole deployment's backlog, the
//! same on every instance.

use chrono::{DateTime, Utc};

use super::{parse_ts, scalar, ts, Pool, Result};

/// The database's side of the business metrics, at `now`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gauges {
    pub unknown: i64,
    pub needs_review: i64,
    pub slack_backlog: i64,
    pub slack_oldest: Option<DateTime<Utc>>,
    pub webhook_backlog: i64,
    pub webhook_oldest: Option<DateTime<Utc>>,
    /// When the oldest operation reconciliation has not settled yet
    /// (pending, accepted, unknown) was recorded.
    pub oldest_unsettled: Option<DateTime<Utc>>,
    pub tokens_expired_unused: i64,
}

pub async fn read(pool: &Pool, now: DateTime<Utc>) -> Result<Gauges> {
    let count = |sql: &'static str| async move { scalar::<i64>(sql).fetch_one(pool).await };
    let oldest = |sql: &'static str| async move {
        let at: Option<String> = scalar(sql).fetch_one(pool).await?;
        Ok::<_, sqlx::Error>(at.as_deref().and_then(parse_ts))
    };
    let now_ts = ts(now);
    // Each agent webhook's proposals changed after its cursor: its events
    // not delivered yet.
    const WEBHOOK_PENDING: &str = "FROM agent_webhooks w JOIN proposals p
           ON p.tenant_id = w.tenant_id AND p.agent_id = w.agent_id
          AND (p.updated_at > w.cursor_at OR (p.updated_at = w.cursor_at AND p.id > w.cursor_id))";
    Ok(Gauges {
        unknown: count("SELECT COUNT(*) FROM operations WHERE status = 'unknown'").await?,
        needs_review: count("SELECT COUNT(*) FROM operations WHERE status = 'needs_review'").await?,
        slack_backlog: count("SELECT COUNT(*) FROM slack_outbox WHERE status = 'pending'").await?,
        slack_oldest: oldest("SELECT MIN(created_at) FROM slack_outbox WHERE status = 'pending'").await?,
        webhook_backlog: scalar::<i64>(format!("SELECT COUNT(*) {WEBHOOK_PENDING}")).fetch_one(pool).await?,
        webhook_oldest: {
            let at: Option<String> =
                scalar(format!("SELECT MIN(p.updated_at) {WEBHOOK_PENDING}")).fetch_one(pool).await?;
            at.as_deref().and_then(parse_ts)
        },
        oldest_unsettled: oldest(
            "SELECT MIN(created_at) FROM operations WHERE status IN ('pending', 'accepted', 'unknown')",
        )
        .await?,
        tokens_expired_unused: scalar("SELECT COUNT(*) FROM approval_tokens WHERE used_at IS NULL AND expires_at < ?")
            .bind(&now_ts)
            .fetch_one(pool)
            .await?,
    })
}
