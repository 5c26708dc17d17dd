//! The Slack outbox (messages waiting to be delivered) and the replay guard
//! of inbound requests.

use chrono::{DateTime, Utc};

use super::outbox::{self, Table};
use super::{new_id, query, ts, Exec, Int, Known, Pool, Result, Timestamp};

/// Where a message goes; stored as its name in snake case (`webhook`,
/// `response_url`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Target {
    /// The tenant's incoming webhook (its URL lives in the settings).
    Webhook,
    /// An interaction's `response_url` (stored in the row).
    ResponseUrl,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Target> {
        s.parse().ok()
    }
}

#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    /// Both set for a webhook message; a reply may be about no proposal.
    pub tenant_id: Option<&'a str>,
    pub proposal_id: Option<&'a str>,
    pub target: Target,
    pub url: Option<&'a str>,
    pub body: &'a serde_json::Value,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxRow {
    pub id: String,
    pub tenant_id: Option<String>,
    pub proposal_id: Option<String>,
    #[sqlx(try_from = "Known<Target>")]
    pub target: Target,
    pub url: Option<String>,
    pub body: String,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

/// Queues a message, due at once. Call it inside the transaction that makes
/// the change the message announces.
pub async fn enqueue<'e>(db: impl Into<Exec<'e>>, m: &NewMessage<'_>, now: DateTime<Utc>) -> Result<String> {
    let id = new_id("msg", now);
    query(
        "INSERT INTO slack_outbox (id, tenant_id, proposal_id, target, url, body, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(m.tenant_id)
    .bind(m.proposal_id)
    .bind(m.target.as_str())
    .bind(m.url)
    .bind(m.body.to_string())
    .bind(ts(now))
    .bind(ts(now))
    .execute(db)
    .await?;
    Ok(id)
}

/// Claims up to `limit` messages due at `now` for this instance
/// ([`outbox::claim`]), oldest first.
pub async fn claim_due(
    pool: &Pool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<OutboxRow>> {
    outbox::claim(pool, Table::Slack, "*", now, lease_until, limit).await
}

impl outbox::Queued for OutboxRow {
    fn queued(&self) -> (DateTime<Utc>, &str) {
        (self.created_at, &self.id)
    }
}

/// Ends a pending message: `delivered` or `abandoned` (with why).
pub async fn finish<'e>(
    db: impl Into<Exec<'e>>,
    id: &str,
    delivered: bool,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    outbox::finish(db, Table::Slack, id, delivered, error, now).await
}

/// How many of a proposal's channel (webhook) messages were delivered.
pub async fn delivered_to_channel(pool: &Pool, proposal_id: &str) -> Result<i64> {
    Ok(super::scalar(
        "SELECT COUNT(*) FROM slack_outbox WHERE proposal_id = ? AND target = 'webhook' AND status = 'delivered'",
    )
    .bind(proposal_id)
    .fetch_one(pool)
    .await?)
}

/// Counts a failed attempt and sets the next one.
pub async fn retry_at<'e>(db: impl Into<Exec<'e>>, id: &str, at: DateTime<Utc>, error: &str) -> Result<()> {
    outbox::retry_at(db, Table::Slack, id, at, error).await
}

/// Remembers a verified request; false when it was seen before (a replay).
pub async fn first_sighting<'e>(db: impl Into<Exec<'e>>, key: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query("INSERT INTO slack_requests (id, seen_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(key)
        .bind(ts(now))
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Forgets requests seen before `cutoff` (their timestamps are out of the window by then).
pub async fn forget_requests_before<'e>(db: impl Into<Exec<'e>>, cutoff: DateTime<Utc>) -> Result<u64> {
    let done = query("DELETE FROM slack_requests WHERE seen_at < ?").bind(ts(cutoff)).execute(db).await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::Target;
    use strum::VariantArray;

    /// The stored names, every target's (each variant once), read back.
    #[test]
    fn every_target_has_its_stored_name() {
        let names: Vec<&str> = Target::VARIANTS.iter().map(|t| t.as_str()).collect();
        assert_eq!(names, ["webhook", "response_url"]);
        for t in Target::VARIANTS {
            assert_eq!(Target::parse(t.as_str()), Some(*t));
            assert_eq!(t.as_str().parse::<Target>(), Ok(*t), "FromStr, as the store reads it");
        }
        assert_eq!(Target::parse("Webhook"), None, "exact names only");
    }
}
