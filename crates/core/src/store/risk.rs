//! What the risk signals read (`crate::intake::risk`): a payee's registry dates and
//! the proposals made to it before. Indexes: migrations 0010 and 0011.
//!
//! A page of proposals (the queue, the bulk page) asks the same questions of
//! each row: each question is one statement for the whole page, a
//! `UNION ALL` of one small indexed read per distinct payee (or payee and
//! invoice) of the page ([`union_of`]), from the indexes alone (migration
//! 0011); the answer of each row is then picked out of its payee's rows. A
//! page of one payee's proposals reads its history once, not once per row.

use chrono::{DateTime, Utc};

use super::{query, ts, Conn, Flag, Known, OptTimestamp, Pool, Result, Row, Timestamp, Unsigned};
use crate::domain::ProposalStatus;

/// When a payee was added, and when its details last changed.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PayeeDates {
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub details_changed_at: Option<DateTime<Utc>>,
    /// When it took over from another account (a verified change of bank
    /// account, migration 0040).
    #[sqlx(try_from = "OptTimestamp")]
    pub account_changed_at: Option<DateTime<Utc>>,
}

/// At most this many parts in one `UNION ALL` (SQLite's default limit on
/// compound selects is 500).
const PARTS_PER_STATEMENT: usize = 100;

/// `count` copies of `part`, a query whose select list starts with
/// `__k__ AS k`, each with its index for `__k__`, joined by `UNION ALL`: one
/// round trip for a page of small indexed reads. Each part is wrapped so its
/// own `ORDER BY`/`LIMIT` applies to it alone.
fn union_of(part: &str, count: usize) -> String {
    (0..count)
        .map(|k| format!("SELECT * FROM ({}) AS part{k}", part.replace("__k__", &k.to_string())))
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// The index of the ask a row of [`per_ask`] answers, within its statement.
#[derive(sqlx::FromRow)]
struct Asked {
    #[sqlx(try_from = "Unsigned<usize>")]
    k: usize,
}

/// Runs `part` once per ask (each ask's binds from `binds`, all text) in as
/// few statements as allowed; each row comes back with the index of its ask.
async fn per_ask<A, T>(
    pool: &Pool,
    part: &str,
    asks: &[A],
    binds: impl Fn(&A) -> Vec<String>,
    read: impl Fn(&Row) -> Result<T>,
) -> Result<Vec<(usize, T)>> {
    let mut found = Vec::new();
    for (offset, chunk) in asks.chunks(PARTS_PER_STATEMENT).enumerate() {
        let sql = union_of(part, chunk.len());
        let mut query = query(&sql);
        for value in chunk.iter().flat_map(&binds) {
            query = query.bind(value);
        }
        for r in query.fetch_all(pool).await? {
            let k = offset * PARTS_PER_STATEMENT + r.decode::<Asked>()?.k;
            found.push((k, read(&r)?));
        }
    }
    Ok(found)
}

/// The distinct keys of `asks`, in the order first asked, and for each ask
/// the index of its key among them.
fn distinct<A, K: PartialEq + Clone>(asks: &[A], key: impl Fn(&A) -> K) -> (Vec<K>, Vec<usize>) {
    let mut keys: Vec<K> = Vec::new();
    let of_ask = asks
        .iter()
        .map(|a| {
            let k = key(a);
            keys.iter().position(|known| *known == k).unwrap_or_else(|| {
                keys.push(k);
                keys.len() - 1
            })
        })
        .collect();
    (keys, of_ask)
}

/// The registry dates of each asked `(tenant, payee)`, in the order asked;
/// `None` for a payee no longer in the registry.
pub async fn payee_dates(pool: &Pool, asks: &[(&str, &str)]) -> Result<Vec<Option<PayeeDates>>> {
    let (payees, of_ask) = distinct(asks, |ask| *ask);
    let part = "SELECT __k__ AS k, created_at, details_changed_at, account_changed_at FROM payees
                WHERE tenant_id = ? AND id = ?";
    let rows =
        per_ask(pool, part, &payees, |(tenant, payee)| vec![(*tenant).to_owned(), (*payee).to_owned()], Row::decode)
            .await?;
    let mut found = vec![None; payees.len()];
    for (k, dates) in rows {
        found[k] = Some(dates);
    }
    Ok(of_ask.into_iter().map(|k| found[k].clone()).collect())
}

/// Another proposal to the same payee, as the signals and the detail page
/// show it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Earlier {
    pub id: String,
    pub agent_id: String,
    #[sqlx(try_from = "Known<ProposalStatus>")]
    pub status: ProposalStatus,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

const EARLIER: &str = "id, agent_id, status, amount_minor, currency, created_at";

/// One duplicate-invoice question: the tenant, the payee, the invoice id
/// and the proposal asking (left out of its own answer).
pub struct InvoiceAsk<'a> {
    pub tenant: &'a str,
    pub payee: &'a str,
    pub invoice_id: &'a str,
    pub except: &'a str,
}

/// For each ask, the other proposals for the same payee and invoice id: any
/// run, any agent, any status; oldest first, at most `limit`. One read per
/// distinct payee and invoice: its oldest `limit + 1` proposals hold each
/// asker's answer (all but the asker itself).
pub async fn same_invoice(pool: &Pool, asks: &[InvoiceAsk<'_>], limit: u32) -> Result<Vec<Vec<Earlier>>> {
    let (invoices, of_ask) = distinct(asks, |a| (a.tenant, a.payee, a.invoice_id));
    let part = format!(
        "SELECT __k__ AS k, {EARLIER} FROM proposals
         WHERE tenant_id = ? AND payee_id = ? AND invoice_id = ?
         ORDER BY created_at, id LIMIT {}",
        u64::from(limit) + 1
    );
    let rows = per_ask(
        pool,
        &part,
        &invoices,
        |(tenant, payee, invoice_id)| [*tenant, *payee, *invoice_id].map(str::to_owned).to_vec(),
        Row::decode,
    )
    .await?;
    let mut found: Vec<Vec<Earlier>> = invoices.iter().map(|_| Vec::new()).collect();
    for (k, row) in rows {
        found[k].push(row);
    }
    // A compound select does not promise to keep its parts' order.
    for rows in &mut found {
        rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    }
    Ok(asks
        .iter()
        .zip(of_ask)
        .map(|(ask, k)| found[k].iter().filter(|e| e.id != ask.except).take(limit as usize).cloned().collect())
        .collect())
}

/// The PostgreSQL advisory lock seed that names an invoice's lock.
const INVOICE_LOCK: i64 = 0x436f_756e_7465_7202;

/// The other proposals for `ask`'s payee and invoice, oldest first, at most
/// `limit`, read inside a write transaction. On PostgreSQL the invoice's
/// lock is taken first (held to the end of the transaction), so two
/// transactions storing copies of one invoice each read the other's once
/// it committed; SQLite's one writer does so already.
pub async fn same_invoice_in(conn: &mut Conn, ask: &InvoiceAsk<'_>, limit: u32) -> Result<Vec<Earlier>> {
    if conn.is_postgres() {
        let key = format!("{}\n{}\n{}", ask.tenant, ask.payee, ask.invoice_id);
        query("SELECT pg_advisory_xact_lock(hashtextextended(?, ?))")
            .bind(key)
            .bind(INVOICE_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    let rows = query(format!(
        "SELECT {EARLIER} FROM proposals WHERE tenant_id = ? AND payee_id = ? AND invoice_id = ? AND id <> ?
         ORDER BY created_at, id LIMIT ?"
    ))
    .bind(ask.tenant)
    .bind(ask.payee)
    .bind(ask.invoice_id)
    .bind(ask.except)
    .bind(i64::from(limit))
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// The payee's proposals created before `before` (this proposal's
/// creation), newest first, at most `limit`: the detail page lists them.
pub async fn payee_history(
    pool: &Pool,
    tenant: &str,
    payee: &str,
    before: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Earlier>> {
    let rows = query(format!(
        "SELECT {EARLIER} FROM proposals WHERE tenant_id = ? AND payee_id = ? AND created_at < ?
         ORDER BY created_at DESC, id DESC LIMIT ?"
    ))
    .bind(tenant)
    .bind(payee)
    .bind(ts(before))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// One history question: the payee's last proposals before `before`, read
/// for amounts in `currency`.
#[derive(Clone, Copy)]
pub struct HistoryAsk<'a> {
    pub tenant: &'a str,
    pub payee: &'a str,
    pub before: DateTime<Utc>,
    pub currency: &'a str,
}

/// What the amount and first-payment signals need of a payee's last
/// proposals before one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistorySummary {
    /// Whether any of them is in one of the `paid` statuses.
    pub any_paid: bool,
    /// The amounts of those that succeeded in the asked currency, newest first.
    pub succeeded: Vec<u64>,
}

/// A proposal in a payee's history, as [`history_summaries`] reads it.
struct HistoryRow {
    status: ProposalStatus,
    currency: String,
    amount_minor: u64,
    /// As stored: compared with the asks' instants as text, as SQL does.
    created_at: String,
    id: String,
}

/// A payee's proposals in [`history_summaries`]' joined text (NULL: none).
#[derive(sqlx::FromRow)]
struct History {
    history: Option<String>,
}

/// One payee's history read: whose, and its asks' earliest and latest
/// instants (as stored text).
struct PayeeSpan<'a> {
    tenant: &'a str,
    payee: &'a str,
    earliest: &'a str,
    latest: &'a str,
}

/// One proposal of [`history_summaries`]' joined text: `created_at id
/// status currency amount`.
fn history_row(item: &str) -> Result<HistoryRow> {
    let corrupt = || super::StoreError::corrupt("history", "not a history item");
    let mut fields = item.split(' ');
    let mut next = || fields.next().ok_or_else(corrupt);
    let (created_at, id, status, currency, amount) = (next()?, next()?, next()?, next()?, next()?);
    Ok(HistoryRow {
        status: ProposalStatus::parse(status).ok_or_else(corrupt)?,
        currency: currency.to_owned(),
        amount_minor: amount.parse().map_err(|e| super::StoreError::corrupt("amount_minor", e))?,
        created_at: created_at.to_owned(),
        id: id.to_owned(),
    })
}

/// For each ask, a summary of the payee's last `window` proposals before
/// it (`created_at`, then id, newest first), from the index alone
/// (migration 0011). One read per distinct payee: its proposals from the
/// `window`-th before its earliest ask up to its latest ask, newest first,
/// at most `window` × the number of asks (what one read per ask would
/// visit); each ask's window is picked out of them. An ask whose window
/// that cap cut off is read on its own ([`summaries_per_ask`]).
pub async fn history_summaries(
    pool: &Pool,
    asks: &[HistoryAsk<'_>],
    window: u32,
    paid: &[ProposalStatus],
) -> Result<Vec<HistorySummary>> {
    if window == 0 || asks.is_empty() {
        return Ok(vec![HistorySummary::default(); asks.len()]);
    }
    let before: Vec<String> = asks.iter().map(|a| ts(a.before)).collect();
    let (payees, of_ask) = distinct(asks, |a| (a.tenant, a.payee));
    // Each payee's earliest and latest ask.
    let mut spans: Vec<Option<(&str, &str)>> = vec![None; payees.len()];
    for (k, at) in of_ask.iter().zip(&before) {
        let span = spans[*k].get_or_insert((at, at));
        span.0 = span.0.min(at);
        span.1 = span.1.max(at);
    }
    let asked: Vec<PayeeSpan> = payees
        .iter()
        .zip(spans)
        .map(|((tenant, payee), span)| {
            let (earliest, latest) = span.unwrap_or_default();
            PayeeSpan { tenant, payee, earliest, latest }
        })
        .collect();
    let cap = u64::from(window) * asks.len() as u64;
    // One row per payee, its proposals joined in one text (each a row's
    // round trip between the connection's thread and ours, hundreds on a
    // busy payee's page, cost more than the read); in any order: they are
    // sorted here.
    let item = "created_at || ' ' || id || ' ' || status || ' ' || currency || ' ' || CAST(amount_minor AS TEXT)";
    let joined = pool.joined(item);
    let part = format!(
        "SELECT __k__ AS k, {joined} AS history FROM (
             SELECT created_at, id, status, currency, amount_minor FROM proposals
             WHERE tenant_id = ? AND payee_id = ? AND created_at < ?
               AND created_at >= COALESCE((SELECT created_at FROM proposals
                   WHERE tenant_id = ? AND payee_id = ? AND created_at < ?
                   ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET {}), '')
             ORDER BY created_at DESC, id DESC LIMIT {cap}) AS range_rows",
        window - 1
    );
    let parts = per_ask(
        pool,
        &part,
        &asked,
        |p| [p.tenant, p.payee, p.latest, p.tenant, p.payee, p.earliest].map(str::to_owned).to_vec(),
        |r| r.decode::<History>().map(|h| h.history),
    )
    .await?;
    let rows = parts.into_iter().flat_map(|(k, history)| {
        history
            .unwrap_or_default()
            .split(';')
            .filter(|i| !i.is_empty())
            .map(|i| (k, history_row(i)))
            .collect::<Vec<_>>()
    });
    let mut found: Vec<Vec<HistoryRow>> = payees.iter().map(|_| Vec::new()).collect();
    for (k, row) in rows {
        found[k].push(row?);
    }
    // Newest first (a compound select does not promise its parts' order);
    // as bytes, as SQLite and PostgreSQL (collation C) compare text.
    for rows in &mut found {
        rows.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    }
    let mut summaries = Vec::with_capacity(asks.len());
    let mut cut_off = Vec::new();
    for (i, (ask, k)) in asks.iter().zip(&of_ask).enumerate() {
        let rows = &found[*k];
        let window_rows: Vec<&HistoryRow> =
            rows.iter().filter(|r| r.created_at < before[i]).take(window as usize).collect();
        if window_rows.len() < window as usize && rows.len() as u64 >= cap {
            cut_off.push(i);
        }
        summaries.push(HistorySummary {
            any_paid: window_rows.iter().any(|r| paid.contains(&r.status)),
            succeeded: window_rows
                .iter()
                .filter(|r| r.status == ProposalStatus::Succeeded && r.currency == ask.currency)
                .map(|r| r.amount_minor)
                .collect(),
        });
    }
    if !cut_off.is_empty() {
        let alone: Vec<HistoryAsk> = cut_off.iter().map(|&i| asks[i]).collect();
        for (i, summary) in cut_off.into_iter().zip(summaries_per_ask(pool, &alone, window, paid).await?) {
            summaries[i] = summary;
        }
    }
    Ok(summaries)
}

/// One ask's window in [`summaries_per_ask`]: whether any is paid, and the
/// succeeded amounts in the asked currency joined by `,` (NULL: none).
#[derive(sqlx::FromRow)]
struct Window {
    #[sqlx(try_from = "Flag")]
    any_paid: bool,
    amounts: Option<String>,
}

/// [`history_summaries`] one ask at a time: one row per ask, summed up in
/// SQL from the index alone (migration 0011). For the asks whose window the
/// payee's rows read at once did not hold.
async fn summaries_per_ask(
    pool: &Pool,
    asks: &[HistoryAsk<'_>],
    window: u32,
    paid: &[ProposalStatus],
) -> Result<Vec<HistorySummary>> {
    // Status names are the enum's own constants, never input.
    let paid: Vec<String> = paid.iter().map(|s| format!("'{}'", s.as_str())).collect();
    let paid = if paid.is_empty() { "NULL".to_owned() } else { paid.join(", ") };
    let succeeded = ProposalStatus::Succeeded.as_str();
    // The amounts newest first: SQLite's group_concat keeps the order of
    // its input, PostgreSQL's string_agg takes its own ORDER BY.
    let amount = format!("CASE WHEN status = '{succeeded}' AND currency = ? THEN amount_minor END");
    let amounts = if pool.is_postgres() {
        format!("string_agg(({amount})::text, ',' ORDER BY created_at DESC, id DESC)")
    } else {
        format!("group_concat({amount})")
    };
    let part = format!(
        "SELECT __k__ AS k, COALESCE(MAX(CASE WHEN status IN ({paid}) THEN 1 ELSE 0 END), 0) AS any_paid,
             {amounts} AS amounts
         FROM (SELECT status, currency, amount_minor, created_at, id FROM proposals
               WHERE tenant_id = ? AND payee_id = ? AND created_at < ?
               ORDER BY created_at DESC, id DESC LIMIT {window}) AS window_rows"
    );
    let rows = per_ask(
        pool,
        &part,
        asks,
        |a| vec![a.currency.to_owned(), a.tenant.to_owned(), a.payee.to_owned(), ts(a.before)],
        |r| {
            let Window { any_paid, amounts } = r.decode()?;
            let succeeded = amounts
                .unwrap_or_default()
                .split(',')
                .filter(|a| !a.is_empty())
                .map(|a| a.parse::<u64>().map_err(|e| super::StoreError::corrupt("amount_minor", e)))
                .collect::<Result<Vec<u64>>>()?;
            Ok(HistorySummary { any_paid, succeeded })
        },
    )
    .await?;
    let mut found = vec![HistorySummary::default(); asks.len()];
    for (k, summary) in rows {
        found[k] = summary;
    }
    Ok(found)
}

/// The PostgreSQL advisory lock seed that names a payee's split window.
const SPLIT_LOCK: i64 = 0x436f_756e_7465_7203;

/// The other transfers to `payee` in `currency` made since `since` that
/// still stand (neither rejected, cancelled, expired nor failed), oldest
/// first, read inside a write transaction. On PostgreSQL the payee's lock
/// (per currency) is taken first and held to the end of the transaction,
/// so two transactions storing payments to one payee each read the other's
/// once it committed; SQLite's one writer does so already.
pub async fn same_payee_since_in(
    conn: &mut Conn,
    tenant: &str,
    payee: &str,
    currency: &str,
    since: DateTime<Utc>,
    except: &str,
) -> Result<Vec<Earlier>> {
    if conn.is_postgres() {
        let key = format!("{tenant}\n{payee}\n{currency}");
        query("SELECT pg_advisory_xact_lock(hashtextextended(?, ?))")
            .bind(key)
            .bind(SPLIT_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    let rows = query(format!(
        "SELECT {EARLIER} FROM proposals WHERE tenant_id = ? AND payee_id = ? AND created_at >= ? AND id <> ?
           AND currency = ? AND kind = 'transfer' AND status NOT IN ('rejected', 'cancelled', 'expired', 'failed')
         ORDER BY created_at, id LIMIT 200"
    ))
    .bind(tenant)
    .bind(payee)
    .bind(ts(since))
    .bind(except)
    .bind(currency)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Whether any transfer to `payee` made at or after `since` was approved
/// or paid (the first payment after a change of bank account is the one
/// made while none was).
pub async fn approved_since(pool: &Pool, tenant: &str, payee: &str, since: DateTime<Utc>) -> Result<bool> {
    let found: Option<i64> = super::scalar(
        "SELECT 1 FROM proposals WHERE tenant_id = ? AND payee_id = ? AND created_at >= ? AND kind = 'transfer'
           AND status IN ('approved', 'executing', 'succeeded', 'unknown', 'needs_review', 'reversed') LIMIT 1",
    )
    .bind(tenant)
    .bind(payee)
    .bind(ts(since))
    .fetch_optional(pool)
    .await?;
    Ok(found.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::proposals::tests::{sample, setup};
    use crate::store::proposals::{insert, NewProposal};
    use chrono::Duration;

    #[tokio::test]
    async fn a_page_of_history_questions_is_answered_per_ask() {
        for db in setup("a_page_of_history_questions_is_answered_per_ask").await {
            let t0 = Utc::now() - Duration::days(1);
            let mut c = db.write.acquire().await.unwrap();
            // Oldest first: four succeeded USD amounts, one EUR, one failed.
            let made = [
                ("p_a", 400, "USD", ProposalStatus::Succeeded),
                ("p_b", 100, "USD", ProposalStatus::Succeeded),
                ("p_c", 999, "EUR", ProposalStatus::Succeeded),
                ("p_d", 300, "USD", ProposalStatus::Succeeded),
                ("p_e", 200, "USD", ProposalStatus::Succeeded),
                ("p_f", 50, "USD", ProposalStatus::Failed),
            ];
            for (i, (id, amount, currency, status)) in made.into_iter().enumerate() {
                let at = t0 + Duration::minutes(i as i64);
                let p = NewProposal { id, amount_minor: amount, currency, status, ..sample(at) };
                insert(&mut c, &NewProposal { run_id: id, ..p }).await.unwrap();
            }
            drop(c);
            let paid = [ProposalStatus::Succeeded];
            let ask = |before, currency| HistoryAsk { tenant: "t", payee: "ba_x", before, currency };
            let asks = [
                ask(Utc::now() + Duration::minutes(1), "USD"),
                ask(t0, "USD"),
                ask(Utc::now() + Duration::minutes(1), "EUR"),
                ask(t0 + Duration::seconds(90), "USD"),
            ];
            let got = history_summaries(&db.read, &asks, 50, &paid).await.unwrap();
            let summary = |any_paid, succeeded: &[u64]| HistorySummary { any_paid, succeeded: succeeded.to_vec() };
            let mut amounts = got[0].succeeded.clone();
            amounts.sort_unstable();
            assert_eq!(amounts, [100, 200, 300, 400], "USD, succeeded: {:?}", got[0]);
            assert!(got[0].any_paid);
            assert_eq!(got[1], summary(false, &[]), "nothing before the first");
            assert_eq!(got[2], summary(true, &[999]), "in its own currency");
            let mut before = got[3].succeeded.clone();
            before.sort_unstable();
            assert_eq!((got[3].any_paid, before), (true, vec![100, 400]), "only what came before");
            // The window: the last three before now are pending, failed, 200.
            let windowed = history_summaries(&db.read, &asks[..1], 3, &paid).await.unwrap();
            assert_eq!(windowed[0], summary(true, &[200]));
            let none_paid = history_summaries(&db.read, &asks[..1], 2, &paid).await.unwrap();
            assert_eq!(none_paid[0], summary(false, &[]), "pending and failed only");
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn a_payees_rows_read_once_answer_each_ask_as_its_own_read_would() {
        for db in setup("a_payees_rows_read_once_answer_each_ask").await {
            let t0 = Utc::now() - Duration::days(1);
            let mut c = db.write.acquire().await.unwrap();
            // Two payees; ties in time; statuses and currencies mixed.
            let statuses = [ProposalStatus::Succeeded, ProposalStatus::Failed, ProposalStatus::Executing];
            let mut made = Vec::new();
            for i in 0..24u32 {
                let id = format!("p_{i:02}");
                let payee = if i % 3 == 0 { "ba_y" } else { "ba_x" };
                let at = t0 + Duration::minutes(i64::from(i / 2));
                made.push((id, payee, at, statuses[i as usize % 3], if i % 5 == 0 { "EUR" } else { "USD" }, i));
            }
            for (id, payee, at, status, currency, i) in &made {
                let p = NewProposal {
                    id,
                    run_id: id,
                    payee_id: payee,
                    status: *status,
                    currency,
                    amount_minor: 100 + u64::from(*i),
                    invoice_id: Some(if i % 2 == 0 { "INV-A" } else { "INV-B" }),
                    ..sample(*at)
                };
                insert(&mut c, &p).await.unwrap();
            }
            drop(c);
            let mut asks = Vec::new();
            for (_, payee, at, _, currency, i) in made.iter().filter(|m| m.5 % 4 == 1 || m.5 == 0) {
                asks.push(HistoryAsk {
                    tenant: "t",
                    payee,
                    before: *at,
                    currency: if i % 2 == 0 { "EUR" } else { currency },
                });
            }
            asks.push(HistoryAsk { tenant: "t", payee: "ba_none", before: Utc::now(), currency: "USD" });
            let paid = [ProposalStatus::Succeeded, ProposalStatus::Executing];
            // Small windows cut some asks off (read on their own), large
            // ones fit; both must answer as one read per ask does.
            for window in [0, 1, 2, 3, 5, 8, 50] {
                let got = history_summaries(&db.read, &asks, window, &paid).await.unwrap();
                let alone = summaries_per_ask(&db.read, &asks, window, &paid).await.unwrap();
                assert_eq!(got, alone, "window {window}");
            }
            assert!(summaries_per_ask(&db.read, &asks, 5, &paid)
                .await
                .unwrap()
                .iter()
                .any(|s| !s.succeeded.is_empty()));

            // The same invoice: each asker is left out of its own answer.
            let invoice_asks: Vec<InvoiceAsk> = ["p_00", "p_02", "p_04", "p_08"]
                .iter()
                .map(|id| InvoiceAsk { tenant: "t", payee: "ba_x", invoice_id: "INV-A", except: id })
                .chain([InvoiceAsk { tenant: "t", payee: "ba_y", invoice_id: "INV-B", except: "p_03" }])
                .collect();
            let found = same_invoice(&db.read, &invoice_asks, 2).await.unwrap();
            let ids = |k: usize| found[k].iter().map(|e| e.id.as_str()).collect::<Vec<_>>();
            // ba_x with INV-A, oldest first: p_02, p_04, p_08, ... (p_00 is ba_y's)
            assert_eq!(ids(0), ["p_02", "p_04"]);
            assert_eq!(ids(1), ["p_04", "p_08"], "itself left out");
            assert_eq!(ids(2), ["p_02", "p_08"]);
            assert_eq!(ids(3), ["p_02", "p_04"]);
            assert_eq!(ids(4), ["p_09", "p_15"], "ba_y with INV-B, itself (p_03) left out");
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn migration_0011_copies_invoice_ids_without_reporting_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let pool = crate::store::writer_pool(&tmp.path().join("countersign.db")).await.unwrap();
        let before_0011 = sqlx::migrate::Migrator {
            migrations: std::borrow::Cow::Owned(
                crate::store::MIGRATOR.migrations.iter().filter(|m| m.version < 11).cloned().collect(),
            ),
            ignore_missing: false,
            locking: true,
            no_tx: false,
        };
        before_0011.run(&pool).await.unwrap();
        let raw = pool.clone();
        let pool = Pool::Sqlite(pool);
        let canonical = |invoice: Option<&str>| {
            let mut c = serde_json::to_value(countersign_domain::fixtures::sample_transfer()).unwrap();
            c["invoice_id"] = invoice.map_or(serde_json::Value::Null, Into::into);
            c.to_string()
        };
        for sql in crate::store::proposals::tests::REGISTRY {
            query(sql).execute(&pool).await.unwrap();
        }
        for (id, invoice) in [("p_1", Some("INV-9")), ("p_2", None)] {
            query(
                "INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency,
                     payee_id, canonical_request, request_hash, policy, required_approvals, created_at, updated_at,
                     expires_at)
                 VALUES (?, 't', 'bot', ?, 'transfer', 'pending_approval', 100, 'USD', 'ba_x', ?, 'h', '{}', 1,
                     'x', 'x', 'x')",
            )
            .bind(id)
            .bind(id)
            .bind(canonical(invoice))
            .execute(&pool)
            .await
            .unwrap();
        }
        crate::store::MIGRATOR.run(&raw).await.unwrap();
        let copied: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT id, invoice_id FROM proposals ORDER BY id").fetch_all(&raw).await.unwrap();
        assert_eq!(copied, [("p_1".to_owned(), Some("INV-9".to_owned())), ("p_2".to_owned(), None)]);
        let logged: i64 = crate::store::scalar("SELECT COUNT(*) FROM change_log WHERE kind = 'proposal'")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(logged, 0, "the copy is not a change to each proposal");
        // The trigger is back: a real change is logged again.
        query("UPDATE proposals SET status = 'cancelled' WHERE id = 'p_2'").execute(&pool).await.unwrap();
        let logged: i64 = crate::store::scalar("SELECT COUNT(*) FROM change_log WHERE kind = 'proposal'")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(logged, 1);
    }
}
