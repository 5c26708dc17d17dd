//! What `human_loop` measures, read from the history: people's decisions,
//! expiries, and the first notice of each proposal on each channel.

use chrono::{DateTime, Utc};

use super::{query, ts, Pool, Result, Row, Timestamp};

/// A person's decision and when its proposal was created.
#[derive(Debug, sqlx::FromRow)]
pub struct Decided {
    /// `console`, `slack`, … (never `policy`).
    pub via: String,
    /// `approve` or `reject`.
    pub decision: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

/// The first notice of a proposal on one channel.
#[derive(Debug, sqlx::FromRow)]
pub struct Noticed {
    pub channel: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

/// People's decisions (not policy's) on the tenant's proposals and batches since `since`.
pub async fn decisions_since(pool: &Pool, tenant: &str, since: DateTime<Utc>) -> Result<Vec<Decided>> {
    // A batch is decided once, by its approvers; its lines' approvals are
    // that decision copied onto each line's proposal at commit (`via:
    // batch`), not decisions of their own.
    let rows = query(
        "SELECT a.via, a.decision, a.at, p.created_at
         FROM approvals a JOIN proposals p ON p.id = a.proposal_id
         WHERE p.tenant_id = ? AND a.at >= ? AND a.via NOT IN ('policy', 'batch')
         UNION ALL
         SELECT a.via, a.decision, a.at, b.created_at
         FROM batch_approvals a JOIN batches b ON b.id = a.batch_id
         WHERE b.tenant_id = ? AND a.at >= ?",
    )
    .bind(tenant)
    .bind(ts(since))
    .bind(tenant)
    .bind(ts(since))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// When the tenant's proposals that expired undecided since `since` expired.
pub async fn expiries_since(pool: &Pool, tenant: &str, since: DateTime<Utc>) -> Result<Vec<DateTime<Utc>>> {
    #[derive(sqlx::FromRow)]
    struct At {
        #[sqlx(try_from = "Timestamp")]
        updated_at: DateTime<Utc>,
    }
    let rows = query("SELECT updated_at FROM proposals WHERE tenant_id = ? AND status = 'expired' AND updated_at >= ?")
        .bind(tenant)
        .bind(ts(since))
        .fetch_all(pool)
        .await?;
    rows.iter().map(|r| r.decode::<At>().map(|a| a.updated_at)).collect()
}

/// When the tenant's proposals escalated since `since` were escalated.
pub async fn escalations_since(pool: &Pool, tenant: &str, since: DateTime<Utc>) -> Result<Vec<DateTime<Utc>>> {
    #[derive(sqlx::FromRow)]
    struct At {
        #[sqlx(try_from = "Timestamp")]
        escalated_at: DateTime<Utc>,
    }
    let rows = query("SELECT escalated_at FROM escalations WHERE tenant_id = ? AND escalated_at >= ?")
        .bind(tenant)
        .bind(ts(since))
        .fetch_all(pool)
        .await?;
    rows.iter().map(|r| r.decode::<At>().map(|a| a.escalated_at)).collect()
}

/// Each proposal's first notice delivered on each channel (email and push
/// from the notifications outbox, the channel message from Slack's), for
/// proposals created since `since`.
pub async fn first_notices_since(pool: &Pool, tenant: &str, since: DateTime<Utc>) -> Result<Vec<Noticed>> {
    let rows = query(
        "SELECT n.channel AS channel, MIN(n.finished_at) AS at, p.created_at AS created_at
         FROM notifications n JOIN proposals p ON p.id = n.proposal_id
         WHERE n.tenant_id = ? AND p.created_at >= ? AND n.kind = 'arrived' AND n.status = 'delivered'
               AND n.channel <> 'fanout'
         GROUP BY n.proposal_id, n.channel, p.created_at
         UNION ALL
         SELECT 'slack' AS channel, MIN(s.finished_at) AS at, p.created_at AS created_at
         FROM slack_outbox s JOIN proposals p ON p.id = s.proposal_id
         WHERE s.tenant_id = ? AND p.created_at >= ? AND s.target = 'webhook' AND s.status = 'delivered'
         GROUP BY s.proposal_id, p.created_at",
    )
    .bind(tenant)
    .bind(ts(since))
    .bind(tenant)
    .bind(ts(since))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}
