//! Registry changes proposed on the console, waiting for a second admin
//! (`registry_changes`). Decisions are compare-and-set on `status`.

use chrono::{DateTime, Utc};

use super::{query, scalar, ts, Conn, OptTimestamp, Pool, Result, Row, Timestamp};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChangeRow {
    pub id: String,
    pub tenant_id: String,
    pub kind: String,
    pub subject: String,
    /// JSON: what will be applied.
    pub change: String,
    /// JSON: what a person reads.
    pub summary: String,
    pub status: String,
    pub proposed_by: String,
    #[sqlx(try_from = "Timestamp")]
    pub proposed_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    #[sqlx(try_from = "OptTimestamp")]
    pub decided_at: Option<DateTime<Utc>>,
    pub note: Option<String>,
}

pub struct NewChange<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub kind: &'a str,
    pub subject: &'a str,
    pub change: &'a str,
    pub summary: &'a str,
    pub proposed_by: &'a str,
    pub now: DateTime<Utc>,
}

pub async fn insert(conn: &mut Conn, c: &NewChange<'_>) -> Result<()> {
    query(
        "INSERT INTO registry_changes (id, tenant_id, kind, subject, change, summary, status, proposed_by, proposed_at)
         VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
    )
    .bind(c.id)
    .bind(c.tenant_id)
    .bind(c.kind)
    .bind(c.subject)
    .bind(c.change)
    .bind(c.summary)
    .bind(c.proposed_by)
    .bind(ts(c.now))
    .execute(conn)
    .await?;
    Ok(())
}

/// One change of `tenant` (another tenant's is "not found").
pub async fn get(pool: &Pool, tenant: &str, id: &str) -> Result<Option<ChangeRow>> {
    let row = query("SELECT * FROM registry_changes WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The tenant's pending changes, oldest first.
pub async fn pending(pool: &Pool, tenant: &str) -> Result<Vec<ChangeRow>> {
    let rows = query("SELECT * FROM registry_changes WHERE tenant_id = ? AND status = 'pending' ORDER BY id LIMIT 200")
        .bind(tenant)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Moves a pending change to `to` (applied, rejected); false when it was
/// no longer pending (decided by someone else first).
pub async fn decide(
    conn: &mut Conn,
    id: &str,
    to: &str,
    by: &str,
    note: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = query(
        "UPDATE registry_changes SET status = ?, decided_by = ?, decided_at = ?, note = ?
         WHERE id = ? AND status = 'pending'",
    )
    .bind(to)
    .bind(by)
    .bind(ts(now))
    .bind(note)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Every other pending change to the same subject is superseded by one just
/// applied (it was proposed against a state that no longer holds).
pub async fn supersede_others(conn: &mut Conn, applied: &ChangeRow, now: DateTime<Utc>) -> Result<Vec<String>> {
    Ok(scalar(
        "UPDATE registry_changes SET status = 'superseded', decided_at = ?, note = ?
         WHERE tenant_id = ? AND kind = ? AND subject = ? AND status = 'pending' AND id <> ?
         RETURNING id",
    )
    .bind(ts(now))
    .bind(format!("superseded by {}", applied.id))
    .bind(&applied.tenant_id)
    .bind(&applied.kind)
    .bind(&applied.subject)
    .bind(&applied.id)
    .fetch_all(conn)
    .await?)
}

/// Every pending change of `tenant` of one of `kinds` about `subject` is
/// withdrawn (`superseded`, with `note`): a change reducing that subject's
/// authority applied, and they were proposed against the state before it.
pub async fn supersede_subject(
    conn: &mut Conn,
    tenant: &str,
    (kinds, subject): (&[&str], &str),
    note: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let mut q = super::Builder::new("UPDATE registry_changes SET status = 'superseded', decided_at = ");
    q.push_bind(ts(now)).push(", note = ").push_bind(note.to_owned());
    q.push(" WHERE tenant_id = ").push_bind(tenant.to_owned()).push(" AND subject = ").push_bind(subject.to_owned());
    q.push(" AND status = 'pending' AND kind IN (")
        .push_list(kinds.iter().map(|k| k.to_string()))
        .push(") RETURNING id");
    let rows = q.build().fetch_all(conn).await?;
    rows.iter().map(|r| r.decode::<Superseded>().map(|s| s.id)).collect()
}

#[derive(sqlx::FromRow)]
struct Superseded {
    id: String,
}

/// Every pending change of `tenant` proposed by `user` is withdrawn
/// (`superseded`, with `note`): its proposer left (offboarding).
pub async fn supersede_proposed_by(
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    note: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    Ok(scalar(
        "UPDATE registry_changes SET status = 'superseded', decided_at = ?, note = ?
         WHERE tenant_id = ? AND proposed_by = ? AND status = 'pending' RETURNING id",
    )
    .bind(ts(now))
    .bind(note)
    .bind(tenant)
    .bind(user)
    .fetch_all(conn)
    .await?)
}
