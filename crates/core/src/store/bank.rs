//! The bank-file rail's ledger, batches and received documents (migration
//! 0029; the rail itself: `crate::rail::iso20022`).

use chrono::{DateTime, Utc};

use super::{query, scalar, ts, Builder, Conn, Exec, Int, OptTimestamp, OptUnsigned, Result, Row, Timestamp, Unsigned};

/// A payment's place in the bank channel (`bank_payments.status`).
pub mod status {
    /// Handed to the rail, not yet in a file.
    pub const QUEUED: &str = "queued";
    /// Written in its batch's file.
    pub const SENT: &str = "sent";
    /// A status report accepted it (not booked yet).
    pub const ACCEPTED: &str = "accepted";
    /// A statement booked it for the amount sent.
    pub const BOOKED: &str = "booked";
    /// A status report rejected it (`reason_code`).
    pub const REJECTED: &str = "rejected";
    /// A statement booked another amount or currency (`booked_*`).
    pub const MISMATCH: &str = "mismatch";
    /// Still open: neither booked nor rejected.
    pub const OPEN: [&str; 3] = [QUEUED, SENT, ACCEPTED];
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PaymentRow {
    pub rail: String,
    pub idempotency_key: String,
    pub end_to_end_id: String,
    pub tenant_id: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    pub destination: String,
    pub reference: String,
    pub status: String,
    pub batch_id: Option<String>,
    pub reason_code: Option<String>,
    #[sqlx(try_from = "OptUnsigned")]
    pub booked_amount_minor: Option<u64>,
    pub booked_currency: Option<String>,
    pub document_id: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
}

/// A payment to record.
#[derive(Debug, Clone)]
pub struct NewPayment<'a> {
    pub rail: &'a str,
    pub idempotency_key: &'a str,
    pub end_to_end_id: &'a str,
    pub tenant_id: &'a str,
    pub amount_minor: u64,
    pub currency: &'a str,
    pub destination: &'a str,
    pub reference: &'a str,
    pub now: DateTime<Utc>,
}

/// Records `p` unless its key is recorded already, and returns the row the
/// key holds (the new one, or the first).
pub async fn record_payment(conn: &mut Conn, p: &NewPayment<'_>) -> Result<PaymentRow> {
    let now = ts(p.now);
    query(
        "INSERT INTO bank_payments (rail, idempotency_key, end_to_end_id, tenant_id, amount_minor, currency,
             destination, reference, status, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)
         ON CONFLICT (rail, idempotency_key) DO NOTHING",
    )
    .bind(p.rail)
    .bind(p.idempotency_key)
    .bind(p.end_to_end_id)
    .bind(p.tenant_id)
    .bind(p.amount_minor as i64)
    .bind(p.currency)
    .bind(p.destination)
    .bind(p.reference)
    .bind(now.clone())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    payment_by_key(conn, p.rail, p.idempotency_key)
        .await?
        .ok_or_else(|| super::StoreError::corrupt("bank_payments", "a recorded payment is missing"))
}

pub async fn payment_by_key<'e>(db: impl Into<Exec<'e>>, rail: &str, key: &str) -> Result<Option<PaymentRow>> {
    query("SELECT * FROM bank_payments WHERE rail = ? AND idempotency_key = ?")
        .bind(rail)
        .bind(key)
        .fetch_optional(db)
        .await?
        .as_ref()
        .map(Row::decode)
        .transpose()
}

pub async fn payment_by_end_to_end<'e>(db: impl Into<Exec<'e>>, rail: &str, e2e: &str) -> Result<Option<PaymentRow>> {
    query("SELECT * FROM bank_payments WHERE rail = ? AND end_to_end_id = ?")
        .bind(rail)
        .bind(e2e)
        .fetch_optional(db)
        .await?
        .as_ref()
        .map(Row::decode)
        .transpose()
}

/// The rail's payments recorded since `since`, newest first.
pub async fn payments_since<'e>(
    db: impl Into<Exec<'e>>,
    rail: &str,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<PaymentRow>> {
    query("SELECT * FROM bank_payments WHERE rail = ? AND created_at >= ? ORDER BY created_at DESC, end_to_end_id DESC LIMIT ?")
        .bind(rail)
        .bind(ts(since))
        .bind(limit.min(10_000) as i64)
        .fetch_all(db)
        .await?
        .iter()
        .map(Row::decode)
        .collect()
}

/// The keys of payments not yet in a batch, oldest first.
pub async fn unbatched<'e>(db: impl Into<Exec<'e>>, rail: &str, limit: usize) -> Result<Vec<String>> {
    Ok(scalar(
        "SELECT idempotency_key FROM bank_payments WHERE rail = ? AND status = 'queued' AND batch_id IS NULL
         ORDER BY created_at, end_to_end_id LIMIT ?",
    )
    .bind(rail)
    .bind(limit as i64)
    .fetch_all(db)
    .await?)
}

/// A file written, or to write.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BatchRow {
    pub id: String,
    pub rail: String,
    pub file_name: String,
    #[sqlx(try_from = "Int")]
    pub payments: i64,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub written_at: Option<DateTime<Utc>>,
    pub sha256: Option<String>,
}

/// Makes batch `id` of the unbatched payments among `keys` (a
/// compare-and-set: a payment another process batched first stays in its
/// batch). Returns how many it took; a batch of none is not kept.
pub async fn assign_batch(
    conn: &mut Conn,
    rail: &str,
    id: &str,
    file_name: &str,
    keys: &[String],
    now: DateTime<Utc>,
) -> Result<u64> {
    if keys.is_empty() {
        return Ok(0);
    }
    let mut q = Builder::new("UPDATE bank_payments SET batch_id = ");
    q.push_bind(id).push(", updated_at = ").push_bind(ts(now));
    q.push(" WHERE rail = ")
        .push_bind(rail)
        .push(" AND status = 'queued' AND batch_id IS NULL AND idempotency_key IN (");
    q.push_list(keys.iter().map(String::as_str)).push(")");
    let taken = q.build().execute(&mut *conn).await?.rows_affected();
    if taken > 0 {
        query("INSERT INTO bank_batches (id, rail, file_name, payments, created_at) VALUES (?, ?, ?, ?, ?)")
            .bind(id)
            .bind(rail)
            .bind(file_name)
            .bind(taken as i64)
            .bind(ts(now))
            .execute(conn)
            .await?;
    }
    Ok(taken)
}

/// Batches assigned and not yet written, oldest first.
pub async fn unwritten_batches<'e>(db: impl Into<Exec<'e>>, rail: &str) -> Result<Vec<BatchRow>> {
    query("SELECT * FROM bank_batches WHERE rail = ? AND written_at IS NULL ORDER BY created_at, id")
        .bind(rail)
        .fetch_all(db)
        .await?
        .iter()
        .map(Row::decode)
        .collect()
}

/// When the rail's newest batch was made.
pub async fn last_batch_at<'e>(db: impl Into<Exec<'e>>, rail: &str) -> Result<Option<DateTime<Utc>>> {
    let at: Option<String> =
        scalar("SELECT MAX(created_at) FROM bank_batches WHERE rail = ?").bind(rail).fetch_one(db).await?;
    Ok(at.as_deref().and_then(super::parse_ts))
}

pub async fn batch_payments<'e>(db: impl Into<Exec<'e>>, rail: &str, batch: &str) -> Result<Vec<PaymentRow>> {
    query("SELECT * FROM bank_payments WHERE rail = ? AND batch_id = ? ORDER BY created_at, end_to_end_id")
        .bind(rail)
        .bind(batch)
        .fetch_all(db)
        .await?
        .iter()
        .map(Row::decode)
        .collect()
}

/// The batch's file is in place: its payments are `sent`.
pub async fn mark_written(conn: &mut Conn, rail: &str, batch: &str, sha256: &str, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE bank_batches SET written_at = ?, sha256 = ? WHERE rail = ? AND id = ? AND written_at IS NULL")
        .bind(ts(now))
        .bind(sha256)
        .bind(rail)
        .bind(batch)
        .execute(&mut *conn)
        .await?;
    query("UPDATE bank_payments SET status = 'sent', updated_at = ? WHERE rail = ? AND batch_id = ? AND status = 'queued'")
        .bind(ts(now))
        .bind(rail)
        .bind(batch)
        .execute(conn)
        .await?;
    Ok(())
}

/// What a document moves a payment to.
#[derive(Debug, Clone, Copy)]
pub struct Move<'a> {
    pub to: &'a str,
    pub reason_code: Option<&'a str>,
    pub booked: Option<(u64, &'a str)>,
    pub document_id: &'a str,
}

/// Moves the payment `e2e` from one of `from` to `m.to`; false when it was
/// in none of them.
pub async fn move_payment(
    conn: &mut Conn,
    rail: &str,
    e2e: &str,
    from: &[&str],
    m: Move<'_>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut q = Builder::new("UPDATE bank_payments SET status = ");
    q.push_bind(m.to).push(", updated_at = ").push_bind(ts(now)).push(", document_id = ").push_bind(m.document_id);
    if let Some(code) = m.reason_code {
        q.push(", reason_code = ").push_bind(code);
    }
    if let Some((amount, currency)) = m.booked {
        q.push(", booked_amount_minor = ").push_bind(amount as i64).push(", booked_currency = ").push_bind(currency);
    }
    q.push(" WHERE rail = ").push_bind(rail).push(" AND end_to_end_id = ").push_bind(e2e);
    q.push(" AND status IN (").push_list(from.iter().copied()).push(")");
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// The end-to-end ids of a batch's payments in `currency` (a status
/// report's whole block), or of all of them.
pub async fn batch_end_to_end_ids<'e>(
    db: impl Into<Exec<'e>>,
    rail: &str,
    batch: &str,
    currency: Option<&str>,
) -> Result<Vec<String>> {
    let mut q = Builder::new("SELECT end_to_end_id FROM bank_payments WHERE rail = ");
    q.push_bind(rail).push(" AND batch_id = ").push_bind(batch);
    if let Some(c) = currency {
        q.push(" AND currency = ").push_bind(c);
    }
    q.push(" ORDER BY end_to_end_id");
    let rows = q.build().fetch_all(db).await?;
    rows.iter().map(|r| r.try_get::<String>("end_to_end_id").map_err(Into::into)).collect()
}

/// A document read from the inbox.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: String,
    pub rail: String,
    pub tenant_id: Option<String>,
    pub file_name: String,
    pub sha256: String,
    pub kind: String,
    pub message_id: Option<String>,
    pub status: String,
    /// JSON array of `{code, end_to_end_id, message}`.
    pub problems: String,
    #[sqlx(try_from = "Int")]
    pub entries: i64,
    #[sqlx(try_from = "Timestamp")]
    pub received_at: DateTime<Utc>,
}

/// The file names of the rail's documents read so far.
pub async fn document_files<'e>(db: impl Into<Exec<'e>>, rail: &str) -> Result<std::collections::HashSet<String>> {
    let names: Vec<String> =
        scalar("SELECT file_name FROM bank_documents WHERE rail = ?").bind(rail).fetch_all(db).await?;
    Ok(names.into_iter().collect())
}

/// The first document of the rail with this content, or this kind and
/// message id (a duplicate's original).
pub async fn document_like<'e>(
    db: impl Into<Exec<'e>>,
    rail: &str,
    sha256: &str,
    kind_and_message: Option<(&str, &str)>,
) -> Result<Option<DocumentRow>> {
    let mut q = Builder::new("SELECT * FROM bank_documents WHERE rail = ");
    q.push_bind(rail).push(" AND status = 'applied' AND (sha256 = ").push_bind(sha256);
    if let Some((kind, message)) = kind_and_message {
        q.push(" OR (kind = ").push_bind(kind).push(" AND message_id = ").push_bind(message).push(")");
    }
    q.push(") ORDER BY received_at LIMIT 1");
    q.build().fetch_optional(db).await?.as_ref().map(Row::decode).transpose()
}

pub async fn insert_document(conn: &mut Conn, d: &DocumentRow) -> Result<()> {
    query(
        "INSERT INTO bank_documents (id, rail, tenant_id, file_name, sha256, kind, message_id, status, problems,
             entries, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(d.id.as_str())
    .bind(d.rail.as_str())
    .bind(d.tenant_id.as_deref())
    .bind(d.file_name.as_str())
    .bind(d.sha256.as_str())
    .bind(d.kind.as_str())
    .bind(d.message_id.as_deref())
    .bind(d.status.as_str())
    .bind(d.problems.as_str())
    .bind(d.entries)
    .bind(ts(d.received_at))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn document<'e>(db: impl Into<Exec<'e>>, id: &str) -> Result<Option<DocumentRow>> {
    query("SELECT * FROM bank_documents WHERE id = ?")
        .bind(id)
        .fetch_optional(db)
        .await?
        .as_ref()
        .map(Row::decode)
        .transpose()
}

/// A tenant's newest documents (those with problems first when `problems_only`).
pub async fn recent_documents<'e>(
    db: impl Into<Exec<'e>>,
    tenant: &str,
    problems_only: bool,
    limit: usize,
) -> Result<Vec<DocumentRow>> {
    let mut q = Builder::new("SELECT * FROM bank_documents WHERE tenant_id = ");
    q.push_bind(tenant);
    if problems_only {
        q.push(" AND (status <> 'applied' OR problems <> '[]')");
    }
    q.push(" ORDER BY received_at DESC, id DESC LIMIT ").push_bind(limit as i64);
    q.build().fetch_all(db).await?.iter().map(Row::decode).collect()
}

/// The payment a tenant's operation made on a bank rail, and the document
/// that settled it, if any: the console's evidence.
pub async fn evidence_for<'e>(
    db: impl Into<Exec<'e>> + Copy,
    tenant: &str,
    operation_id: &str,
) -> Result<Option<(PaymentRow, Option<DocumentRow>)>> {
    let Some(p) = query("SELECT * FROM bank_payments WHERE tenant_id = ? AND end_to_end_id = ?")
        .bind(tenant)
        .bind(operation_id)
        .fetch_optional(db)
        .await?
        .as_ref()
        .map(Row::decode::<PaymentRow>)
        .transpose()?
    else {
        return Ok(None);
    };
    let doc = match &p.document_id {
        Some(id) => document(db, id).await?,
        None => None,
    };
    Ok(Some((p, doc)))
}
