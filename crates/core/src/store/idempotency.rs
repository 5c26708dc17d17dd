//! `Idempotency-Key` storage, Stripe semantics. A key is claimed with
//! `INSERT … ON CONFLICT DO NOTHING`; whoever inserts the row runs the
//! request, everyone else replays, is told the key is in use, or that it was
//! used with another body.

use super::{query, ts, Pool, Result, Unsigned};
use chrono::{DateTime, Duration, Utc};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is ours: run the request, then `complete` or `release`.
    Fresh,
    /// A finished request with the same body: replay its response.
    Replay { status: u16, body: String },
    /// The same key was used with a different body.
    Mismatch,
    /// The first request with this key has not finished.
    InFlight,
}

/// An in-flight claim older than this belongs to a request that died.
const ABANDONED_AFTER: Duration = Duration::minutes(5);

pub struct Scope<'a> {
    pub tenant_id: &'a str,
    pub agent_id: &'a str,
    pub key: &'a str,
}

pub async fn claim(
    pool: &Pool,
    scope: &Scope<'_>,
    fingerprint: &str,
    now: DateTime<Utc>,
    retention: Duration,
) -> Result<Claim> {
    let mut tx = pool.begin().await?;
    // A key older than the retention window is forgotten, and so is a claim
    // whose request died with the process (no request runs for minutes).
    query(
        "DELETE FROM idempotency_keys WHERE tenant_id = ? AND agent_id = ? AND key = ?
           AND (created_at < ? OR (state = 'in_flight' AND created_at < ?))",
    )
    .bind(scope.tenant_id)
    .bind(scope.agent_id)
    .bind(scope.key)
    .bind(ts(now - retention))
    .bind(ts(now - ABANDONED_AFTER))
    .execute(&mut *tx)
    .await?;
    let inserted = query(
        "INSERT INTO idempotency_keys (tenant_id, agent_id, key, fingerprint, state, created_at)
         VALUES (?, ?, ?, ?, 'in_flight', ?) ON CONFLICT DO NOTHING",
    )
    .bind(scope.tenant_id)
    .bind(scope.agent_id)
    .bind(scope.key)
    .bind(fingerprint)
    .bind(ts(now))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let claim = if inserted == 1 {
        Claim::Fresh
    } else {
        let row = query(
            "SELECT fingerprint, state, response_status, response_body FROM idempotency_keys
             WHERE tenant_id = ? AND agent_id = ? AND key = ?",
        )
        .bind(scope.tenant_id)
        .bind(scope.agent_id)
        .bind(scope.key)
        .fetch_one(&mut *tx)
        .await?;
        let stored: Stored = row.decode()?;
        if stored.fingerprint != fingerprint {
            Claim::Mismatch
        } else if stored.state != "done" {
            Claim::InFlight
        } else {
            let Response { response_status: status, response_body: body } = row.decode()?;
            Claim::Replay { status, body }
        }
    };
    tx.commit().await?;
    Ok(claim)
}

/// A claimed key as stored.
#[derive(sqlx::FromRow)]
struct Stored {
    fingerprint: String,
    state: String,
}

/// The response stored with a `done` key.
#[derive(sqlx::FromRow)]
struct Response {
    #[sqlx(try_from = "Unsigned<u16>")]
    response_status: u16,
    response_body: String,
}

/// Stores the response of the request that claimed the key.
pub async fn complete(pool: &Pool, scope: &Scope<'_>, status: u16, body: &str) -> Result<()> {
    query(
        "UPDATE idempotency_keys SET state = 'done', response_status = ?, response_body = ?
         WHERE tenant_id = ? AND agent_id = ? AND key = ?",
    )
    .bind(i64::from(status))
    .bind(body)
    .bind(scope.tenant_id)
    .bind(scope.agent_id)
    .bind(scope.key)
    .execute(pool)
    .await?;
    Ok(())
}

/// Forgets the key: the request never started executing (bad input) or failed
/// on our side, so a retry with the same key may run again.
pub async fn release(pool: &Pool, scope: &Scope<'_>) -> Result<()> {
    query("DELETE FROM idempotency_keys WHERE tenant_id = ? AND agent_id = ? AND key = ? AND state = 'in_flight'")
        .bind(scope.tenant_id)
        .bind(scope.agent_id)
        .bind(scope.key)
        .execute(pool)
        .await?;
    Ok(())
}

/// Deletes keys past the retention window; returns how many.
pub async fn purge(pool: &Pool, now: DateTime<Utc>, retention: Duration) -> Result<u64> {
    Ok(query("DELETE FROM idempotency_keys WHERE created_at < ?")
        .bind(ts(now - retention))
        .execute(pool)
        .await?
        .rows_affected())
}
