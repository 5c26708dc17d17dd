//! Agent webhooks (`agent_webhooks`) and their delivery log
//! (`webhook_deliveries`), migration 0009.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;

use super::{new_id, ts, Cols, Conn, Pool, Result};

#[derive(Debug, Clone)]
pub struct Webhook {
    pub tenant_id: String,
    pub agent_id: String,
    pub url: String,
    /// Newest first.
    pub secrets: Vec<String>,
    pub cursor_at: DateTime<Utc>,
    pub cursor_id: String,
    pub attempts: i64,
    pub next_attempt_at: DateTime<Utc>,
}

fn from_row(r: &SqliteRow) -> Result<Webhook> {
    let c = Cols::of(r);
    Ok(Webhook {
        tenant_id: c.text("tenant_id")?,
        agent_id: c.text("agent_id")?,
        url: c.text("url")?,
        secrets: c.json("secrets")?,
        cursor_at: c.at("cursor_at")?,
        cursor_id: c.text("cursor_id")?,
        attempts: c.int("attempts")?,
        next_attempt_at: c.at("next_attempt_at")?,
    })
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
    sqlx::query(
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
    let row = sqlx::query("SELECT * FROM agent_webhooks WHERE tenant_id = ? AND agent_id = ?")
        .bind(tenant)
        .bind(agent)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Removes the agent's webhook; whether there was one.
pub async fn remove(conn: &mut Conn, tenant: &str, agent: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM agent_webhooks WHERE tenant_id = ? AND agent_id = ?")
        .bind(tenant)
        .bind(agent)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Webhooks whose next attempt is due.
pub async fn due(pool: &Pool, now: DateTime<Utc>, limit: u32) -> Result<Vec<Webhook>> {
    let rows = sqlx::query("SELECT * FROM agent_webhooks WHERE next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?")
        .bind(ts(now))
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(from_row).collect()
}

/// Moves the cursor past a delivered (or given up) event; the next one is due at once.
pub async fn advance(conn: &mut Conn, w: &Webhook, at: DateTime<Utc>, id: &str) -> Result<()> {
    sqlx::query(
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
    sqlx::query("UPDATE agent_webhooks SET attempts = ?, next_attempt_at = ? WHERE tenant_id = ? AND agent_id = ?")
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
    pub proposal_id: &'a str,
    pub event_id: &'a str,
    pub outcome: &'a str,
    pub http_status: Option<u16>,
    pub error: Option<&'a str>,
    pub attempt: i64,
}

pub async fn log(conn: &mut Conn, w: &Webhook, a: &Attempt<'_>, now: DateTime<Utc>) -> Result<()> {
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, tenant_id, agent_id, proposal_id, event_id, outcome, http_status, error, attempt, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(new_id("whd", now))
    .bind(&w.tenant_id)
    .bind(&w.agent_id)
    .bind(a.proposal_id)
    .bind(a.event_id)
    .bind(a.outcome)
    .bind(a.http_status.map(i64::from))
    .bind(a.error)
    .bind(a.attempt)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// A logged attempt, newest first in [`deliveries`].
#[derive(Debug, Clone)]
pub struct Delivery {
    pub proposal_id: String,
    pub event_id: String,
    pub outcome: String,
    pub http_status: Option<i64>,
    pub error: Option<String>,
    pub attempt: i64,
    pub at: DateTime<Utc>,
}

pub async fn deliveries(pool: &Pool, tenant: &str, agent: &str, limit: u32) -> Result<Vec<Delivery>> {
    let rows = sqlx::query(
        "SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND agent_id = ? ORDER BY at DESC, id DESC LIMIT ?",
    )
    .bind(tenant)
    .bind(agent)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            let c = Cols::of(r);
            Ok(Delivery {
                proposal_id: c.text("proposal_id")?,
                event_id: c.text("event_id")?,
                outcome: c.text("outcome")?,
                http_status: c.get("http_status")?,
                error: c.opt_text("error")?,
                attempt: c.int("attempt")?,
                at: c.at("at")?,
            })
        })
        .collect()
}
