//! The transparency log (docs/EVIDENCE.md), black-box:
//! every audit entry becomes a leaf under a signed checkpoint; inclusion
//! and consistency proofs verify against roots this test computes itself
//! from the audit rows; `countersign log monitor` accepts growth and fails
//! loudly on a fork, a shrink or another key.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::*;
use countersign::domain::merkle::{verify_consistency, verify_inclusion, Hash};
use countersign::evidence::tlog::note::{Checkpoint, NoteSigner, NoteVerifier};

/// An audit row's leaf bytes as the contract defines them: the canonical
/// JSON of its number, time, content and the previous entry's hash.
fn body_of(row: &countersign::store::Row) -> Vec<u8> {
    let body = json!({
        "seq": row.get::<i64>("seq"),
        "at": row.get::<String>("at"),
        "tenant_id": row.get::<Option<String>>("tenant_id"),
        "actor": row.get::<String>("actor"),
        "action": row.get::<String>("action"),
        "proposal_id": row.get::<Option<String>>("proposal_id"),
        "request_hash": row.get::<Option<String>>("request_hash"),
        "data": serde_json::from_str::<Value>(&row.get::<String>("data")).unwrap(),
        "prev_hash": row.get::<String>("prev_hash"),
    });
    jcs(&body).into_bytes()
}

/// Leaf i's bytes, built here from audit entry i + 1's row, each checked
/// to be what the chain hashed.
async fn leaves(server: &TestServer) -> Vec<Vec<u8>> {
    let rows = query("SELECT * FROM audit_log ORDER BY seq").fetch_all(&server.db().await).await.unwrap();
    rows.iter()
        .map(|row| {
            let bytes = body_of(row);
            assert_eq!(sha256_prefixed(&bytes), row.get::<String>("hash"), "the leaf is what the chain hashed");
            bytes
        })
        .collect()
}

fn leaf_hash(bytes: &[u8]) -> Hash {
    Sha256::new().chain_update([0u8]).chain_update(bytes).finalize().into()
}

/// MTH (RFC 9162 section 2.1.1), straight from its definition.
fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = 1 << (usize::BITS - 1 - (n - 1).leading_zeros()); // the largest power of two below n
            Sha256::new()
                .chain_update([1u8])
                .chain_update(mth(&leaves[..k]))
                .chain_update(mth(&leaves[k..]))
                .finalize()
                .into()
        }
    }
}

pub async fn log_info(server: &TestServer) -> Value {
    let r = send(server.client.get(server.url("/api/v1/log"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// Waits until every audit entry is a leaf; returns the log's size.
pub async fn caught_up(server: &TestServer) -> u64 {
    for _ in 0..100 {
        let entries = server.scalar("SELECT COUNT(*) FROM audit_log").await as u64;
        let size = log_info(server).await["size"].as_u64().unwrap();
        if size == entries && size > 0 {
            return size;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the log did not catch up with the audit trail in 10 s");
}

async fn checkpoint(server: &TestServer, verifier: &NoteVerifier) -> (String, Checkpoint) {
    let r = send(server.client.get(server.url("/api/v1/log/checkpoint"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let opened = verifier.open(&r.text).unwrap();
    (r.text, opened)
}

fn hashes(body: &Value) -> Vec<Hash> {
    body["hashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| STANDARD.decode(h.as_str().unwrap()).unwrap().try_into().unwrap())
        .collect()
}

/// `n` new proposals (each request new: an identical one is not).
async fn some_activity(server: &TestServer, n: usize) {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    for _ in 0..n {
        let i = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        server.create(&with(transfer(), json!({"reference": format!("log {i}")}))).await;
    }
}

#[tokio::test]
async fn every_audit_entry_is_a_leaf_under_a_signed_checkpoint_with_proofs() {
    let server = TestServer::start().await;
    some_activity(&server, 3).await;
    let size = caught_up(&server).await;
    let info = log_info(&server).await;
    let verifier = NoteVerifier::parse(info["verifier_key"].as_str().unwrap()).unwrap();
    assert_eq!(info["origin"], verifier.name.as_str());
    assert_eq!(info["algorithm"], "Ed25519");
    assert_eq!(STANDARD.decode(info["public_key"].as_str().unwrap()).unwrap(), verifier.public_key());

    let (note, first) = checkpoint(&server, &verifier).await;
    assert_eq!(first.size, size);
    // The C2SP text: origin, size, base64 root, blank line, one signature line.
    let lines: Vec<&str> = note.lines().collect();
    assert_eq!(lines.len(), 5, "{note}");
    assert_eq!((lines[0], lines[1], lines[3]), (verifier.name.as_str(), size.to_string().as_str(), ""));
    assert!(lines[4].starts_with(&format!("\u{2014} {} ", verifier.name)), "{note}");

    let bytes = leaves(&server).await;
    let leaf_hashes: Vec<Hash> = bytes.iter().map(|b| leaf_hash(b)).collect();
    assert_eq!(first.root, mth(&leaf_hashes), "the checkpoint's root is the tree of the audit entries");
    for i in 0..size {
        let r = send(
            server.client.get(server.url(&format!("/api/v1/log/proofs/inclusion?leaf_index={i}&tree_size={size}"))),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!((r.body["leaf_index"].as_u64(), r.body["tree_size"].as_u64()), (Some(i), Some(size)));
        assert!(verify_inclusion(&leaf_hashes[i as usize], i, size, &hashes(&r.body), &first.root), "leaf {i}");
        // Another leaf's hash does not verify with it.
        let other = &leaf_hashes[((i + 1) % size) as usize];
        assert!(!verify_inclusion(other, i, size, &hashes(&r.body), &first.root));
    }

    // More entries: a new checkpoint that extends the first.
    some_activity(&server, 2).await;
    let grown = caught_up(&server).await;
    assert!(grown > size);
    let (_, second) = checkpoint(&server, &verifier).await;
    assert_eq!(second.size, grown);
    let r = send(server.client.get(server.url(&format!("/api/v1/log/proofs/consistency?first={size}&second={grown}"))))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(verify_consistency(size, grown, &hashes(&r.body), &first.root, &second.root));
    let all: Vec<Hash> = leaves(&server).await.iter().map(|b| leaf_hash(b)).collect();
    assert_eq!(second.root, mth(&all));
    // The first checkpoint is still served by its size.
    let r = send(server.client.get(server.url(&format!("/api/v1/log/checkpoint?size={size}")))).await;
    assert_eq!((r.status, r.text.as_str()), (200, note.as_str()));
    write_fixture(&server, &info, vec![note, checkpoint(&server, &verifier).await.0], size, grown).await;

    // An entry edited after it was logged no longer proves its inclusion.
    let db = server.db().await;
    query("UPDATE audit_log SET actor = 'user:someone-else' WHERE seq = 2").execute(&db).await.unwrap();
    let edited = leaf_hash(&leaves_unchecked(&server, 2).await);
    let r =
        send(server.client.get(server.url(&format!("/api/v1/log/proofs/inclusion?leaf_index=1&tree_size={grown}"))))
            .await;
    assert!(!verify_inclusion(&edited, 1, grown, &hashes(&r.body), &second.root));
}

/// For the independent verifier (`examples/verify_evidence.py log`, run by
/// scripts/test.sh): the log as an outsider sees it, written to
/// `$COUNTERSIGN_EVIDENCE_FIXTURES/log.json` when that is set.
async fn write_fixture(server: &TestServer, info: &Value, checkpoints: Vec<String>, first: u64, size: u64) {
    let Ok(dir) = std::env::var("COUNTERSIGN_EVIDENCE_FIXTURES") else { return };
    let get = |path: String| async move { send(server.client.get(server.url(&path))).await.body };
    let mut inclusion = Vec::new();
    for i in 0..size {
        inclusion.push(get(format!("/api/v1/log/proofs/inclusion?leaf_index={i}&tree_size={size}")).await);
    }
    inclusion.push(get(format!("/api/v1/log/proofs/inclusion?leaf_index=0&tree_size={first}")).await);
    let mut consistency = Vec::new();
    for m in [0, 1, first / 2, first, size] {
        consistency.push(get(format!("/api/v1/log/proofs/consistency?first={m}&second={size}")).await);
    }
    let leaves: Vec<String> = leaves(server).await.iter().map(|b| STANDARD.encode(b)).collect();
    let fixture = json!({
        "verifier_key": info["verifier_key"],
        "checkpoints": checkpoints,
        "leaves": leaves,
        "inclusion": inclusion,
        "consistency": consistency,
    });
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(std::path::Path::new(&dir).join("log.json"), serde_json::to_vec_pretty(&fixture).unwrap()).unwrap();
}

/// Entry `seq`'s leaf bytes as stored now (not checked against its hash).
async fn leaves_unchecked(server: &TestServer, seq: i64) -> Vec<u8> {
    let row = query("SELECT * FROM audit_log WHERE seq = ?").bind(seq).fetch_one(&server.db().await).await.unwrap();
    body_of(&row)
}

#[tokio::test]
async fn proof_requests_outside_the_log_are_refused_with_typed_errors() {
    let server = TestServer::start().await;
    some_activity(&server, 1).await;
    let size = caught_up(&server).await;
    for (path, field) in [
        (format!("/api/v1/log/proofs/inclusion?leaf_index={size}&tree_size={size}"), "leaf_index"),
        (format!("/api/v1/log/proofs/inclusion?leaf_index=0&tree_size={}", size + 1000), "tree_size"),
        ("/api/v1/log/proofs/consistency?first=2&second=1".to_owned(), "first"),
        (format!("/api/v1/log/proofs/consistency?first=1&second={}", size + 1000), "second"),
        ("/api/v1/log/proofs/inclusion?leaf_index=-1&tree_size=3".to_owned(), "query"),
        ("/api/v1/log/proofs/consistency?first=1".to_owned(), "query"),
    ] {
        let r = send(server.client.get(server.url(&path))).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{path}: {}", r.text);
    }
    let r = send(server.client.get(server.url("/api/v1/log/checkpoint?size=99999"))).await;
    r.assert_error(404, "not_found");
    // Proofs between equal sizes and from the empty tree are empty.
    let r = send(server.client.get(server.url(&format!("/api/v1/log/proofs/consistency?first={size}&second={size}"))))
        .await;
    assert_eq!((r.status, r.body["hashes"].clone()), (200, json!([])));
}

/// The note key the server signs with, read from its data directory (what
/// a compromised server could sign anything with).
fn server_signer(server: &TestServer, origin: &str) -> NoteSigner {
    let text = std::fs::read_to_string(server.data_dir().join("keys/log-note.ed25519")).unwrap();
    let seed: [u8; 32] = hex::decode(text.trim()).unwrap().try_into().unwrap();
    NoteSigner::from_seed(origin, &seed)
}

#[tokio::test]
async fn the_monitor_accepts_growth_and_fails_loudly_on_a_fork_a_shrink_or_another_key() {
    let server = TestServer::start().await;
    let dir = TestDir::new();
    let kept = dir.path().join("checkpoint");
    let kept_arg = kept.to_str().unwrap().to_owned();
    let base = server.url("");
    let monitor = |extra: Vec<String>| {
        let mut args = vec!["log".to_owned(), "monitor".to_owned(), "--url".to_owned(), base.clone()];
        args.extend(["--checkpoint".to_owned(), kept_arg.clone()]);
        args.extend(extra);
        args
    };
    let run = |args: Vec<String>| {
        let server = &server;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            server.cli(&args).await
        }
    };

    some_activity(&server, 1).await;
    let size = caught_up(&server).await;
    let (code, out, err) = run(monitor(vec![])).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("{size} leaves (first look)")), "{out}");
    let (code, out, _) = run(monitor(vec![])).await;
    assert_eq!((code, out.contains("unchanged")), (0, true), "{out}");

    some_activity(&server, 2).await;
    let grown = caught_up(&server).await;
    let (code, out, err) = run(monitor(vec![])).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("grew from {size} to {grown}")), "{out}");
    let good = std::fs::read_to_string(&kept).unwrap();

    // A pinned key that is not the log's.
    let other = NoteSigner::from_seed("elsewhere/log", &[9; 32]).verifier().encoded();
    let (code, _, err) = run(monitor(vec!["--key".into(), other])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOG KEY CHANGED"), "{err}");
    let info = log_info(&server).await;
    let origin = info["origin"].as_str().unwrap().to_owned();
    let (code, _, err) = run(monitor(vec!["--key".into(), info["verifier_key"].as_str().unwrap().into()])).await;
    assert_eq!(code, 0, "the right pin: {err}");

    // A kept checkpoint signed by another key.
    let forged =
        NoteSigner::from_seed(&origin, &[9; 32]).sign(&Checkpoint { origin: origin.clone(), size: 1, root: [0; 32] });
    std::fs::write(&kept, &forged).unwrap();
    let (code, _, err) = run(monitor(vec![])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOG KEY CHANGED"), "{err}");

    // The log once showed more leaves than it has now.
    let signer = server_signer(&server, &origin);
    let bigger = signer.sign(&Checkpoint { origin: origin.clone(), size: grown + 50, root: [1; 32] });
    std::fs::write(&kept, &bigger).unwrap();
    let (code, _, err) = run(monitor(vec![])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOG SHRANK"), "{err}");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), bigger, "an alarm leaves the kept checkpoint alone");

    // Two roots for one size.
    let now = log_info(&server).await["size"].as_u64().unwrap();
    let twin = signer.sign(&Checkpoint { origin: origin.clone(), size: now, root: [2; 32] });
    std::fs::write(&kept, &twin).unwrap();
    let (code, _, err) = run(monitor(vec![])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOG FORK"), "{err}");

    // History rewritten on the server: every perfect subtree over leaf 0
    // replaced; the next checkpoint does not extend the kept one.
    std::fs::write(&kept, &good).unwrap();
    let db = server.db().await;
    query("UPDATE tlog_nodes SET hash = ? WHERE idx = 0").bind(vec![3u8; 32]).execute(&db).await.unwrap();
    some_activity(&server, 1).await;
    caught_up(&server).await;
    let (code, _, err) = run(monitor(vec![])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOG FORK") && err.contains("consistency proof fails"), "{err}");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), good);

    // A log that cannot be read is an error, not an alarm.
    let (code, _, err) =
        server.cli(&["log", "monitor", "--url", "http://127.0.0.1:9", "--checkpoint", &kept_arg]).await;
    assert_eq!(code, 1, "{err}");
}
