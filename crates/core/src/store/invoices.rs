//! The invoice registry (migration 0039): invoices a tenant owes, their open
//! balance, and the reservations payments in flight hold on it.
//!
//! The open balance is `amount - paid - reserved`. A commit takes its amount
//! with one conditional UPDATE that reads the balance in the same statement
//! ([`reserve`]), so two commits can never both take the last of it, on
//! SQLite or on PostgreSQL with several instances; the table's CHECK keeps
//! `paid + reserved <= amount` whatever a statement does. A payment's
//! outcome moves its amount from reserved to paid, or gives it back
//! ([`push_settle`]).

use chrono::{DateTime, Utc};

use super::operations::{OpStatus, OperationRow};
use super::{query, scalar, ts, Builder, Conn, Exec, Pool, Result, Row, Timestamp, Unsigned};

/// An invoice as stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct InvoiceRow {
    pub tenant_id: String,
    /// The account the invoice is owed to (a payee id: never shown whole).
    pub payee_id: String,
    pub number: String,
    pub vendor_name: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    /// `YYYY-MM-DD`.
    pub due_date: String,
    /// `open`, `paid` or `void`.
    pub status: String,
    pub purpose: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub paid_minor: u64,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub reserved_minor: u64,
    /// Free text from outside: untrusted.
    pub note: Option<String>,
    /// Free text from outside: untrusted.
    pub vendor_memo: Option<String>,
    pub import_id: String,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
}

impl InvoiceRow {
    /// What is still owed and not held by a payment in flight.
    pub fn open_minor(&self) -> u64 {
        self.amount_minor.saturating_sub(self.paid_minor).saturating_sub(self.reserved_minor)
    }
}

/// A registered invoice, as a payment names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvoiceKey<'a> {
    pub tenant_id: &'a str,
    pub payee_id: &'a str,
    pub number: &'a str,
}

/// The invoice `number` owed to `payee` in `tenant`.
pub async fn get<'e>(db: impl Into<Exec<'e>>, key: InvoiceKey<'_>) -> Result<Option<InvoiceRow>> {
    let row = query("SELECT * FROM invoices WHERE tenant_id = ? AND payee_id = ? AND number = ?")
        .bind(key.tenant_id)
        .bind(key.payee_id)
        .bind(key.number)
        .fetch_optional(db)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Every invoice of `tenant` numbered `number`, whatever its payee.
pub async fn by_number<'e>(db: impl Into<Exec<'e>>, tenant: &str, number: &str) -> Result<Vec<InvoiceRow>> {
    let rows = query("SELECT * FROM invoices WHERE tenant_id = ? AND number = ? ORDER BY payee_id")
        .bind(tenant)
        .bind(number)
        .fetch_all(db)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// The invoices of `tenant` among `keys` (payee, number), any order.
pub async fn get_many(conn: &mut Conn, tenant: &str, keys: &[(&str, &str)]) -> Result<Vec<InvoiceRow>> {
    let mut found = Vec::new();
    for chunk in keys.chunks(200) {
        let mut q = Builder::new("SELECT * FROM invoices WHERE tenant_id = ");
        q.push_bind(tenant).push(" AND (");
        for (i, (payee, number)) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(payee_id = " } else { " OR (payee_id = " });
            q.push_bind(*payee).push(" AND number = ").push_bind(*number).push(")");
        }
        q.push(")");
        for row in q.build().fetch_all(&mut *conn).await? {
            found.push(row.decode()?);
        }
    }
    Ok(found)
}

/// An invoice as an import writes it.
#[derive(Debug, Clone)]
pub struct NewInvoice<'a> {
    pub tenant_id: &'a str,
    pub payee_id: &'a str,
    pub number: &'a str,
    pub vendor_name: &'a str,
    pub amount_minor: u64,
    pub currency: &'a str,
    pub due_date: &'a str,
    pub status: &'a str,
    pub purpose: &'a str,
    pub paid_minor: u64,
    pub note: Option<&'a str>,
    pub vendor_memo: Option<&'a str>,
    pub import_id: &'a str,
    pub now: DateTime<Utc>,
}

/// Adds a new invoice.
pub async fn insert(conn: &mut Conn, i: &NewInvoice<'_>) -> Result<()> {
    let now = ts(i.now);
    query(
        "INSERT INTO invoices (tenant_id, payee_id, number, vendor_name, amount_minor, currency, due_date, status,
             purpose, paid_minor, reserved_minor, note, vendor_memo, import_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
    )
    .bind(i.tenant_id)
    .bind(i.payee_id)
    .bind(i.number)
    .bind(i.vendor_name)
    .bind(i.amount_minor as i64)
    .bind(i.currency)
    .bind(i.due_date)
    .bind(i.status)
    .bind(i.purpose)
    .bind(i.paid_minor as i64)
    .bind(i.note)
    .bind(i.vendor_memo)
    .bind(i.import_id)
    .bind(now.clone())
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Overwrites an invoice with what an import says, only if its paid and
/// reserved amounts are still those `read` (compare-and-set: a payment that
/// moved meanwhile makes the import fail, whole, rather than overwrite what
/// it held). Returns whether it was written.
pub async fn update_as_read(conn: &mut Conn, i: &NewInvoice<'_>, read: &InvoiceRow) -> Result<bool> {
    let done = query(
        "UPDATE invoices SET vendor_name = ?, amount_minor = ?, currency = ?, due_date = ?, status = ?, purpose = ?,
             paid_minor = ?, note = ?, vendor_memo = ?, import_id = ?, updated_at = ?
         WHERE tenant_id = ? AND payee_id = ? AND number = ? AND paid_minor = ? AND reserved_minor = ?",
    )
    .bind(i.vendor_name)
    .bind(i.amount_minor as i64)
    .bind(i.currency)
    .bind(i.due_date)
    .bind(i.status)
    .bind(i.purpose)
    .bind(i.paid_minor as i64)
    .bind(i.note)
    .bind(i.vendor_memo)
    .bind(i.import_id)
    .bind(ts(i.now))
    .bind(i.tenant_id)
    .bind(i.payee_id)
    .bind(i.number)
    .bind(read.paid_minor as i64)
    .bind(read.reserved_minor as i64)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What one import did, kept with who did it and the file's digest.
#[derive(Debug, Clone)]
pub struct ImportRecord<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub imported_by: &'a str,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub sha256: &'a str,
    pub at: DateTime<Utc>,
}

pub async fn record_import(conn: &mut Conn, r: &ImportRecord<'_>) -> Result<()> {
    query(
        "INSERT INTO invoice_imports (id, tenant_id, imported_by, created, updated, unchanged, sha256, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(r.id)
    .bind(r.tenant_id)
    .bind(r.imported_by)
    .bind(r.created as i64)
    .bind(r.updated as i64)
    .bind(r.unchanged as i64)
    .bind(r.sha256)
    .bind(ts(r.at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes `amount` of the invoice's open balance for a payment, if it is
/// open, owed in `currency` and has that much open. One statement: the
/// balance is read where it is taken. Returns whether it was taken.
pub async fn reserve(conn: &mut Conn, key: InvoiceKey<'_>, currency: &str, amount: u64) -> Result<bool> {
    let mut q = Builder::new("");
    push_reserve(&mut q, key, currency, amount);
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// Writes [`reserve`]'s statement into `q`.
pub fn push_reserve<'q>(q: &mut Builder<'q>, key: InvoiceKey<'q>, currency: &'q str, amount: u64) {
    let amount = amount as i64;
    q.push("UPDATE invoices SET reserved_minor = reserved_minor + ").push_bind(amount);
    q.push(" WHERE tenant_id = ").push_bind(key.tenant_id).push(" AND payee_id = ").push_bind(key.payee_id);
    q.push(" AND number = ").push_bind(key.number).push(" AND status = 'open' AND currency = ").push_bind(currency);
    q.push(" AND amount_minor - paid_minor - reserved_minor >= ").push_bind(amount);
}

/// An operation's outcome on the invoice it holds, if any: a success moves
/// its amount from reserved to paid (the invoice is `paid` once nothing is
/// owed), a failure gives it back; other outcomes change nothing.
pub fn push_settle<'q>(q: &mut Builder<'q>, op: &'q OperationRow, to: OpStatus, now: DateTime<Utc>) -> bool {
    let (Some(payee), Some(number)) = (op.invoice_payee_id.as_deref(), op.invoice_number.as_deref()) else {
        return false;
    };
    let amount = op.amount_minor as i64;
    match to {
        OpStatus::Succeeded => {
            q.push("UPDATE invoices SET reserved_minor = reserved_minor - ").push_bind(amount);
            q.push(", paid_minor = paid_minor + ").push_bind(amount);
            q.push(", status = CASE WHEN paid_minor + ").push_bind(amount);
            q.push(" >= amount_minor THEN 'paid' ELSE status END");
        }
        OpStatus::Failed | OpStatus::TooLate => {
            q.push("UPDATE invoices SET reserved_minor = reserved_minor - ").push_bind(amount);
        }
        _ => return false,
    }
    q.push(", updated_at = ").push_bind(ts(now));
    q.push(" WHERE tenant_id = ").push_bind(op.tenant_id.as_str()).push(" AND payee_id = ").push_bind(payee);
    q.push(" AND number = ").push_bind(number);
    true
}

/// [`push_settle`] as a statement of its own.
pub async fn settle(conn: &mut Conn, op: &OperationRow, to: OpStatus, now: DateTime<Utc>) -> Result<()> {
    let mut q = Builder::new("");
    if push_settle(&mut q, op, to, now) {
        q.build().execute(conn).await?;
    }
    Ok(())
}

/// A transfer that paid `op`'s invoice came back (reversed): `amount` is owed
/// again, and the invoice is open again if it was paid.
pub async fn unpay(conn: &mut Conn, op: &OperationRow, amount: u64, now: DateTime<Utc>) -> Result<()> {
    let (Some(payee), Some(number)) = (op.invoice_payee_id.as_deref(), op.invoice_number.as_deref()) else {
        return Ok(());
    };
    let amount = amount as i64;
    query(
        "UPDATE invoices SET paid_minor = CASE WHEN paid_minor > ? THEN paid_minor - ? ELSE 0 END,
             status = CASE WHEN status = 'paid' THEN 'open' ELSE status END, updated_at = ?
         WHERE tenant_id = ? AND payee_id = ? AND number = ?",
    )
    .bind(amount)
    .bind(amount)
    .bind(ts(now))
    .bind(op.tenant_id.as_str())
    .bind(payee)
    .bind(number)
    .execute(conn)
    .await?;
    Ok(())
}

/// The open invoices owed to `from` now owe `to` (a payee's verified change
/// of bank account); returns how many moved.
pub async fn move_open(conn: &mut Conn, tenant: &str, from: &str, to: &str, now: DateTime<Utc>) -> Result<u64> {
    let done = query(
        "UPDATE invoices SET payee_id = ?, updated_at = ?
         WHERE tenant_id = ? AND payee_id = ? AND status = 'open'
           AND NOT EXISTS (SELECT 1 FROM invoices i2 WHERE i2.tenant_id = invoices.tenant_id
                             AND i2.payee_id = ? AND i2.number = invoices.number)",
    )
    .bind(to)
    .bind(ts(now))
    .bind(tenant)
    .bind(from)
    .bind(to)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// What an invoice search asks for; every filter is optional but the tenant.
#[derive(Debug, Clone, Default)]
pub struct Search<'a> {
    pub tenant_id: &'a str,
    /// `open`, `paid`, `void`; `None`: any.
    pub status: Option<&'a str>,
    pub payee_id: Option<&'a str>,
    pub number: Option<&'a str>,
    /// Vendor names containing this, case-insensitive (ASCII).
    pub vendor: Option<&'a str>,
    /// Due on or before this day (`YYYY-MM-DD`).
    pub due_before: Option<&'a str>,
    /// Only these purposes (the asking agent's own): row-level scope.
    pub purposes: &'a [&'a str],
    /// After this (due date, payee, number), for the next page.
    pub after: Option<(&'a str, &'a str, &'a str)>,
    pub limit: u32,
}

/// Invoices by due date (then payee and number), at most `limit` and
/// whether more follow.
pub async fn search(pool: &Pool, s: &Search<'_>) -> Result<(Vec<InvoiceRow>, bool)> {
    if s.purposes.is_empty() {
        return Ok((Vec::new(), false));
    }
    let mut q = Builder::new("SELECT * FROM invoices WHERE tenant_id = ");
    q.push_bind(s.tenant_id).push(" AND purpose IN (").push_list(s.purposes.iter().copied()).push(")");
    if let Some(status) = s.status {
        q.push(" AND status = ").push_bind(status);
    }
    if let Some(payee) = s.payee_id {
        q.push(" AND payee_id = ").push_bind(payee);
    }
    if let Some(number) = s.number {
        q.push(" AND number = ").push_bind(number);
    }
    if let Some(vendor) = s.vendor {
        let pattern = format!("%{}%", vendor.to_ascii_lowercase().replace(['%', '_', '\\'], ""));
        q.push(" AND LOWER(vendor_name) LIKE ").push_bind(pattern);
    }
    if let Some(due) = s.due_before {
        q.push(" AND due_date <= ").push_bind(due);
    }
    if let Some((due, payee, number)) = s.after {
        q.push(" AND (due_date > ").push_bind(due);
        q.push(" OR (due_date = ").push_bind(due).push(" AND payee_id > ").push_bind(payee).push(")");
        q.push(" OR (due_date = ").push_bind(due).push(" AND payee_id = ").push_bind(payee);
        q.push(" AND number > ").push_bind(number).push("))");
    }
    q.push(" ORDER BY due_date, payee_id, number LIMIT ").push_bind(i64::from(s.limit) + 1);
    let mut rows: Vec<InvoiceRow> = q.build().fetch_all(pool).await?.iter().map(Row::decode).collect::<Result<_>>()?;
    let more = rows.len() > s.limit as usize;
    rows.truncate(s.limit as usize);
    Ok((rows, more))
}

/// How many invoices `tenant` has registered.
pub async fn count(pool: &Pool, tenant: &str) -> Result<i64> {
    Ok(scalar("SELECT COUNT(*) FROM invoices WHERE tenant_id = ?").bind(tenant).fetch_one(pool).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn seed(db: &crate::store::Db) {
        let mut tx = db.begin().await.unwrap();
        query("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 't1', '2026-01-01T00:00:00.000Z')")
            .execute(&mut *tx)
            .await
            .unwrap();
        let at = "2026-01-01T00:00:00Z".parse().unwrap();
        insert(
            &mut tx,
            &NewInvoice {
                tenant_id: "t1",
                payee_id: "ba_vendor0001",
                number: "INV-1",
                vendor_name: "Vendor Ltd",
                amount_minor: 10_000,
                currency: "USD",
                due_date: "2026-02-01",
                status: "open",
                purpose: "vendor",
                paid_minor: 1_000,
                note: None,
                vendor_memo: None,
                import_id: "imp_1",
                now: at,
            },
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    const KEY: InvoiceKey<'static> = InvoiceKey { tenant_id: "t1", payee_id: "ba_vendor0001", number: "INV-1" };

    #[tokio::test]
    async fn a_reservation_takes_at_most_the_open_balance_read_in_the_same_statement() {
        for db in crate::store::test_pg::each_backend("invoice_reservation_within_the_open_balance").await {
            seed(&db).await;
            let backend = db.backend;
            let mut tx = db.begin().await.unwrap();
            assert!(!reserve(&mut tx, KEY, "USD", 9_001).await.unwrap(), "{backend}: above the open 9,000");
            assert!(!reserve(&mut tx, KEY, "EUR", 100).await.unwrap(), "{backend}: another currency");
            let other = InvoiceKey { payee_id: "ba_vendor0002", ..KEY };
            assert!(!reserve(&mut tx, other, "USD", 100).await.unwrap(), "{backend}: another payee's");
            assert!(reserve(&mut tx, KEY, "USD", 6_000).await.unwrap(), "{backend}: a part");
            assert!(!reserve(&mut tx, KEY, "USD", 3_001).await.unwrap(), "{backend}: one unit over what is left");
            assert!(reserve(&mut tx, KEY, "USD", 3_000).await.unwrap(), "{backend}: exactly the rest");
            let read = get(&mut *tx, KEY).await.unwrap().unwrap();
            assert_eq!((read.reserved_minor, read.open_minor()), (9_000, 0), "{backend}");
            // The table itself refuses more than the amount, whatever a statement tries.
            let over = query("UPDATE invoices SET reserved_minor = reserved_minor + 1").execute(&mut *tx).await;
            assert!(over.is_err(), "{backend}: the CHECK holds");
            tx.commit().await.unwrap();
            query("UPDATE invoices SET status = 'void'").execute(&db.write).await.unwrap();
            let mut tx = db.begin().await.unwrap();
            query("UPDATE invoices SET reserved_minor = 0").execute(&mut *tx).await.unwrap();
            assert!(!reserve(&mut tx, KEY, "USD", 1).await.unwrap(), "{backend}: a void invoice takes nothing");
        }
    }

    /// Two transactions reserving at once on PostgreSQL (two instances do):
    /// the second waits for the first's row, then reads the balance it left.
    #[tokio::test]
    async fn two_reservations_at_once_never_take_more_than_the_open_balance() {
        for db in crate::store::test_pg::each_backend("two_invoice_reservations_at_once").await {
            seed(&db).await;
            let backend = db.backend;
            let db = std::sync::Arc::new(db);
            let takes = (0..8).map(|_| {
                let db = db.clone();
                async move {
                    let mut tx = db.begin().await.unwrap();
                    let taken = reserve(&mut tx, KEY, "USD", 4_000).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    tx.commit().await.unwrap();
                    taken
                }
            });
            let taken = futures::future::join_all(takes).await.into_iter().filter(|t| *t).count();
            assert_eq!(taken, 2, "{backend}: 9,000 open holds two payments of 4,000");
            let read = get(&db.read, KEY).await.unwrap().unwrap();
            assert_eq!(read.reserved_minor, 8_000, "{backend}");
        }
    }
}
