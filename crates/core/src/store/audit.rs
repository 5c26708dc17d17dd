//! The audit trail: append-only and hash-chained. Each entry carries the
//! hash of the previous one, so editing, deleting or reordering any entry
//! breaks the chain at that point, and `countersign audit verify` names it.
//!
//! Entries are written inside the same transaction as the change they
//! record. On SQLite (one writer) each is linked as it is written. On
//! PostgreSQL a transaction that finds the chain's lock free links them
//! itself and keeps the lock to its commit; one that finds it taken writes
//! them to `audit_pending` and, right after it commits, links every
//! committed pending entry in one short transaction under the lock
//! ([`link`]): several instances' writes never wait for each other's
//! commits, only for that brief linking. Account numbers are masked by the
//! callers' types (`Display` of `SourceAccount` / `PayeeId`); secrets are
//! never passed in.

use chrono::DateTime;
use chrono::Utc;
use serde::Serialize;
use serde_json::{json, Value};
#[cfg(not(test))]
use std::sync::Mutex;

use super::{query, ts, Builder, Conn, Int, Json, Pool, Result, Row, Timestamp};
use crate::domain::jcs;

pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// One thing that happened.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEntry {
    pub tenant_id: Option<String>,
    /// `agent:<id>`, `user:<id>`, `policy:<rule>`, `system:<task>` or `cli`.
    pub actor: String,
    /// e.g. `proposal.created`, `proposal.expired`, `registry.agent.created`.
    pub action: String,
    pub proposal_id: Option<String>,
    pub request_hash: Option<String>,
    /// Anything else worth keeping: statuses, policy decision, ids. No secrets.
    pub data: Value,
}

fn entry_hash(seq: i64, at: &str, e: &AuditEntry, prev_hash: &str) -> String {
    crate::platform::digest::sha256_prefixed(body_bytes(seq, at, e, prev_hash))
}

/// The bytes an entry's hash covers: the canonical JSON (RFC 8785) of its
/// number, time, content and the previous entry's hash. They are also the
/// entry's leaf in the transparency log (`tlog`).
pub(crate) fn body_bytes(seq: i64, at: &str, e: &AuditEntry, prev_hash: &str) -> Vec<u8> {
    let body = json!({
        "seq": seq,
        "at": at,
        "tenant_id": e.tenant_id,
        "actor": e.actor,
        "action": e.action,
        "proposal_id": e.proposal_id,
        "request_hash": e.request_hash,
        "data": e.data,
        "prev_hash": prev_hash,
    });
    jcs::to_vec(&body).expect("audit entries hold only integers")
}

/// The PostgreSQL advisory lock key that serializes linking into the chain
/// (and, as the seed of a hash, names each payment's receipt lock).
const AUDIT_LOCK: i64 = 0x436f_756e_7465_7201;

/// Pending entries linked per statement (PostgreSQL).
const LINK_BATCH: i64 = 1000;

/// How long an entry may wait in `audit_pending` before [`verify`] calls it
/// a failure: it is linked right after its transaction commits, or by the
/// transparency log's next pass (every second) if that failed.
pub const LINK_GRACE: chrono::Duration = chrono::Duration::seconds(60);

/// The chain's head as this process last wrote or read it: only a guess
/// (another process may have appended since, or its transaction rolled
/// back), so the insert checks it in the same statement.
#[cfg(not(test))]
static HEAD_HINT: Mutex<Option<(i64, String)>> = Mutex::new(None);

#[cfg(not(test))]
fn hint() -> Option<(i64, String)> {
    HEAD_HINT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

#[cfg(not(test))]
fn set_hint(head: (i64, String)) {
    *HEAD_HINT.lock().unwrap_or_else(|p| p.into_inner()) = Some(head);
}

// The core's own tests run side by side in one process, each on a database
// of its own and (`#[tokio::test]`) on a thread of its own: one guess per
// thread, so a test's appends are not guessed from another's database.
// A wrong guess is only slower; this keeps the paths a test takes its own.
#[cfg(test)]
thread_local! {
    static HEAD_HINT: std::cell::RefCell<Option<(i64, String)>> = const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
fn hint() -> Option<(i64, String)> {
    HEAD_HINT.with(|h| h.borrow().clone())
}

#[cfg(test)]
fn set_hint(head: (i64, String)) {
    HEAD_HINT.with(|h| *h.borrow_mut() = Some(head));
}

/// Appends `entry` in a transaction of its own (for an event that changes
/// nothing else: a sign-in, a sign-out, a refused request).
pub async fn append_alone(pool: &Pool, entry: &AuditEntry) -> Result<()> {
    let mut tx = pool.begin().await?;
    append(&mut tx, entry).await?;
    tx.commit().await
}

/// Appends `entry` to the chain. Call inside the write transaction of the
/// change it records.
///
/// Usually one statement (on PostgreSQL after taking the chain's lock): the
/// entry is linked to the remembered head and inserted only if that is
/// still the head. Otherwise (first append, or the guess was stale) the head
/// is read first, as two statements.
pub async fn append(conn: &mut Conn, entry: &AuditEntry) -> Result<()> {
    append_all(conn, std::slice::from_ref(entry)).await
}

/// Appends `entries`, in order, as [`append`] does one: a batch of new
/// proposals' entries goes in as one statement.
pub async fn append_all(conn: &mut Conn, entries: &[AuditEntry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    if matches!(conn, Conn::PgTx(_)) {
        // Nobody else linking: link at once, in this transaction, holding
        // the lock to its end (one writer at a time, as on SQLite). Another
        // instance linking: write the entries to be linked after the commit,
        // rather than wait for its commit while holding this transaction.
        let free: i64 = super::scalar("SELECT CASE WHEN pg_try_advisory_xact_lock(?) THEN 1 ELSE 0 END")
            .bind(AUDIT_LOCK)
            .fetch_one(&mut *conn)
            .await?;
        if free == 1 {
            let Conn::PgTx(tx) = conn else { unreachable!("matched above") };
            link_locked(&mut tx.tx, entries).await?;
            return Ok(());
        }
    }
    if conn.is_postgres() {
        return append_pending(conn, entries).await;
    }
    // The guess saves reading the head: right unless another process
    // appended, or the transaction that wrote it rolled back.
    if let Some((seq, prev)) = hint() {
        if insert(conn, seq + 1, &prev, entries, true).await? {
            return Ok(());
        }
    }
    let last = query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetch_optional(&mut *conn).await?;
    let (seq, prev) = match last {
        Some(row) => {
            let head: Link = row.decode()?;
            (head.seq + 1, head.hash)
        }
        None => (1, GENESIS.to_owned()),
    };
    insert(conn, seq, &prev, entries, false).await?;
    Ok(())
}

/// PostgreSQL: writes `entries` unlinked, to be linked once they are
/// committed: by [`crate::store::Tx::commit`] for a transaction, at once on
/// a connection outside one (the insert has committed by itself).
async fn append_pending(conn: &mut Conn, entries: &[AuditEntry]) -> Result<()> {
    let at = ts(crate::platform::clock::system_now());
    let mut q = Builder::new(
        "INSERT INTO audit_pending (at, tenant_id, actor, action, proposal_id, request_hash, data) VALUES ",
    );
    for (i, entry) in entries.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        push_written(&mut q, &at, entry);
        q.push(")");
    }
    q.build().execute(&mut *conn).await?;
    match conn {
        Conn::PgTx(tx) => tx.unlinked = true,
        Conn::Pg(c) => {
            link_on(c).await?;
        }
        Conn::Sqlite(_) | Conn::SqliteReader(_) | Conn::SqliteTx(_) => unreachable!("PostgreSQL only"),
    }
    Ok(())
}

/// Links every committed pending entry into the chain (PostgreSQL; nothing
/// to do on SQLite). The transparency log's pass calls it, so an entry
/// whose linking after its commit failed is linked within a second.
pub async fn link(db: &super::Db) -> Result<u64> {
    let super::Pool::Pg(pool) = &db.write else { return Ok(0) };
    let waiting: Option<i64> = super::scalar("SELECT id FROM audit_pending LIMIT 1").fetch_optional(&db.read).await?;
    if waiting.is_none() {
        return Ok(0);
    }
    link_with(pool).await
}

/// Vacuums `audit_pending` (PostgreSQL; nothing on SQLite), for the
/// transparency log's pass once a second. Every linking deletes the rows it
/// links: left to autovacuum (a pass a minute at most), a minute of dead
/// rows at the front of the index is what each linking's scan would step
/// over (measured: 400 pages a statement under intake load).
pub async fn tidy(db: &super::Db) -> Result<()> {
    if db.is_postgres() {
        query("VACUUM (SKIP_LOCKED) audit_pending").execute(&db.write).await?;
    }
    Ok(())
}

/// [`link`] on a connection of `pool`.
pub(crate) async fn link_with(pool: &sqlx::PgPool) -> Result<u64> {
    link_on(&mut *pool.acquire().await?).await
}

/// One transaction under the chain's lock: every pending entry committed
/// so far, smallest id first, numbered after the head and hash-linked, moved
/// from `audit_pending` to `audit_log`. Whoever takes the lock links
/// everyone's entries: a transaction that finds its own already linked by
/// another just commits.
///
/// It commits without waiting for the WAL flush (`synchronous_commit =
/// off`), so the lock is held for the statements only. Nothing is lost by
/// that: the entries were durable in `audit_pending` before, a crash at
/// worst leaves them there to be linked again, and anything durable that
/// builds on the links (a signed checkpoint, another transaction's commit)
/// flushes the WAL up to them first.
async fn link_on(conn: &mut sqlx::PgConnection) -> Result<u64> {
    use sqlx::Connection;
    let mut tx = conn.begin().await?;
    query("SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(?)")
        .bind(AUDIT_LOCK)
        .execute(&mut *tx)
        .await?;
    let linked = link_locked(&mut tx, &[]).await?;
    tx.commit().await?;
    Ok(linked)
}

/// Under the chain's lock (the caller holds it): every committed pending
/// entry, smallest id first, then `own` (entries of the caller's
/// transaction), numbered after the head and hash-linked into `audit_log`.
/// Returns how many were linked.
///
/// Those waiting go first so that a payment's receipts keep their order in
/// the chain: one committed earlier (waiting) is linked before one written
/// after it (`own`, or a larger id).
async fn link_locked(conn: &mut sqlx::PgConnection, own: &[AuditEntry]) -> Result<u64> {
    let mut linked = 0u64;
    let mut own = Some(own);
    loop {
        // One row always (the head, or none yet), joined with each entry
        // taken; no entry taken: one row whose entry columns are NULL.
        let rows = query(
            "WITH taken AS (
                 DELETE FROM audit_pending WHERE id IN (SELECT id FROM audit_pending ORDER BY id LIMIT ?)
                 RETURNING *)
             SELECT head.seq AS head_seq, head.hash AS head_hash, taken.* FROM (SELECT 1) one
             LEFT JOIN (SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1) head ON true
             LEFT JOIN taken ON true
             ORDER BY taken.id",
        )
        .bind(LINK_BATCH)
        .fetch_all(&mut *conn)
        .await?;
        let first = rows.first().ok_or_else(|| super::StoreError::corrupt("audit_pending", "no row"))?;
        let seq = first.try_int("head_seq")?.unwrap_or(0) + 1;
        let prev = first.try_get::<Option<String>>("head_hash")?.unwrap_or_else(|| GENESIS.to_owned());
        let mut entries = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.try_int("id")?.is_some() {
                entries.push(row.decode::<Written>()?.entry());
            }
        }
        let taken = entries.len() as i64;
        // The caller's own entries after the last batch of waiting ones.
        if taken < LINK_BATCH {
            let at = ts(crate::platform::clock::system_now());
            for entry in own.take().unwrap_or_default() {
                entries.push((at.clone(), entry.clone()));
            }
        }
        if !entries.is_empty() {
            let mut q = Builder::new("");
            push_linked(&mut q, seq, &prev, entries.iter().map(|(at, entry)| (at.as_str(), entry)));
            q.build().execute(&mut *conn).await?;
            linked += entries.len() as u64;
        }
        if taken < LINK_BATCH {
            return Ok(linked);
        }
    }
}

/// An entry's content and time as written (`at` as stored, not as
/// parsed): a row of `audit_pending`, or the part of an `audit_log` row the
/// chain's hash covers besides the links ([`Chained`]).
#[derive(sqlx::FromRow)]
struct Written {
    at: String,
    tenant_id: Option<String>,
    actor: String,
    action: String,
    proposal_id: Option<String>,
    request_hash: Option<String>,
    #[sqlx(try_from = "Json<Value>")]
    data: Value,
}

impl Written {
    fn entry(self) -> (String, AuditEntry) {
        let Written { at, tenant_id, actor, action, proposal_id, request_hash, data } = self;
        (at, AuditEntry { tenant_id, actor, action, proposal_id, request_hash, data })
    }
}

/// Inserts `entries` as numbers `seq`, `seq + 1`, … chained after `prev`;
/// with `guarded`, only if `prev` is the hash of the newest entry (returns
/// whether they were inserted).
async fn insert(conn: &mut Conn, seq: i64, prev: &str, entries: &[AuditEntry], guarded: bool) -> Result<bool> {
    let mut q = Builder::new("");
    let head = push_insert(&mut q, seq, prev, entries, guarded);
    let inserted = q.build().execute(conn).await?.rows_affected() == entries.len() as u64;
    if inserted {
        // Also after a wrong guess: the next append guesses right again.
        set_hint(head);
    }
    Ok(inserted)
}

/// Writes [`insert`]'s statement into `q`; returns the head it leaves.
fn push_insert(q: &mut Builder<'_>, seq: i64, prev: &str, entries: &[AuditEntry], guarded: bool) -> (i64, String) {
    let at = ts(crate::platform::clock::system_now());
    let head = push_linked(q, seq, prev, entries.iter().map(|e| (at.as_str(), e)));
    if guarded {
        q.push(" WHERE (SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1) = ").push_bind(prev.to_owned());
    }
    head
}

/// Writes the insert of `entries` (each with its time) as numbers `seq`,
/// `seq + 1`, … chained after `prev`; returns the head it leaves.
fn push_linked<'a>(
    q: &mut Builder<'_>,
    seq: i64,
    prev: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a AuditEntry)>,
) -> (i64, String) {
    q.push(
        "INSERT INTO audit_log (seq, at, tenant_id, actor, action, proposal_id, request_hash, data, prev_hash, hash)
         SELECT * FROM (VALUES ",
    );
    let (mut n, mut last) = (seq, prev.to_owned());
    for (i, (at, entry)) in entries.into_iter().enumerate() {
        let hash = entry_hash(n, at, entry, &last);
        q.push(if i == 0 { "(" } else { ", (" });
        q.push_bind(n).push(", ");
        push_written(q, at, entry);
        q.push(", ").push_bind(last).push(", ").push_bind(hash.clone()).push(")");
        (n, last) = (n + 1, hash);
    }
    q.push(") AS v");
    (n - 1, last)
}

/// Binds what an entry is written with, in the columns' order of both
/// tables: `at, tenant_id, actor, action, proposal_id, request_hash, data`.
fn push_written(q: &mut Builder<'_>, at: &str, entry: &AuditEntry) {
    q.push_bind(at.to_owned()).push(", ").push_bind(entry.tenant_id.clone());
    q.push(", ").push_bind(entry.actor.clone()).push(", ").push_bind(entry.action.clone());
    q.push(", ").push_bind(entry.proposal_id.clone()).push(", ").push_bind(entry.request_hash.clone());
    q.push(", ").push_bind(entry.data.to_string());
}

/// An append written into a caller's statements, to run with them as one
/// command (SQLite's one-command commit, `crate::commit`): linked to the
/// remembered head and guarded by it, as [`append`]'s usual statement.
pub struct Planned {
    head: (i64, String),
}

impl Planned {
    /// Writes the guarded insert of `entry` into `q`; `None` when this
    /// process remembers no head (nothing is written: append as usual).
    pub fn push(q: &mut Builder<'_>, entry: &AuditEntry) -> Option<Planned> {
        let (seq, prev) = hint()?;
        Some(Planned { head: push_insert(q, seq + 1, &prev, std::slice::from_ref(entry), true) })
    }

    /// The number the entry is appended as.
    pub fn seq(&self) -> i64 {
        self.head.0
    }

    /// The statements ran and the entry went in (`changes()` said so).
    pub fn inserted(&self) {
        set_hint(self.head.clone());
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredEntry {
    #[sqlx(try_from = "Int")]
    pub seq: i64,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    #[sqlx(try_from = "Json<Value>")]
    pub data: Value,
}

/// The newest receipt among the entries about `proposal_id` (their
/// `data.receipt`), read inside the appending transaction. On PostgreSQL
/// the payment's receipt lock is taken first (held to the end of the
/// transaction, as every transaction that reads here before appending takes
/// it), so two transactions never name the same receipt as their previous
/// one; entries still waiting to be linked count, newer than any linked.
pub async fn last_receipt(conn: &mut Conn, proposal_id: &str) -> Result<Option<String>> {
    if conn.is_postgres() {
        query("SELECT pg_advisory_xact_lock(hashtextextended(?, ?))")
            .bind(proposal_id)
            .bind(AUDIT_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    Ok(receipts_of(&mut *conn, proposal_id).await?.1)
}

/// A payment's newest receipt read outside a transaction, and the number of
/// the newest entry that may hold one (0 for none): a one-command append
/// checks in its statements that nothing newer came in between
/// ([`push_receipt_seen`]).
pub async fn last_receipt_seen(pool: &Pool, proposal_id: &str) -> Result<(i64, Option<String>)> {
    receipts_of(pool, proposal_id).await
}

/// Writes whether the newest entry about `proposal_id` that may hold a
/// receipt is still number `seen` (a guard's value, 1 or 0).
pub fn push_receipt_seen<'q>(q: &mut Builder<'q>, proposal_id: &'q str, seen: i64) {
    q.push("(SELECT COALESCE(MAX(seq), 0) FROM audit_log WHERE proposal_id = ").push_bind(proposal_id);
    q.push(" AND ").push(MAY_HOLD_RECEIPT).push(") = ").push_bind(seen);
}

/// Only the entries that may hold a receipt (a receipt is a member of
/// `data`, and a `"` inside a JSON string is escaped, so the pattern is
/// found only where there is such a member).
const MAY_HOLD_RECEIPT: &str = "data LIKE '%\"receipt\":\"%'";

async fn receipts_of<'e>(exec: impl Into<super::Exec<'e>>, proposal_id: &str) -> Result<(i64, Option<String>)> {
    let exec = exec.into();
    // Linked entries by number, then (PostgreSQL) those waiting to be
    // linked, which will be linked after them, by id.
    let q = if exec.is_postgres() {
        query(format!(
            "SELECT seq, data FROM (
                 SELECT 0 AS waiting, seq AS n, seq, data FROM audit_log WHERE proposal_id = ? AND {MAY_HOLD_RECEIPT}
                 UNION ALL
                 SELECT 1, id, NULL, data FROM audit_pending WHERE proposal_id = ? AND {MAY_HOLD_RECEIPT}) e
             ORDER BY waiting DESC, n DESC"
        ))
        .bind(proposal_id)
        .bind(proposal_id)
    } else {
        query(format!("SELECT seq, data FROM audit_log WHERE proposal_id = ? AND {MAY_HOLD_RECEIPT} ORDER BY seq DESC"))
            .bind(proposal_id)
    };
    let rows = q.fetch_all(exec).await?;
    let newest = rows.iter().find_map(|r| r.try_int("seq").transpose()).transpose()?.unwrap_or(0);
    let receipt = rows.iter().find_map(|row| {
        let value: Value = serde_json::from_str(&row.try_get::<String>("data").ok()?).ok()?;
        value.get("receipt")?.as_str().map(str::to_owned)
    });
    Ok((newest, receipt))
}

/// The entries about one proposal, oldest first (its timeline).
pub async fn for_proposal(pool: &Pool, proposal_id: &str) -> Result<Vec<StoredEntry>> {
    let rows = query("SELECT seq, at, actor, action, data FROM audit_log WHERE proposal_id = ? ORDER BY seq")
        .bind(proposal_id)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Every entry with this `action`, oldest first (e.g. `passkey.registered`,
/// for `countersign audit verify-approvals`).
pub async fn with_action(pool: &Pool, action: &str) -> Result<Vec<StoredEntry>> {
    let rows = query("SELECT seq, at, actor, action, data FROM audit_log WHERE action = ? ORDER BY seq")
        .bind(action)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// The result of walking the whole chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    Intact { entries: i64 },
    Broken { seq: i64, problem: String },
}

/// Recomputes every link, oldest first, and reports the first break.
pub async fn verify(pool: &Pool) -> Result<Verification> {
    const PAGE: i64 = 1000;
    let mut expected_prev = GENESIS.to_owned();
    let mut expected_seq = 1i64;
    let mut after = i64::MIN;
    loop {
        let page = query("SELECT * FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?")
            .bind(after)
            .bind(PAGE)
            .fetch_all(pool)
            .await?;
        let Some(last) = page.last() else { break };
        after = last.decode::<Seq>()?.seq;
        let full = page.len() as i64 == PAGE;
        for row in &page {
            if let Some(broken) = check(row, &mut expected_seq, &mut expected_prev)? {
                return Ok(broken);
            }
        }
        if !full {
            break;
        }
    }
    // PostgreSQL: entries are linked right after their transaction commits;
    // one still waiting long after is one the chain does not cover yet.
    let cutoff = ts(crate::platform::clock::system_now() - LINK_GRACE);
    let stale: i64 =
        super::scalar("SELECT COUNT(*) FROM audit_pending WHERE at < ?").bind(cutoff).fetch_one(pool).await?;
    if stale > 0 {
        let problem = format!(
            "{stale} entries written more than {} s ago are not linked into the chain",
            LINK_GRACE.num_seconds()
        );
        return Ok(Verification::Broken { seq: expected_seq, problem });
    }
    Ok(Verification::Intact { entries: expected_seq - 1 })
}

/// An entry's number.
#[derive(sqlx::FromRow)]
struct Seq {
    #[sqlx(try_from = "Int")]
    seq: i64,
}

/// An entry's place in the chain: its number and its hash.
#[derive(sqlx::FromRow)]
struct Link {
    #[sqlx(try_from = "Int")]
    seq: i64,
    hash: String,
}

/// An entry as the chain hashed it: what was written and its links.
#[derive(sqlx::FromRow)]
struct Chained {
    #[sqlx(flatten)]
    written: Written,
    prev_hash: String,
    hash: String,
}

/// Entries `from..` (by number), at most `limit`, each as its leaf: its
/// number, its body's bytes and its recorded hash and previous hash (for the
/// transparency log's sequencer, which checks each before logging it).
pub(crate) async fn leaves_from(conn: &mut Conn, from: i64, limit: i64) -> Result<Vec<Leaf>> {
    let rows = query("SELECT * FROM audit_log WHERE seq >= ? ORDER BY seq LIMIT ?")
        .bind(from)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter()
        .map(|row| {
            let seq = row.decode::<Seq>()?.seq;
            let Chained { written, prev_hash, hash } = row.decode()?;
            let (at, entry) = written.entry();
            Ok(Leaf { seq, bytes: body_bytes(seq, &at, &entry, &prev_hash), prev_hash, hash })
        })
        .collect()
}

/// An audit entry as a leaf of the transparency log.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    pub seq: i64,
    pub bytes: Vec<u8>,
    pub prev_hash: String,
    pub hash: String,
}

impl Leaf {
    /// Whether the recorded hash is the hash of the body (an edited entry's
    /// is not).
    pub fn is_intact(&self) -> bool {
        crate::platform::digest::sha256_prefixed(&self.bytes) == self.hash
    }
}

/// The hash of entry `seq` (GENESIS for 0).
pub(crate) async fn hash_of(conn: &mut Conn, seq: i64) -> Result<Option<String>> {
    if seq == 0 {
        return Ok(Some(GENESIS.to_owned()));
    }
    Ok(super::scalar("SELECT hash FROM audit_log WHERE seq = ?").bind(seq).fetch_optional(&mut *conn).await?)
}

/// Checks one entry against the chain so far, advancing it.
fn check(row: &Row, expected_seq: &mut i64, expected_prev: &mut String) -> Result<Option<Verification>> {
    let seq = row.decode::<Seq>()?.seq;
    if seq != *expected_seq {
        return Ok(Some(Verification::Broken { seq, problem: format!("entry {expected_seq} is missing") }));
    }
    // A value of the wrong type is tampering like any other edit.
    let stored: Chained = match row.decode() {
        Ok(read) => read,
        Err(e) => return Ok(Some(Verification::Broken { seq, problem: e.to_string() })),
    };
    let Chained { written, prev_hash: prev, hash } = stored;
    let (at, entry) = written.entry();
    if prev != *expected_prev {
        return Ok(Some(Verification::Broken { seq, problem: "prev_hash does not match the previous entry".into() }));
    }
    if entry_hash(seq, &at, &entry, &prev) != hash {
        return Ok(Some(Verification::Broken { seq, problem: "content does not match its hash".into() }));
    }
    *expected_prev = hash;
    *expected_seq += 1;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Db;

    fn entry(action: &str) -> AuditEntry {
        AuditEntry {
            tenant_id: Some("acme".into()),
            actor: "cli".into(),
            action: action.into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"n": 1}),
        }
    }

    #[tokio::test]
    async fn a_stale_head_guess_never_forks_the_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        let other = tempfile::tempdir().unwrap();
        let other = Db::open(other.path()).await.unwrap();
        append(&mut db.write.acquire().await.unwrap(), &entry("a")).await.unwrap();
        // b is appended, then rolled back: the remembered head is gone
        let mut tx = db.write.begin().await.unwrap();
        append(&mut tx, &entry("b")).await.unwrap();
        tx.rollback().await.unwrap();
        let mut conn = db.write.acquire().await.unwrap();
        append(&mut conn, &entry("c")).await.unwrap();
        // another database (another process's view of the head) in between
        append(&mut other.write.acquire().await.unwrap(), &entry("x")).await.unwrap();
        append(&mut conn, &entry("d")).await.unwrap();
        // and a plainly wrong guess
        set_hint((1, GENESIS.to_owned()));
        append(&mut conn, &entry("e")).await.unwrap();
        assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 4 });
        assert_eq!(verify(&other.read).await.unwrap(), Verification::Intact { entries: 1 });
        let actions: Vec<String> =
            crate::store::scalar("SELECT action FROM audit_log ORDER BY seq").fetch_all(&db.read).await.unwrap();
        assert_eq!(actions, ["a", "c", "d", "e"]);
    }

    #[tokio::test]
    async fn chain_detects_edits_and_deletions() {
        for db in crate::store::test_pg::each_backend("chain_detects_edits_and_deletions").await {
            let mut conn = db.write.acquire().await.unwrap();
            for a in ["a", "b", "c"] {
                append(&mut conn, &entry(a)).await.unwrap();
            }
            assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 3 }, "{}", db.backend);

            query("UPDATE audit_log SET data = '{\"n\":2}' WHERE seq = 2").execute(&mut *conn).await.unwrap();
            assert!(matches!(verify(&db.read).await.unwrap(), Verification::Broken { seq: 2, .. }));
            query("UPDATE audit_log SET data = '{\"n\":1}' WHERE seq = 2").execute(&mut *conn).await.unwrap();
            assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 3 });

            query("DELETE FROM audit_log WHERE seq = 2").execute(&mut *conn).await.unwrap();
            assert!(matches!(verify(&db.read).await.unwrap(), Verification::Broken { seq: 3, .. }));
            drop(conn);
            db.finish().await;
        }
    }

    /// A fresh migrated PostgreSQL database and a store on it, or `None`
    /// when no test server is configured (outside CI).
    async fn on_postgres(test: &str) -> Option<(crate::store::test_pg::TestPg, Db)> {
        let pg = crate::store::test_pg::fresh_migrated(test).await?;
        let db = Db::on_postgres(pg.pool.clone()).await.unwrap();
        Some((pg, db))
    }

    /// Another instance linking: a transaction of its own holding the chain's lock.
    async fn hold_the_chain_lock(db: &Db) -> crate::store::Tx {
        let mut holder = db.begin().await.unwrap();
        query("SELECT pg_advisory_xact_lock(?)").bind(AUDIT_LOCK).execute(&mut holder).await.unwrap();
        holder
    }

    async fn count(db: &Db, table: &str) -> i64 {
        crate::store::scalar(format!("SELECT COUNT(*) FROM {table}")).fetch_one(&db.read).await.unwrap()
    }

    /// PostgreSQL: a transaction writes its entries without the chain's lock
    /// (it runs while another connection holds it); once it commits they
    /// wait in `audit_pending` until the lock is free, then the commit links
    /// them; a rolled-back transaction leaves nothing.
    #[tokio::test]
    async fn on_postgres_entries_are_written_without_the_chain_lock_and_linked_after_commit() {
        let Some((pg, db)) = on_postgres("on_postgres_entries_are_written_without_the_chain_lock").await else {
            return;
        };
        append(&mut db.writer().await.unwrap(), &entry("first")).await.unwrap();
        assert_eq!((count(&db, "audit_log").await, count(&db, "audit_pending").await), (1, 0), "linked at once");

        // another instance is linking: it holds the chain's lock
        let holder = hold_the_chain_lock(&db).await;

        let mut tx = db.begin().await.unwrap();
        let entries = [entry("second"), entry("third")];
        let wrote = append_all(&mut tx, &entries);
        tokio::time::timeout(std::time::Duration::from_secs(5), wrote)
            .await
            .expect("writing an entry must not wait for the chain's lock")
            .unwrap();
        assert_eq!(count(&db, "audit_pending").await, 0, "not visible before the commit");
        let committing = tokio::spawn(async move { tx.commit().await });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!committing.is_finished(), "the commit links its entries, and linking waits for the lock");
        assert_eq!((count(&db, "audit_log").await, count(&db, "audit_pending").await), (1, 2));

        holder.commit().await.unwrap();
        committing.await.unwrap().unwrap();
        assert_eq!((count(&db, "audit_log").await, count(&db, "audit_pending").await), (3, 0));
        assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 3 });
        let actions: Vec<String> =
            crate::store::scalar("SELECT action FROM audit_log ORDER BY seq").fetch_all(&db.read).await.unwrap();
        assert_eq!(actions, ["first", "second", "third"]);

        // Nobody holds the lock: the transaction links its entries itself,
        // after one another instance committed but had not linked yet.
        let waiting =
            "INSERT INTO audit_pending (at, tenant_id, actor, action, data) VALUES (?, 'acme', 'cli', 'waiting', '{}')";
        query(waiting).bind(ts(crate::platform::clock::system_now())).execute(&db.write).await.unwrap();
        let mut tx = db.begin().await.unwrap();
        append(&mut tx, &entry("fourth")).await.unwrap();
        let inside: i64 = crate::store::scalar("SELECT COUNT(*) FROM audit_log").fetch_one(&mut tx).await.unwrap();
        assert_eq!(inside, 5, "linked inside the transaction, the waiting entry first");
        assert_eq!(count(&db, "audit_log").await, 3, "not visible outside before the commit");
        tx.commit().await.unwrap();
        let actions: Vec<String> =
            crate::store::scalar("SELECT action FROM audit_log ORDER BY seq").fetch_all(&db.read).await.unwrap();
        assert_eq!(actions, ["first", "second", "third", "waiting", "fourth"]);
        assert_eq!(count(&db, "audit_pending").await, 0);

        let mut tx = db.begin().await.unwrap();
        append(&mut tx, &entry("rolled back")).await.unwrap();
        tx.rollback().await.unwrap();
        assert_eq!((count(&db, "audit_log").await, count(&db, "audit_pending").await), (5, 0));
        assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 5 });
        db.close().await;
        pg.drop().await;
    }

    /// An entry left unlinked (its process ended between commit and link):
    /// `verify` calls it a failure once it is older than the grace, and the
    /// log's pass (`link`) links it; a fresh one is not a failure yet.
    #[tokio::test]
    async fn an_entry_left_unlinked_fails_verify_until_a_pass_links_it() {
        let Some((pg, db)) = on_postgres("an_entry_left_unlinked_fails_verify").await else { return };
        append(&mut db.writer().await.unwrap(), &entry("a")).await.unwrap();
        let pending =
            "INSERT INTO audit_pending (at, tenant_id, actor, action, data) VALUES (?, 'acme', 'cli', ?, '{}')";
        query(pending).bind(ts(crate::platform::clock::system_now())).bind("fresh").execute(&db.write).await.unwrap();
        assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 1 }, "within the grace");
        let old = ts(crate::platform::clock::system_now() - LINK_GRACE - chrono::Duration::seconds(5));
        query(pending).bind(old).bind("old").execute(&db.write).await.unwrap();
        match verify(&db.read).await.unwrap() {
            Verification::Broken { seq: 2, problem } => assert!(problem.contains("not linked"), "{problem}"),
            other => panic!("an entry unlinked past the grace must fail verify: {other:?}"),
        }
        assert_eq!(link(&db).await.unwrap(), 2);
        assert_eq!(verify(&db.read).await.unwrap(), Verification::Intact { entries: 3 });
        assert_eq!(link(&db).await.unwrap(), 0, "nothing left");
        db.close().await;
        pg.drop().await;
    }

    /// PostgreSQL: a payment's receipts are read under a lock of that
    /// payment's own (another payment's go on meanwhile), and one still
    /// waiting to be linked is the newest.
    #[tokio::test]
    async fn on_postgres_receipts_lock_their_payment_only_and_count_entries_waiting_to_be_linked() {
        let Some((pg, db)) = on_postgres("on_postgres_receipts_lock_their_payment_only").await else { return };
        let receipt = |pid: &str, r: &str| AuditEntry {
            proposal_id: Some(pid.into()),
            data: json!({"receipt": r}),
            ..entry("proposal.approval_given")
        };
        append(&mut db.writer().await.unwrap(), &receipt("p1", "r1")).await.unwrap();
        let mut first = db.begin().await.unwrap();
        assert_eq!(last_receipt(&mut first, "p1").await.unwrap().as_deref(), Some("r1"));
        // another instance is linking: r2 waits in audit_pending
        let holder = hold_the_chain_lock(&db).await;
        append(&mut first, &receipt("p1", "r2")).await.unwrap();
        let waiting: i64 =
            crate::store::scalar("SELECT COUNT(*) FROM audit_pending").fetch_one(&mut first).await.unwrap();
        assert_eq!(waiting, 1, "r2 waits to be linked");
        assert_eq!(last_receipt(&mut first, "p1").await.unwrap().as_deref(), Some("r2"), "waiting, yet newest");
        holder.commit().await.unwrap();

        let mut other = db.begin().await.unwrap();
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), last_receipt(&mut other, "p2"));
        assert_eq!(read.await.expect("another payment does not wait").unwrap(), None);
        other.rollback().await.unwrap();

        let db2 = db.clone();
        let same = tokio::spawn(async move {
            let mut tx = db2.begin().await.unwrap();
            let seen = last_receipt(&mut tx, "p1").await.unwrap();
            tx.rollback().await.unwrap();
            seen
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!same.is_finished(), "the same payment waits for the first transaction");
        first.commit().await.unwrap();
        assert_eq!(same.await.unwrap().as_deref(), Some("r2"));
        db.close().await;
        pg.drop().await;
    }

    /// Two instances (two pools on one PostgreSQL database) appending at
    /// once, each append in a transaction that does other work too: one
    /// chain, every entry in it.
    #[tokio::test]
    async fn concurrent_appends_from_two_instances_keep_one_chain() {
        let Some(pg) = crate::store::test_pg::fresh("concurrent_appends_from_two_instances_keep_one_chain").await
        else {
            return;
        };
        let (a, b) = pg.two_instances().await;
        let mut tasks = Vec::new();
        for i in 0..40 {
            let db = if i % 2 == 0 { a.clone() } else { b.clone() };
            tasks.push(tokio::spawn(async move {
                let mut tx = db.begin().await.unwrap();
                append(&mut tx, &entry(&format!("e{i}"))).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                tx.commit().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(verify(&a.read).await.unwrap(), Verification::Intact { entries: 40 });
        b.close().await;
        pg.drop().await;
    }
}
