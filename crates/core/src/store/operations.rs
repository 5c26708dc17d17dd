//! Durable operations (one per proposal) and daily budget reservations.
//! Status changes are compare-and-set; a reservation is a conditional UPDATE.

use chrono::{DateTime, Utc};

use super::guarded::Guarded;
use super::{query, scalar, ts, Builder, Conn, Exec, Int, Known, OptTimestamp, Pool, Result, Row, Timestamp, Unsigned};

pub use crate::domain::OpStatus;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OperationRow {
    pub id: String,
    pub proposal_id: String,
    pub jti: String,
    pub idempotency_key: String,
    pub tenant_id: String,
    pub kind: String,
    #[sqlx(try_from = "Known<OpStatus>")]
    pub status: OpStatus,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    pub budget_day: Option<String>,
    pub rail_reference: Option<String>,
    pub reverses: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub next_check_at: DateTime<Utc>,
    /// While in the future, a process is calling the rail for it ([`claim`]).
    #[sqlx(try_from = "OptTimestamp")]
    pub claimed_until: Option<DateTime<Utc>>,
    pub resolved_by: Option<String>,
    /// The rail it was submitted to (`None`: the default rail).
    pub rail: Option<String>,
    /// The registered invoice whose open balance it holds (migration 0039):
    /// its payee and number; `None` for none.
    pub invoice_payee_id: Option<String>,
    pub invoice_number: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
}

/// What `insert` needs; the operation starts `pending`.
#[derive(Debug, Clone)]
pub struct NewOperation<'a> {
    pub id: &'a str,
    pub proposal_id: &'a str,
    pub jti: &'a str,
    pub idempotency_key: &'a str,
    pub tenant_id: &'a str,
    pub kind: &'a str,
    pub amount_minor: u64,
    pub currency: &'a str,
    pub budget_day: Option<&'a str>,
    pub reverses: Option<&'a str>,
    pub now: DateTime<Utc>,
    /// The recording commit calls the rail until then: no reconciliation
    /// before (see [`claim`]).
    pub claimed_until: DateTime<Utc>,
    /// The invoice this transfer pays, held by it alone while it has not
    /// failed (migration 0027); `None` for a reversal, a transfer naming no
    /// invoice, and a copy its approvers confirmed as not a duplicate.
    pub invoice: Option<HeldInvoice<'a>>,
    /// The rail it goes to (`None`: the default rail).
    pub rail: Option<&'a str>,
    /// The registered invoice whose open balance it reserves in the same
    /// transaction (its amount), when the invoice is in the registry.
    pub reserves: Option<HeldInvoice<'a>>,
}

/// A tenant's invoice, as a transfer names it: the payee and the invoice id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldInvoice<'a> {
    pub payee_id: &'a str,
    pub invoice_id: &'a str,
}

/// Records `op` and returns it as stored (one statement); `None`, having
/// written nothing, when another operation of the tenant holds its invoice.
pub async fn insert(conn: &mut Conn, op: &NewOperation<'_>) -> Result<Option<OperationRow>> {
    let mut q = Builder::new("");
    push_insert(&mut q, op);
    q.build().fetch_optional(conn).await?.as_ref().map(Row::decode).transpose()
}

/// The proposal whose operation holds `invoice` in `tenant`, if one does.
pub async fn invoice_holder<'e>(
    db: impl Into<Exec<'e>>,
    tenant: &str,
    invoice: HeldInvoice<'_>,
) -> Result<Option<String>> {
    Ok(scalar("SELECT proposal_id FROM operations WHERE tenant_id = ? AND held_payee_id = ? AND held_invoice_id = ?")
        .bind(tenant)
        .bind(invoice.payee_id)
        .bind(invoice.invoice_id)
        .fetch_optional(db)
        .await?)
}

fn push_insert<'q>(q: &mut Builder<'q>, op: &NewOperation<'q>) {
    let now = ts(op.now);
    q.push(
        "INSERT INTO operations (id, proposal_id, jti, idempotency_key, tenant_id, kind, status, amount_minor,
             currency, budget_day, reverses, attempts, next_check_at, claimed_until, created_at, updated_at,
             held_payee_id, held_invoice_id, rail, invoice_payee_id, invoice_number)
         VALUES (",
    );
    q.push_list([op.id, op.proposal_id, op.jti, op.idempotency_key, op.tenant_id, op.kind]);
    q.push(", 'pending', ").push_bind(op.amount_minor as i64).push(", ").push_bind(op.currency);
    q.push(", ").push_bind(op.budget_day).push(", ").push_bind(op.reverses).push(", 0, ");
    q.push_list([now.clone(), ts(op.claimed_until), now.clone(), now]);
    q.push(", ").push_bind(op.invoice.map(|c| c.payee_id)).push(", ").push_bind(op.invoice.map(|c| c.invoice_id));
    q.push(", ").push_bind(op.rail);
    q.push(", ").push_bind(op.reserves.map(|r| r.payee_id)).push(", ").push_bind(op.reserves.map(|r| r.invoice_id));
    // Only the invoice's holder is given way to (any other conflict is an
    // error): the insert then writes and returns nothing. On PostgreSQL a
    // concurrent transaction holding it is waited for, then given way to.
    q.push(
        ") ON CONFLICT (tenant_id, held_payee_id, held_invoice_id) WHERE held_invoice_id IS NOT NULL
         DO NOTHING RETURNING *",
    );
}

/// Step 5 of a commit (`crate::commit`) on SQLite, as one command
/// (`super::guarded`): everything it writes was read, made and signed
/// before its transaction opened, and each check the step-by-step
/// transaction makes between writes is a guard here.
pub struct RecordAtOnce<'a> {
    /// With `budget_day` set, the amount is reserved on that day's budget.
    pub operation: NewOperation<'a>,
    pub agent_id: &'a str,
    /// The proposal's account salts to keep (or the ones kept already).
    pub salt_fields: [&'a str; 2],
    pub salts: [[u8; 32]; 2],
    /// The newest entry about the proposal that may hold a receipt, as read
    /// when `entry`'s receipt was signed (0 for none).
    pub receipt_seen: i64,
    /// `operation.created`, its receipt signed.
    pub entry: &'a super::audit::AuditEntry,
}

impl<'a> RecordAtOnce<'a> {
    /// The command (its audit entry is linked when it runs).
    pub fn plan(&'a self) -> AtOnce<'a> {
        let op = &self.operation;
        let mut g = Guarded::new();
        g.guard("no freeze stops it", |q| {
            q.push("NOT EXISTS (SELECT 1 FROM freezes WHERE ");
            super::freezes::push_blocking(q, op.tenant_id, self.agent_id);
            q.push(")");
        });
        g.statement(|q| push_use_token(q, op.jti, op.proposal_id, op.now)).changed_one("the token was unused");
        if let Some(day) = op.budget_day {
            g.statement(|q| push_reserve(q, op.tenant_id, op.currency, day, op.amount_minor))
                .changed_one("within the daily budget");
        }
        if let Some(invoice) = op.reserves {
            let key = super::invoices::InvoiceKey {
                tenant_id: op.tenant_id,
                payee_id: invoice.payee_id,
                number: invoice.invoice_id,
            };
            g.statement(|q| super::invoices::push_reserve(q, key, op.currency, op.amount_minor))
                .changed_one("within the invoice open balance");
        }
        g.statement(|q| {
            super::proposals::push_transition(
                q,
                op.proposal_id,
                &[crate::domain::ProposalStatus::Approved],
                crate::domain::ProposalStatus::Executing,
                op.now,
            )
        })
        .changed_one("still approved");
        super::evidence::keep_at_once(&mut g, op.proposal_id, self.salt_fields, &self.salts);
        g.guard("no receipt since", |q| {
            super::audit::push_receipt_seen(q, op.proposal_id, self.receipt_seen);
        });
        g.statement(|q| push_insert(q, op)).changed_one("the invoice is not held");
        g.append_last(self.entry);
        AtOnce { g }
    }
}

/// [`RecordAtOnce`]'s command, ready to run.
pub struct AtOnce<'a> {
    g: Guarded<'a>,
}

impl AtOnce<'_> {
    /// Runs and commits on `writer` (SQLite's): the operation as stored and
    /// the number of its audit entry, or `None` when a guard did not hold
    /// or this process knows no head of the audit chain (nothing it wrote
    /// stands).
    pub async fn commit(self, writer: &Pool) -> Result<Option<(OperationRow, i64)>> {
        let Some(super::guarded::Committed { rows, appended: Some(seq) }) = self.g.commit(writer).await? else {
            return Ok(None);
        };
        let op = rows.last().ok_or_else(|| super::StoreError::corrupt("operations", "the insert returned no row"))?;
        Ok(Some((op.decode()?, seq)))
    }
}

/// The operation of a proposal, on a pool or inside a transaction.
pub async fn for_proposal<'e>(db: impl Into<Exec<'e>>, proposal_id: &str) -> Result<Option<OperationRow>> {
    let row = query("SELECT * FROM operations WHERE proposal_id = ?").bind(proposal_id).fetch_optional(db).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The operations of the given proposals (any order).
pub async fn for_proposals(pool: &Pool, ids: &[&str]) -> Result<Vec<OperationRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new("SELECT * FROM operations WHERE proposal_id IN (");
    q.push_list(ids.iter().copied());
    q.push(")");
    q.build().fetch_all(pool).await?.iter().map(Row::decode).collect()
}

/// The tenant's transfer operation that the rail knows as `rail_reference`.
pub async fn by_rail_reference<'e>(
    db: impl Into<Exec<'e>>,
    tenant: &str,
    rail_reference: &str,
) -> Result<Option<OperationRow>> {
    let row = query("SELECT * FROM operations WHERE tenant_id = ? AND rail_reference = ? AND kind = 'transfer'")
        .bind(tenant)
        .bind(rail_reference)
        .fetch_optional(db)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

pub async fn get<'e>(db: impl Into<Exec<'e>>, id: &str) -> Result<Option<OperationRow>> {
    let row = query("SELECT * FROM operations WHERE id = ?").bind(id).fetch_optional(db).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Open operations whose next check is due by `check_by` and that no
/// process has claimed at `now`, oldest first.
pub async fn due(pool: &Pool, check_by: DateTime<Utc>, now: DateTime<Utc>, limit: u32) -> Result<Vec<OperationRow>> {
    let rows = query(
        "SELECT * FROM operations WHERE status IN ('pending', 'accepted', 'unknown') AND next_check_at <= ?
           AND (claimed_until IS NULL OR claimed_until <= ?)
         ORDER BY next_check_at, id LIMIT ?",
    )
    .bind(ts(check_by))
    .bind(ts(now))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// A tenant's operations in one status, newest first.
pub async fn of_tenant(pool: &Pool, tenant: &str, status: OpStatus, limit: u32) -> Result<Vec<OperationRow>> {
    let rows = query("SELECT * FROM operations WHERE tenant_id = ? AND status = ? ORDER BY id DESC LIMIT ?")
        .bind(tenant)
        .bind(status.as_str())
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// The new state of an operation, written only if it is still in one of `from`.
#[derive(Debug, Clone, Default)]
pub struct Update<'a> {
    pub rail_reference: Option<&'a str>,
    pub error: Option<(&'a str, &'a str)>,
    pub resolved_by: Option<&'a str>,
    /// Counts a rail call.
    pub attempted: bool,
    pub next_check_at: Option<DateTime<Utc>>,
}

/// Compare-and-set: moves `id` from one of `from` to `to`. Returns whether it moved.
pub async fn set_status(
    conn: &mut Conn,
    id: &str,
    from: &[OpStatus],
    to: OpStatus,
    u: &Update<'_>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut q = Builder::new("");
    push_set_status(&mut q, id, from, to, u, now);
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// Writes [`set_status`]'s statement into `q`.
pub fn push_set_status<'q>(
    q: &mut Builder<'q>,
    id: &'q str,
    from: &[OpStatus],
    to: OpStatus,
    u: &Update<'_>,
    now: DateTime<Utc>,
) {
    q.push("UPDATE operations SET claimed_until = NULL, status = ");
    q.push_bind(to.as_str()).push(", updated_at = ").push_bind(ts(now));
    if let Some(r) = u.rail_reference {
        q.push(", rail_reference = ").push_bind(r.to_owned());
    }
    if let Some((code, message)) = u.error {
        q.push(", error_code = ").push_bind(code.to_owned()).push(", error_message = ").push_bind(message.to_owned());
    }
    if let Some(by) = u.resolved_by {
        q.push(", resolved_by = ").push_bind(by.to_owned());
    }
    if u.attempted {
        q.push(", attempts = attempts + 1");
    }
    if let Some(at) = u.next_check_at {
        q.push(", next_check_at = ").push_bind(ts(at));
    }
    if to == OpStatus::Failed {
        // The money did not move: the invoice is free for another copy.
        q.push(", held_payee_id = NULL, held_invoice_id = NULL");
    }
    q.push(" WHERE id = ").push_bind(id).push(" AND status IN (");
    q.push_list(from.iter().map(|f| f.as_str()));
    q.push(")");
}

/// Claims an open operation for one rail call until `until`, unless another
/// process holds it at `now`: the compare-and-set that lets one instance
/// only reconcile it. [`set_status`] and [`reschedule`] release the claim;
/// a process that dies holding it leaves it to lapse.
pub async fn claim(conn: &mut Conn, id: &str, now: DateTime<Utc>, until: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "UPDATE operations SET claimed_until = ?
         WHERE id = ? AND status IN ('pending', 'accepted', 'unknown') AND (claimed_until IS NULL OR claimed_until <= ?)",
    )
    .bind(ts(until))
    .bind(id)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Claims the open operations `ids` for a reconciliation pass until
/// `until`, each unless another process holds it at `now`, in one write:
/// the ids claimed. ([`claim`] for one; a pass claimed each with its own
/// write and its own `fsync` before, docs/BENCHMARKS.md "Commit latency".)
pub async fn claim_all(
    conn: &mut Conn,
    ids: &[&str],
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<std::collections::HashSet<String>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let mut q = Builder::new("UPDATE operations SET claimed_until = ");
    q.push_bind(ts(until)).push(" WHERE id IN (").push_list(ids.iter().copied());
    q.push(") AND status IN ('pending', 'accepted', 'unknown') AND (claimed_until IS NULL OR claimed_until <= ");
    q.push_bind(ts(now)).push(") RETURNING id");
    let rows = q.build().fetch_all(conn).await?;
    Ok(rows.iter().map(|row| row.try_get::<String>("id")).collect::<sqlx::Result<_>>()?)
}

/// When an open operation is checked next, and whether its check counts
/// as an attempt (see [`reschedule`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextCheck {
    pub id: String,
    pub at: DateTime<Utc>,
    pub attempted: bool,
}

/// [`reschedule`] for several operations in one write.
pub async fn reschedule_all(conn: &mut Conn, checks: &[NextCheck]) -> Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let mut q = Builder::new("UPDATE operations SET claimed_until = NULL, next_check_at = CASE id");
    for check in checks {
        q.push(" WHEN ").push_bind(check.id.as_str()).push(" THEN ").push_bind(ts(check.at));
    }
    q.push(" END, attempts = attempts + CASE id");
    for check in checks {
        q.push(" WHEN ").push_bind(check.id.as_str()).push(if check.attempted { " THEN 1" } else { " THEN 0" });
    }
    q.push(" END WHERE id IN (").push_list(checks.iter().map(|c| c.id.as_str())).push(")");
    q.build().execute(conn).await?;
    Ok(())
}

/// Postpones the next reconciliation check of an open operation (and
/// releases its claim).
pub async fn reschedule(conn: &mut Conn, id: &str, at: DateTime<Utc>, attempted: bool) -> Result<()> {
    let bump = if attempted { ", attempts = attempts + 1" } else { "" };
    query(format!("UPDATE operations SET claimed_until = NULL, next_check_at = ?{bump} WHERE id = ?"))
        .bind(ts(at))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Marks the approval token used. False when it was used already or is not
/// the proposal's (the `used_at IS NULL` compare-and-set makes it single use).
pub async fn use_token(conn: &mut Conn, jti: &str, proposal_id: &str, now: DateTime<Utc>) -> Result<bool> {
    let mut q = Builder::new("");
    push_use_token(&mut q, jti, proposal_id, now);
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

fn push_use_token<'q>(q: &mut Builder<'q>, jti: &'q str, proposal_id: &'q str, now: DateTime<Utc>) {
    q.push("UPDATE approval_tokens SET used_at = ").push_bind(ts(now));
    q.push(" WHERE jti = ").push_bind(jti).push(" AND proposal_id = ").push_bind(proposal_id);
    q.push(" AND used_at IS NULL");
}

/// The daily limit of a tenant for a currency, if one is set.
pub async fn daily_limit(conn: &mut Conn, tenant: &str, currency: &str) -> Result<Option<u64>> {
    let limit: Option<i64> = scalar("SELECT daily_limit_minor FROM budgets WHERE tenant_id = ? AND currency = ?")
        .bind(tenant)
        .bind(currency)
        .fetch_optional(conn)
        .await?;
    Ok(limit.map(|l| l as u64))
}

/// What a tenant has reserved for a currency on a UTC day.
pub async fn reserved(conn: &mut Conn, tenant: &str, currency: &str, day: &str) -> Result<u64> {
    let reserved: Option<i64> =
        scalar("SELECT reserved_minor FROM budget_days WHERE tenant_id = ? AND currency = ? AND day = ?")
            .bind(tenant)
            .bind(currency)
            .bind(day)
            .fetch_optional(conn)
            .await?;
    Ok(reserved.unwrap_or(0) as u64)
}

/// Reserves `amount` on the day's budget if it stays within the tenant's
/// daily limit for the currency (none set: no limit). Returns false (and
/// changes nothing) when it would not. One statement: the limit is read in
/// it, so nothing can change between the check and the reservation.
pub async fn reserve(conn: &mut Conn, tenant: &str, currency: &str, day: &str, amount: u64) -> Result<bool> {
    let mut q = Builder::new("");
    push_reserve(&mut q, tenant, currency, day, amount);
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

fn push_reserve<'q>(q: &mut Builder<'q>, tenant: &'q str, currency: &'q str, day: &'q str, amount: u64) {
    let amount = amount as i64;
    let within = |q: &mut Builder<'q>| {
        q.push(" <= COALESCE((SELECT daily_limit_minor FROM budgets WHERE tenant_id = ").push_bind(tenant);
        q.push(" AND currency = ").push_bind(currency).push("), 9223372036854775807)");
    };
    q.push("INSERT INTO budget_days (tenant_id, currency, day, reserved_minor) SELECT ");
    q.push_list([tenant, currency, day]).push(", ").push_bind(amount).push(" WHERE ").push_bind(amount);
    within(q);
    q.push(" ON CONFLICT (tenant_id, currency, day) DO UPDATE SET reserved_minor = budget_days.reserved_minor + ");
    q.push_bind(amount).push(" WHERE budget_days.reserved_minor + ").push_bind(amount);
    within(q);
}

/// Gives a failed operation's reservation back to the day it was taken from.
pub async fn release(conn: &mut Conn, tenant: &str, currency: &str, day: &str, amount: u64) -> Result<()> {
    let mut q = Builder::new("");
    push_release(&mut q, tenant, currency, day, amount);
    q.build().execute(conn).await?;
    Ok(())
}

/// Writes [`release`]'s statement into `q`.
pub fn push_release<'q>(q: &mut Builder<'q>, tenant: &'q str, currency: &'q str, day: &'q str, amount: u64) {
    let amount = amount as i64;
    q.push("UPDATE budget_days SET reserved_minor = CASE WHEN reserved_minor > ").push_bind(amount);
    q.push(" THEN reserved_minor - ").push_bind(amount).push(" ELSE 0 END WHERE tenant_id = ").push_bind(tenant);
    q.push(" AND currency = ").push_bind(currency).push(" AND day = ").push_bind(day);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reservation_stays_within_the_daily_limit_read_in_the_same_statement() {
        for db in crate::store::test_pg::each_backend("reservation_within_the_daily_limit").await {
            let mut tx = db.begin().await.unwrap();
            for tenant in ["t1", "t2"] {
                query("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z')")
                    .bind(tenant)
                    .bind(tenant)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
            query("INSERT INTO budgets (tenant_id, currency, daily_limit_minor) VALUES ('t1', 'USD', 10000)")
                .execute(&mut *tx)
                .await
                .unwrap();
            let day = "2026-03-02";
            let backend = db.backend;
            assert!(!reserve(&mut tx, "t1", "USD", day, 10_001).await.unwrap(), "{backend}: above the limit alone");
            assert_eq!(reserved(&mut tx, "t1", "USD", day).await.unwrap(), 0, "{backend}: a refusal takes nothing");
            assert!(reserve(&mut tx, "t1", "USD", day, 6_000).await.unwrap(), "{backend}: the day's first");
            assert!(!reserve(&mut tx, "t1", "USD", day, 4_001).await.unwrap(), "{backend}: one unit over");
            assert!(reserve(&mut tx, "t1", "USD", day, 4_000).await.unwrap(), "{backend}: exactly the limit");
            assert_eq!(reserved(&mut tx, "t1", "USD", day).await.unwrap(), 10_000);
            assert!(reserve(&mut tx, "t1", "USD", "2026-03-03", 10_000).await.unwrap(), "{backend}: a new day");
            assert!(reserve(&mut tx, "t1", "EUR", day, 1_000_000).await.unwrap(), "{backend}: no EUR limit");
            assert!(reserve(&mut tx, "t2", "USD", day, 1_000_000).await.unwrap(), "{backend}: another tenant's");
            assert!(reserve(&mut tx, "t2", "USD", day, 1_000_000).await.unwrap(), "{backend}: and again, no limit");
            assert_eq!(reserved(&mut tx, "t2", "USD", day).await.unwrap(), 2_000_000);
            assert_eq!(reserved(&mut tx, "t1", "USD", day).await.unwrap(), 10_000, "{backend}: t1's day unchanged");
        }
    }
}
