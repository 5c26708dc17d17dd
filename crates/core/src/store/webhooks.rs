//! Agent webhooks (`agent_webhooks`) and their delivery log
//! (`webhook_deliveries`), migration 0009; the redeliveries admins ask for
//! (`webhook_redeliveries`), migration 0012.

use chrono::{DateTime, Utc};

use super::{new_id, query, ts, Conn, Int, Json, Pool, Result, Row, Timestamp};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Webhook {
    pub tenant_id: String,
    pub agent_id: String,
    pub url: String,
    /// Newest first.
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub secrets: Vec<String>,
    #[sqlx(try_from = "Timestamp")]
    pub cursor_at: DateTime<Utc>,
    pub cursor_id: String,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub next_attempt_at: DateTime<Utc>,
}

/// Sets the agent's webhook URL and secrets; a new webhook starts with the
/// changes made from `now` on.
pub async fn set(
    conn: &mut Conn,
    tenant: &str,
    agent: &str,
    url: &str,
    secrets: &[String],
    now: DateTime<Utc>,
) -> Result<()> {
    let secrets = serde_json::to_string(secrets).expect("strings serialize");
    query(
        "INSERT INTO agent_webhooks (tenant_id, agent_id, url, secrets, cursor_at, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, agent_id) DO UPDATE SET url = excluded.url, secrets = excluded.secrets",
    )
    .bind(tenant)
    .bind(agent)
    .bind(url)
    .bind(&secrets)
    .bind(ts(now))
    .bind(ts(now))
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get(conn: &mut Conn, tenant: &str, agent: &str) -> Result<Option<Webhook>> {
    let row = query("SELECT * FROM agent_webhooks WHERE tenant_id = ? AND agent_id = ?")
        .bind(tenant)
        .bind(agent)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Removes the agent's webhook and its queued redeliveries; whether there was one.
pub async fn remove(conn: &mut Conn, tenant: &str, agent: &str) -> Result<bool> {
    query("DELETE FROM webhook_redeliveries WHERE tenant_id = ? AND agent_id = ? AND done_at IS NULL")
        .bind(tenant)
        .bind(agent)
        .execute(&mut *conn)
        .await?;
    let done = query("DELETE FROM agent_webhooks WHERE tenant_id = ? AND agent_id = ?")
        .bind(tenant)
        .bind(agent)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Webhooks whose next attempt is due.
pub async fn due(pool: &Pool, now: DateTime<Utc>, limit: u32) -> Result<Vec<Webhook>> {
    let rows = query("SELECT * FROM agent_webhooks WHERE next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?")
        .bind(ts(now))
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Takes the agent's webhook for this instance's pass if it is still due at
/// `now`, moving its next attempt to `lease_until` (so other instances find
/// it not due): the row as it is now (its cursor may have moved since it
/// was read), or None if another instance holds it. On PostgreSQL the
/// second of two concurrent claims waits for the first and then finds the
/// row no longer due; on SQLite the one writer orders them.
pub async fn claim(
    conn: &mut Conn,
    w: &Webhook,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<Webhook>> {
    let row = query(
        "UPDATE agent_webhooks SET next_attempt_at = ? WHERE tenant_id = ? AND agent_id = ? AND next_attempt_at <= ?
         RETURNING *",
    )
    .bind(ts(lease_until))
    .bind(&w.tenant_id)
    .bind(&w.agent_id)
    .bind(ts(now))
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Ends this instance's pass: the next attempt goes back to `due_at` (when
/// it was due before the claim), unless the pass set another one (a
/// failure's backoff).
pub async fn release(conn: &mut Conn, w: &Webhook, lease_until: DateTime<Utc>, due_at: DateTime<Utc>) -> Result<()> {
    query("UPDATE agent_webhooks SET next_attempt_at = ? WHERE tenant_id = ? AND agent_id = ? AND next_attempt_at = ?")
        .bind(ts(due_at))
        .bind(&w.tenant_id)
        .bind(&w.agent_id)
        .bind(ts(lease_until))
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes a queued redelivery for this instance if it is still due at `now`
/// (see [`claim`]): its next attempt moves to `lease_until`.
pub async fn claim_redelivery(
    conn: &mut Conn,
    id: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<bool> {
    let done = query(
        "UPDATE webhook_redeliveries SET next_attempt_at = ? WHERE id = ? AND done_at IS NULL AND next_attempt_at <= ?",
    )
    .bind(ts(lease_until))
    .bind(id)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Moves the cursor past a delivered (or given up) event; the next one is due at once.
pub async fn advance(conn: &mut Conn, w: &Webhook, at: DateTime<Utc>, id: &str) -> Result<()> {
    query(
        "UPDATE agent_webhooks SET cursor_at = ?, cursor_id = ?, attempts = 0
         WHERE tenant_id = ? AND agent_id = ?",
    )
    .bind(ts(at))
    .bind(id)
    .bind(&w.tenant_id)
    .bind(&w.agent_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Counts a failed attempt and sets when to try again.
pub async fn retry_at(conn: &mut Conn, w: &Webhook, attempts: i64, at: DateTime<Utc>) -> Result<()> {
    query("UPDATE agent_webhooks SET attempts = ?, next_attempt_at = ? WHERE tenant_id = ? AND agent_id = ?")
        .bind(attempts)
        .bind(ts(at))
        .bind(&w.tenant_id)
        .bind(&w.agent_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// One attempt, for the delivery log.
pub struct Attempt<'a> {
    pub tenant_id: &'a str,
    pub agent_id: &'a str,
    pub proposal_id: &'a str,
    pub event_id: &'a str,
    pub outcome: &'a str,
    pub http_status: Option<u16>,
    pub error: Option<&'a str>,
    pub attempt: i64,
    /// The redelivery it belongs to; `None` for the stream's own attempts.
    pub redelivery_id: Option<&'a str>,
}

pub async fn log(conn: &mut Conn, a: &Attempt<'_>, now: DateTime<Utc>) -> Result<()> {
    query(
        "INSERT INTO webhook_deliveries
             (id, tenant_id, agent_id, proposal_id, event_id, outcome, http_status, error, attempt, redelivery_id, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(new_id("whd", now))
    .bind(a.tenant_id)
    .bind(a.agent_id)
    .bind(a.proposal_id)
    .bind(a.event_id)
    .bind(a.outcome)
    .bind(a.http_status.map(i64::from))
    .bind(a.error)
    .bind(a.attempt)
    .bind(a.redelivery_id)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// A logged attempt, newest first in [`deliveries`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Delivery {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub proposal_id: String,
    pub event_id: String,
    pub outcome: String,
    pub http_status: Option<i64>,
    pub error: Option<String>,
    #[sqlx(try_from = "Int")]
    pub attempt: i64,
    pub redelivery_id: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

pub async fn deliveries(pool: &Pool, tenant: &str, agent: &str, limit: u32) -> Result<Vec<Delivery>> {
    let rows = query(
        "SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND agent_id = ? ORDER BY at DESC, id DESC LIMIT ?",
    )
    .bind(tenant)
    .bind(agent)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// One logged attempt of the tenant's (another tenant's is `None`, as a missing one).
pub async fn delivery(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<Delivery>> {
    let row = query("SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// A tenant's webhook as the admin page shows it: no secrets are read.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Overview {
    pub agent_id: String,
    pub url: String,
    /// Failed attempts at the event after the cursor.
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub next_attempt_at: DateTime<Utc>,
    /// Redeliveries not yet delivered or given up.
    #[sqlx(rename = "queued", try_from = "Int")]
    pub queued_redeliveries: i64,
}

/// The tenant's webhooks, by agent id.
pub async fn overview(pool: &Pool, tenant: &str) -> Result<Vec<Overview>> {
    let rows = query(
        "SELECT w.agent_id, w.url, w.attempts, w.next_attempt_at,
                (SELECT COUNT(*) FROM webhook_redeliveries r
                  WHERE r.tenant_id = w.tenant_id AND r.agent_id = w.agent_id AND r.done_at IS NULL) AS queued
         FROM agent_webhooks w WHERE w.tenant_id = ? ORDER BY w.agent_id",
    )
    .bind(tenant)
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// A redelivery to queue.
pub struct NewRedelivery<'a> {
    pub id: &'a str,
    pub delivery: &'a Delivery,
    pub event_id: &'a str,
    pub requested_by: &'a str,
}

/// Queues a redelivery, due at once; `false` if one of the same proposal to
/// the same agent is queued already (the partial unique index).
pub async fn queue_redelivery(conn: &mut Conn, r: &NewRedelivery<'_>, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "INSERT INTO webhook_redeliveries
             (id, tenant_id, agent_id, proposal_id, delivery_id, event_id, requested_by, requested_at, next_attempt_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING",
    )
    .bind(r.id)
    .bind(&r.delivery.tenant_id)
    .bind(&r.delivery.agent_id)
    .bind(&r.delivery.proposal_id)
    .bind(&r.delivery.id)
    .bind(r.event_id)
    .bind(r.requested_by)
    .bind(ts(now))
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A queued redelivery, with where it goes and the secrets that sign it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Redelivery {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub proposal_id: String,
    pub event_id: String,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    pub url: String,
    /// Newest first.
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub secrets: Vec<String>,
}

/// Queued redeliveries whose next attempt is due, of agents that still have a webhook.
pub async fn due_redeliveries(pool: &Pool, now: DateTime<Utc>, limit: u32) -> Result<Vec<Redelivery>> {
    let rows = query(
        "SELECT r.id, r.tenant_id, r.agent_id, r.proposal_id, r.event_id, r.attempts, w.url, w.secrets
         FROM webhook_redeliveries r
         JOIN agent_webhooks w ON w.tenant_id = r.tenant_id AND w.agent_id = r.agent_id
         WHERE r.done_at IS NULL AND r.next_attempt_at <= ?
         ORDER BY r.next_attempt_at, r.id LIMIT ?",
    )
    .bind(ts(now))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// A redelivery delivered or given up: it leaves the queue.
pub async fn redelivery_done(conn: &mut Conn, id: &str, attempts: i64, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE webhook_redeliveries SET attempts = ?, done_at = ? WHERE id = ?")
        .bind(attempts)
        .bind(ts(now))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Counts a failed attempt of a redelivery and sets when to try again.
pub async fn redelivery_retry_at(conn: &mut Conn, id: &str, attempts: i64, at: DateTime<Utc>) -> Result<()> {
    query("UPDATE webhook_redeliveries SET attempts = ?, next_attempt_at = ? WHERE id = ?")
        .bind(attempts)
        .bind(ts(at))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}
