//! What the risk signals read (`crate::risk`): a payee's registry dates and
//! the proposals made to it before. Indexes: migrations 0010 and 0011.
//!
//! A page of proposals (the queue, the bulk page) asks the same questions of
//! each row: each question is one statement for the whole page, a
//! `UNION ALL` of one small indexed read per row ([`union_of`]), and the
//! payee's history is summed up in SQL so a page reads one row per proposal,
//! not fifty, from the index alone (migration 0011).

use chrono::{DateTime, Utc};

use super::{query, ts, Cols, Pool, Result, Row};
use crate::domain::ProposalStatus;

/// When a payee was added, and when its details last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayeeDates {
    pub created_at: DateTime<Utc>,
    pub details_changed_at: Option<DateTime<Utc>>,
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
            let k = offset * PARTS_PER_STATEMENT + Cols::of(&r).unsigned("k")? as usize;
            found.push((k, read(&r)?));
        }
    }
    Ok(found)
}

/// The registry dates of each asked `(tenant, payee)`, in the order asked;
/// `None` for a payee no longer in the registry.
pub async fn payee_dates(pool: &Pool, asks: &[(&str, &str)]) -> Result<Vec<Option<PayeeDates>>> {
    let part = "SELECT __k__ AS k, created_at, details_changed_at FROM payees WHERE tenant_id = ? AND id = ?";
    let rows = per_ask(
        pool,
        part,
        asks,
        |(tenant, payee)| vec![(*tenant).to_owned(), (*payee).to_owned()],
        |r| {
            let c = Cols::of(r);
            Ok(PayeeDates { created_at: c.at("created_at")?, details_changed_at: c.opt_at("details_changed_at")? })
        },
    )
    .await?;
    let mut found = vec![None; asks.len()];
    for (k, dates) in rows {
        found[k] = Some(dates);
    }
    Ok(found)
}

/// Another proposal to the same payee, as the signals and the detail page
/// show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub id: String,
    pub agent_id: String,
    pub status: ProposalStatus,
    pub amount_minor: u64,
    pub currency: String,
    pub created_at: DateTime<Utc>,
}

fn earlier(r: &Row) -> Result<Earlier> {
    let c = Cols::of(r);
    Ok(Earlier {
        id: c.text("id")?,
        agent_id: c.text("agent_id")?,
        status: c.parse("status", ProposalStatus::parse)?,
        amount_minor: c.unsigned("amount_minor")?,
        currency: c.text("currency")?,
        created_at: c.at("created_at")?,
    })
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
/// run, any agent, any status; oldest first, at most `limit`.
pub async fn same_invoice(pool: &Pool, asks: &[InvoiceAsk<'_>], limit: u32) -> Result<Vec<Vec<Earlier>>> {
    let part = format!(
        "SELECT __k__ AS k, {EARLIER} FROM proposals
         WHERE tenant_id = ? AND payee_id = ? AND invoice_id = ? AND id <> ?
         ORDER BY created_at, id LIMIT {limit}"
    );
    let rows = per_ask(
        pool,
        &part,
        asks,
        |a| [a.tenant, a.payee, a.invoice_id, a.except].map(str::to_owned).to_vec(),
        earlier,
    )
    .await?;
    let mut found: Vec<Vec<Earlier>> = asks.iter().map(|_| Vec::new()).collect();
    for (k, row) in rows {
        found[k].push(row);
    }
    // A compound select does not promise to keep its parts' order.
    for rows in &mut found {
        rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    }
    Ok(found)
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
    rows.iter().map(earlier).collect()
}

/// One history question: the payee's last proposals before `before`, read
/// for amounts in `currency`.
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

/// For each ask, a summary of the payee's last `window` proposals before
/// it: one row per ask, read from the index alone (migration 0011).
pub async fn history_summaries(
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
            let c = Cols::of(r);
            let amounts = c.opt_text("amounts")?.unwrap_or_default();
            let succeeded = amounts
                .split(',')
                .filter(|a| !a.is_empty())
                .map(|a| a.parse::<u64>().map_err(|e| super::StoreError::corrupt("amount_minor", e)))
                .collect::<Result<Vec<u64>>>()?;
            Ok(HistorySummary { any_paid: c.flag("any_paid")?, succeeded })
        },
    )
    .await?;
    let mut found = vec![HistorySummary::default(); asks.len()];
    for (k, summary) in rows {
        found[k] = summary;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::proposals::tests::{sample, setup};
    use crate::store::proposals::{insert, NewProposal};
    use chrono::Duration;

    #[tokio::test]
    async fn a_page_of_history_questions_is_answered_per_ask_in_sql() {
        for db in setup("a_page_of_history_questions_is_answered_per_ask_in_sql").await {
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
