//! The transparency log's tables: the perfect subtrees' hashes and the
//! signed checkpoints (migration 0019). The sequencer ([`append`]) turns
//! new audit entries into leaves, one transaction per batch, and signs the
//! new size; readers compute roots and proofs from the stored nodes.

use std::collections::{BTreeMap, BTreeSet};

use super::audit;
use super::{query, Builder, Int, Pool, Result, Row, StoreError};
use crate::domain::merkle::{self, Hash, NodeId};

/// The PostgreSQL advisory lock that makes one instance at a time append.
const TLOG_LOCK: i64 = 0x436f_756e_7465_7202;
/// Entries checked and hashed between two yields to commits.
const HASHED_BETWEEN_YIELDS: usize = 32;
/// Nodes per INSERT statement (three values each).
const INSERT_CHUNK: usize = 300;

/// A checkpoint as stored: its size and its signed note.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredCheckpoint {
    #[sqlx(try_from = "Int")]
    pub size: i64,
    pub note: String,
}

#[derive(sqlx::FromRow)]
struct NodeRow {
    #[sqlx(try_from = "Int")]
    height: i64,
    #[sqlx(try_from = "Int")]
    idx: i64,
    hash: Vec<u8>,
}

/// What one append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// No audit entry waits to be logged.
    Nothing,
    /// Leaves were appended up to `size`, and a checkpoint of it signed.
    Grew { size: u64, appended: u64 },
    /// Another instance appended between this one's read and its write:
    /// nothing was written (the next pass goes on from there).
    Raced,
    /// Entry `seq` does not hash to its recorded hash or does not follow its
    /// predecessor: it and everything after it stay out of the log (what
    /// was appended before it is signed).
    Refused { seq: i64, size: u64, problem: String },
}

/// The newest checkpoint, if the log has one.
pub async fn latest(pool: &Pool) -> Result<Option<StoredCheckpoint>> {
    let row = query("SELECT size, note FROM tlog_checkpoints ORDER BY size DESC LIMIT 1").fetch_optional(pool).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The checkpoint of exactly `size` leaves, if one was signed.
pub async fn checkpoint(pool: &Pool, size: u64) -> Result<Option<StoredCheckpoint>> {
    let row =
        query("SELECT size, note FROM tlog_checkpoints WHERE size = ?").bind(size as i64).fetch_optional(pool).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The log's size now (its newest checkpoint's; 0 before the first).
pub async fn size<'e>(exec: impl Into<super::Exec<'e>>) -> Result<u64> {
    let size: Option<i64> = super::scalar("SELECT MAX(size) FROM tlog_checkpoints").fetch_one(exec).await?;
    Ok(size.unwrap_or(0) as u64)
}

/// Fetches the perfect nodes `ids` (all must exist).
async fn nodes<'e>(exec: impl Into<super::Exec<'e>>, ids: &BTreeSet<NodeId>) -> Result<BTreeMap<NodeId, Hash>> {
    let mut out = BTreeMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut q = Builder::new("SELECT height, idx, hash FROM tlog_nodes WHERE ");
    for (i, id) in ids.iter().enumerate() {
        q.push(if i == 0 { "(height = " } else { " OR (height = " });
        q.push_bind(id.level as i64).push(" AND idx = ").push_bind(id.index as i64).push(")");
    }
    for row in q.build().fetch_all(exec).await? {
        let NodeRow { height, idx, hash } = row.decode()?;
        let hash: Hash = hash.try_into().map_err(|_| StoreError::corrupt("hash", "not 32 bytes"))?;
        out.insert(NodeId { level: height as u32, index: idx as u64 }, hash);
    }
    if out.len() != ids.len() {
        return Err(StoreError::corrupt("tlog_nodes", "a node of the tree is missing"));
    }
    Ok(out)
}

/// Appends up to `batch` audit entries that are not leaves yet and signs
/// the new size (`sign(size, root)` gives the checkpoint's signed note).
///
/// The entries are read and hashed first, outside any transaction (on
/// SQLite the write transaction holds the one writer connection every
/// request waits for), yielding to commits as it goes (`store::priority`);
/// then the log is checked not to have grown meanwhile and the nodes and
/// the checkpoint are written ([`Growth::write`]: on PostgreSQL one
/// instance at a time, on SQLite one command).
pub async fn append(
    db: &super::Db,
    sign: &(dyn Fn(u64, Hash) -> String + Sync),
    batch: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Appended> {
    let size = size(&db.read).await?;
    let (entries, mut prev) = {
        let mut conn = db.read.acquire().await?;
        let entries = audit::leaves_from(&mut conn, size as i64 + 1, batch as i64).await?;
        (entries, audit::hash_of(&mut conn, size as i64).await?.unwrap_or_default())
    };
    if entries.is_empty() {
        return Ok(Appended::Nothing);
    }
    let mut leaves = Vec::with_capacity(entries.len());
    let mut refused = None;
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 && i % HASHED_BETWEEN_YIELDS == 0 {
            // A second's entries take a few milliseconds to check and hash:
            // a commit that starts meanwhile goes first (store::priority).
            db.priority.yield_to_foreground().await;
        }
        let problem = if entry.seq != size as i64 + 1 + i as i64 {
            Some(format!("entry {} is missing", size + 1 + i as u64))
        } else if entry.prev_hash != prev {
            Some("prev_hash does not match the previous entry".to_owned())
        } else if !entry.is_intact() {
            Some("content does not match its hash".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            refused = Some((size as i64 + 1 + i as i64, problem));
            break;
        }
        leaves.push(merkle::leaf_hash(&entry.bytes));
        prev = entry.hash.clone();
    }
    let new_size = size + leaves.len() as u64;
    if !leaves.is_empty() {
        db.priority.yield_to_foreground().await;
        if !(Growth { size, leaves: &leaves, sign, now }).write(db).await? {
            // Another instance (or process) appended since the read: its
            // leaves stand; the next pass starts from them.
            return Ok(Appended::Raced);
        }
    }
    Ok(match refused {
        Some((seq, problem)) => Appended::Refused { seq, size: new_size, problem },
        None => Appended::Grew { size: new_size, appended: leaves.len() as u64 },
    })
}

/// The tree of `size` leaves grown by `leaves`: its new perfect nodes, and
/// the older ones its root needs besides them. `left` are the stored
/// nodes [`merkle::left_siblings`] names.
fn grown(size: u64, leaves: &[Hash], left: &BTreeMap<NodeId, Hash>) -> (Vec<(NodeId, Hash)>, BTreeSet<NodeId>) {
    let new_size = size + leaves.len() as u64;
    let grown = merkle::grow(size, leaves, |id| left[&id]);
    let known: BTreeSet<NodeId> = grown.iter().map(|(id, _)| *id).collect();
    let wanted = merkle::needed(|r| merkle::root(r, new_size)).into_iter().filter(|id| !known.contains(id)).collect();
    (grown, wanted)
}

/// The checkpoint's root from the new nodes and the older ones it needs.
fn new_root(new_size: u64, grown: &[(NodeId, Hash)], older: BTreeMap<NodeId, Hash>) -> Hash {
    let mut known: BTreeMap<NodeId, Hash> = grown.iter().copied().collect();
    known.extend(older);
    merkle::root(&known, new_size)
}

/// One `INSERT` of `nodes` into `q`.
fn push_nodes<'q>(q: &mut Builder<'q>, nodes: &[(NodeId, Hash)]) {
    q.push("INSERT INTO tlog_nodes (height, idx, hash) VALUES ");
    for (i, (id, hash)) in nodes.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        q.push_bind(id.level as i64).push(", ").push_bind(id.index as i64).push(", ").push_bind(hash.to_vec());
        q.push(")");
    }
}

/// What a pass appends: `leaves` after the log's `size` leaves as read,
/// and how the new size's checkpoint is signed.
struct Growth<'a> {
    size: u64,
    leaves: &'a [Hash],
    sign: &'a (dyn Fn(u64, Hash) -> String + Sync),
    now: chrono::DateTime<chrono::Utc>,
}

impl Growth<'_> {
    fn new_size(&self) -> u64 {
        self.size + self.leaves.len() as u64
    }

    /// Writes the nodes the leaves add and the signed checkpoint of the new
    /// size, unless the log is no longer of `size` (false: nothing written).
    async fn write(&self, db: &super::Db) -> Result<bool> {
        if db.is_postgres() {
            self.write_in_transaction(db).await
        } else {
            self.write_at_once(db).await
        }
    }

    /// PostgreSQL: one instance at a time (an advisory lock), in a
    /// transaction that reads the nodes it needs.
    async fn write_in_transaction(&self, db: &super::Db) -> Result<bool> {
        let (size, new_size) = (self.size, self.new_size());
        let mut tx = db.begin().await?;
        query("SELECT pg_advisory_xact_lock(?)").bind(TLOG_LOCK).execute(&mut tx).await?;
        if self::size(&mut tx).await? != size {
            return Ok(false);
        }
        let left = nodes(&mut tx, &merkle::left_siblings(size, self.leaves.len() as u64).into_iter().collect()).await?;
        let (grown, wanted) = grown(size, self.leaves, &left);
        for chunk in grown.chunks(INSERT_CHUNK) {
            let mut q = Builder::new("");
            push_nodes(&mut q, chunk);
            q.build().execute(&mut tx).await?;
        }
        let root = new_root(new_size, &grown, nodes(&mut tx, &wanted).await?);
        query("INSERT INTO tlog_checkpoints (size, root, note, at) VALUES (?, ?, ?, ?)")
            .bind(new_size as i64)
            .bind(root.to_vec())
            .bind((self.sign)(new_size, root))
            .bind(super::ts(self.now))
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// SQLite: the older nodes are read by a reader (a stored node never
    /// changes), the root computed and signed, and the writes go to the one
    /// writer as one command guarded by the log's size (`store::guarded`):
    /// the writer is held for one round trip, not ten (docs/BENCHMARKS.md,
    /// "Commit latency").
    async fn write_at_once(&self, db: &super::Db) -> Result<bool> {
        let (size, new_size) = (self.size, self.new_size());
        let (grown, root) = {
            let mut conn = db.read.acquire().await?;
            let left =
                nodes(&mut conn, &merkle::left_siblings(size, self.leaves.len() as u64).into_iter().collect()).await?;
            let (grown, wanted) = grown(size, self.leaves, &left);
            let root = new_root(new_size, &grown, nodes(&mut conn, &wanted).await?);
            (grown, root)
        };
        let note = (self.sign)(new_size, root);
        let mut g = super::guarded::Guarded::new();
        g.guard("the log size as read", |q| {
            q.push("(SELECT COALESCE(MAX(size), 0) FROM tlog_checkpoints) = ").push_bind(size as i64);
        });
        for chunk in grown.chunks(INSERT_CHUNK) {
            g.statement(|q| push_nodes(q, chunk));
        }
        g.statement(|q| {
            q.push("INSERT INTO tlog_checkpoints (size, root, note, at) VALUES (").push_bind(new_size as i64);
            q.push(", ").push_bind(root.to_vec()).push(", ").push_bind(note);
            q.push(", ").push_bind(super::ts(self.now)).push(")");
        });
        Ok(g.commit(&db.write).await?.is_some())
    }
}

/// Whether audit entries wait to be logged (read without a transaction, so
/// an idle pass takes no write lock).
pub async fn behind(pool: &Pool) -> Result<bool> {
    let newest: Option<i64> = super::scalar("SELECT MAX(seq) FROM audit_log").fetch_one(pool).await?;
    Ok(newest.unwrap_or(0) as u64 > size(pool).await?)
}

/// Reads what `compute` needs from the stored nodes and runs it, for a
/// tree of at most `size` leaves (checked against the log's size first:
/// `None` when the log is smaller).
async fn computed<T>(pool: &Pool, size: u64, compute: impl Fn(&dyn merkle::Nodes) -> T) -> Result<Option<T>> {
    if size > self::size(pool).await? {
        return Ok(None);
    }
    let ids = merkle::needed(&compute);
    let fetched = nodes(pool, &ids).await?;
    Ok(Some(compute(&fetched)))
}

/// The root of the first `size` leaves (`None` past the log's size).
pub async fn root(pool: &Pool, size: u64) -> Result<Option<Hash>> {
    computed(pool, size, |n| merkle::root(n, size)).await
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves
/// (`None` when `index >= size` or the log is smaller than `size`).
pub async fn inclusion(pool: &Pool, index: u64, size: u64) -> Result<Option<Vec<Hash>>> {
    Ok(computed(pool, size, |n| merkle::inclusion_proof(n, index, size)).await?.flatten())
}

/// The inclusion proofs of several leaves in the tree of `size` leaves, in
/// the order of `indexes`, from one read of the nodes they need (`None`
/// when the log is smaller than `size`; an index `>= size` gets `None`).
pub async fn inclusions(pool: &Pool, indexes: &[u64], size: u64) -> Result<Option<Vec<Option<Vec<Hash>>>>> {
    computed(pool, size, |n| indexes.iter().map(|&i| merkle::inclusion_proof(n, i, size)).collect()).await
}

/// The consistency proof from `first` leaves to `second` (`None` when
/// `first > second` or the log is smaller than `second`).
pub async fn consistency(pool: &Pool, first: u64, second: u64) -> Result<Option<Vec<Hash>>> {
    Ok(computed(pool, second, |n| merkle::consistency_proof(n, first, second)).await?.flatten())
}

/// Leaf `index`'s bytes (audit entry `index + 1`'s body), if it is logged.
pub async fn leaf(pool: &Pool, index: u64) -> Result<Option<Vec<u8>>> {
    if index >= size(pool).await? {
        return Ok(None);
    }
    let mut conn = pool.acquire().await?;
    Ok(audit::leaves_from(&mut conn, index as i64 + 1, 1).await?.into_iter().next().map(|l| l.bytes))
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogCheck {
    /// No checkpoint yet.
    Empty,
    /// The newest checkpoint is signed by the note key, its root is the
    /// root of the audit entries it covers (hashed afresh, each checked
    /// against its chain), and the stored tree gives the same root.
    Intact {
        size: u64,
    },
    Broken {
        problem: String,
    },
}

/// Opens a signed checkpoint with the note key: its size and root, or why not.
pub type OpenNote<'a> = dyn Fn(&str) -> std::result::Result<(u64, Hash), String> + 'a;

/// Checks the log against the audit trail and the note key, from scratch:
/// for a restore, which trusts nothing it was handed.
pub async fn verify(pool: &Pool, open: &OpenNote<'_>) -> Result<LogCheck> {
    const PAGE: i64 = 4096;
    let Some(latest) = latest(pool).await? else { return Ok(LogCheck::Empty) };
    let broken = |problem: String| Ok(LogCheck::Broken { problem });
    let (size, signed_root) = match open(&latest.note) {
        Ok(opened) => opened,
        Err(why) => return broken(format!("the newest checkpoint does not verify: {why}")),
    };
    if size != latest.size as u64 {
        return broken(format!("the checkpoint stored as size {} says {size}", latest.size));
    }
    let mut leaves = Vec::with_capacity(size as usize);
    let mut prev = audit::GENESIS.to_owned();
    let mut conn = pool.acquire().await?;
    while (leaves.len() as u64) < size {
        let want = PAGE.min((size - leaves.len() as u64) as i64);
        let page = audit::leaves_from(&mut conn, leaves.len() as i64 + 1, want).await?;
        if page.is_empty() {
            return broken(format!("the checkpoint covers {size} entries; the audit trail has {}", leaves.len()));
        }
        for leaf in page {
            let expected = leaves.len() as i64 + 1;
            if leaf.seq != expected || leaf.prev_hash != prev || !leaf.is_intact() {
                return broken(format!("audit entry {expected} is not the entry the log holds"));
            }
            prev = leaf.hash.clone();
            leaves.push(merkle::leaf_hash(&leaf.bytes));
        }
    }
    drop(conn);
    let tree: BTreeMap<NodeId, Hash> =
        merkle::grow(0, &leaves, |_| unreachable!("a tree grown from 0")).into_iter().collect();
    if merkle::root(&tree, size) != signed_root {
        return broken("the signed root is not the root of the audit entries".into());
    }
    // Every stored node (what inclusion and consistency proofs are made
    // from) is the node the entries give, and there is no other.
    let mut stored = BTreeMap::new();
    for row in query("SELECT height, idx, hash FROM tlog_nodes").fetch_all(pool).await? {
        let NodeRow { height, idx, hash } = row.decode()?;
        stored.insert(NodeId { level: height as u32, index: idx as u64 }, hash);
    }
    let differs = stored.len() != tree.len() || tree.iter().any(|(id, hash)| stored.get(id) != Some(&hash.to_vec()));
    if differs {
        return broken("the stored tree does not match the audit entries".into());
    }
    Ok(LogCheck::Intact { size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::merkle::{leaf_hash, verify_consistency, verify_inclusion};
    use crate::store::audit::{append as append_entry, AuditEntry};
    use crate::store::Db;
    use serde_json::json;

    /// Stands in for the note key (signed notes are `tlog::note`'s, tested
    /// there and end to end): the size and the root, in hex.
    fn sign(size: u64, root: Hash) -> String {
        format!("{size} {}", hex::encode(root))
    }

    fn entry(n: usize) -> AuditEntry {
        AuditEntry {
            tenant_id: Some("acme".into()),
            actor: "cli".into(),
            action: format!("test.{n}"),
            proposal_id: None,
            request_hash: None,
            data: json!({"n": n}),
        }
    }

    /// Audit entries `from..to`, each in its own transaction (as every
    /// use case appends: the chain's lock lasts to the end of one).
    async fn write(db: &Db, from: usize, to: usize) {
        for n in from..to {
            let mut tx = db.begin().await.unwrap();
            append_entry(&mut tx, &entry(n)).await.unwrap();
            tx.commit().await.unwrap();
        }
    }

    /// The leaf hashes straight from the audit rows (the chain's bodies).
    async fn reference_leaves(db: &Db) -> Vec<Hash> {
        let mut conn = db.read.acquire().await.unwrap();
        let all = audit::leaves_from(&mut conn, 1, 1_000_000).await.unwrap();
        all.iter().map(|l| leaf_hash(&l.bytes)).collect()
    }

    fn reference_root(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => merkle::empty_root(),
            1 => leaves[0],
            n => {
                let k = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
                merkle::node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    #[tokio::test]
    async fn audit_entries_become_leaves_under_checkpoints_of_each_size() {
        for db in
            crate::store::test_pg::each_backend("audit_entries_become_leaves_under_checkpoints_of_each_size").await
        {
            let now = crate::platform::clock::system_now();
            assert_eq!(append(&db, &sign, 10, now).await.unwrap(), Appended::Nothing, "{}", db.backend);
            assert_eq!(latest(&db.read).await.unwrap(), None);
            let mut sizes = Vec::new();
            for (from, to) in [(0, 1), (1, 6), (6, 7), (7, 30)] {
                write(&db, from, to).await;
                // Batches of 10: a backlog is appended in several.
                while let Appended::Grew { size, .. } = append(&db, &sign, 10, now).await.unwrap() {
                    sizes.push(size);
                }
            }
            assert_eq!(sizes, [1, 6, 7, 17, 27, 30], "{}", db.backend);
            let leaves = reference_leaves(&db).await;
            assert_eq!(leaves.len(), 30);
            for &size in &sizes {
                let stored = checkpoint(&db.read, size).await.unwrap().unwrap();
                assert_eq!(
                    stored.note,
                    sign(size, reference_root(&leaves[..size as usize])),
                    "{} size {size}",
                    db.backend
                );
            }
            let root30 = root(&db.read, 30).await.unwrap().unwrap();
            for i in 0..30 {
                let path = inclusion(&db.read, i, 30).await.unwrap().unwrap();
                assert!(verify_inclusion(&leaves[i as usize], i, 30, &path, &root30), "{} leaf {i}", db.backend);
            }
            for first in [0, 1, 6, 7, 17, 27, 30] {
                let proof = consistency(&db.read, first, 30).await.unwrap().unwrap();
                let old = reference_root(&leaves[..first as usize]);
                assert!(verify_consistency(first, 30, &proof, &old, &root30), "{} {first} -> 30", db.backend);
            }
            assert_eq!(inclusion(&db.read, 3, 31).await.unwrap(), None, "past the log's size");
            assert_eq!(consistency(&db.read, 3, 31).await.unwrap(), None);
            assert_eq!(leaf(&db.read, 30).await.unwrap(), None);
            assert_eq!(leaf_hash(&leaf(&db.read, 29).await.unwrap().unwrap()), leaves[29]);
            db.finish().await;
        }
    }

    /// The write is planned from the log's size as read: if the log grew
    /// meanwhile (another instance or process), nothing is written.
    #[tokio::test]
    async fn a_write_planned_before_the_log_grew_writes_nothing() {
        for db in crate::store::test_pg::each_backend("a_write_planned_before_the_log_grew_writes_nothing").await {
            let now = crate::platform::clock::system_now();
            write(&db, 0, 5).await;
            let leaves = reference_leaves(&db).await;
            assert!(
                Growth { size: 0, leaves: &leaves[..3], sign: &sign, now }.write(&db).await.unwrap(),
                "{}",
                db.backend
            );
            let counts = || async {
                let nodes = crate::store::scalar::<i64>("SELECT COUNT(*) FROM tlog_nodes").fetch_one(&db.read);
                let checkpoints =
                    crate::store::scalar::<i64>("SELECT COUNT(*) FROM tlog_checkpoints").fetch_one(&db.read);
                (nodes.await.unwrap(), checkpoints.await.unwrap())
            };
            let before = counts().await;
            assert_eq!(before.1, 1);
            for (from, to) in [(0, 5), (1, 5), (3, 4)] {
                let stale = from != 3;
                let growth = Growth { size: from, leaves: &leaves[from as usize..to], sign: &sign, now };
                let wrote = growth.write(&db).await.unwrap();
                assert_eq!(wrote, !stale, "{}: from size {from}", db.backend);
                if stale {
                    assert_eq!(counts().await, before, "{}: nothing written from a stale size", db.backend);
                }
            }
            assert_eq!(size(&db.read).await.unwrap(), 4);
            let stored = checkpoint(&db.read, 4).await.unwrap().unwrap();
            assert_eq!(stored.note, sign(4, reference_root(&leaves[..4])), "{}", db.backend);
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn an_edited_or_missing_entry_is_never_logged() {
        for db in crate::store::test_pg::each_backend("an_edited_or_missing_entry_is_never_logged").await {
            let now = crate::platform::clock::system_now();
            write(&db, 0, 5).await;
            assert_eq!(append(&db, &sign, 100, now).await.unwrap(), Appended::Grew { size: 5, appended: 5 });
            write(&db, 5, 10).await;
            // Entry 8 is edited before the sequencer sees it: 6 and 7 are
            // logged, 8 on are not (and never will be while it is wrong).
            query("UPDATE audit_log SET data = '{\"n\":80}' WHERE seq = 8").execute(&db.write).await.unwrap();
            let refused = append(&db, &sign, 100, now).await.unwrap();
            assert!(
                matches!(&refused, Appended::Refused { seq: 8, size: 7, problem } if problem.contains("hash")),
                "{}: {refused:?}",
                db.backend
            );
            assert!(matches!(append(&db, &sign, 100, now).await.unwrap(), Appended::Refused { seq: 8, size: 7, .. }));
            assert_eq!(super::size(&db.read).await.unwrap(), 7);
            // A deleted entry: the one after it does not follow.
            query("UPDATE audit_log SET data = '{\"n\":7}' WHERE seq = 8").execute(&db.write).await.unwrap();
            query("DELETE FROM audit_log WHERE seq = 9").execute(&db.write).await.unwrap();
            let refused = append(&db, &sign, 100, now).await.unwrap();
            assert!(matches!(refused, Appended::Refused { seq: 9, size: 8, .. }), "{}: {refused:?}", db.backend);
            db.finish().await;
        }
    }

    /// Two instances (two pools on one PostgreSQL database) writing audit
    /// entries and sequencing at once: one tree, every entry a leaf once,
    /// every checkpoint a prefix of the last.
    #[tokio::test]
    async fn two_instances_append_to_one_tree() {
        let Some(pg) = crate::store::test_pg::fresh_migrated("two_instances_append_to_one_tree").await else {
            return;
        };
        let (a, b) = pg.two_instances().await;
        let mut tasks = Vec::new();
        for (i, db) in [a.clone(), b.clone()].into_iter().enumerate() {
            let writer = db.clone();
            tasks.push(tokio::spawn(async move { write(&writer, i * 100, i * 100 + 60).await }));
            tasks.push(tokio::spawn(async move {
                for _ in 0..40 {
                    append(&db, &sign, 7, crate::platform::clock::system_now()).await.unwrap();
                    tokio::task::yield_now().await;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        while append(&a, &sign, 1000, crate::platform::clock::system_now()).await.unwrap() != Appended::Nothing {}
        let leaves = reference_leaves(&a).await;
        assert_eq!(leaves.len(), 120);
        let last = root(&a.read, 120).await.unwrap().unwrap();
        assert_eq!(last, reference_root(&leaves));
        let sizes: Vec<i64> =
            crate::store::scalar("SELECT size FROM tlog_checkpoints ORDER BY size").fetch_all(&a.read).await.unwrap();
        assert!(sizes.len() > 2, "{sizes:?}");
        for size in sizes {
            let size = size as u64;
            let proof = consistency(&b.read, size, 120).await.unwrap().unwrap();
            assert!(verify_consistency(size, 120, &proof, &reference_root(&leaves[..size as usize]), &last));
        }
        b.close().await;
        pg.drop().await;
    }
}
