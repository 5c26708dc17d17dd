//! The status poll's read caches (agent credentials and proposal views) never
//! hide a change for long, whoever makes it: the server itself, the CLI in
//! another process, or a hand-run SQL statement (docs/ARCHITECTURE.md,
//! "Read caches"). The changes below are all made outside the server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::*;
use crate::rail_harness::auto_approved;

/// How long a change made by another process may stay unseen: the follower
/// reads the change log every 100 ms; generous for a busy CI machine.
const SEEN_WITHIN: Duration = Duration::from_secs(3);

/// Polls `GET /api/v1/proposals/{id}` with `key` until `done` holds; returns
/// the reply that satisfied it and how long it took.
async fn poll_until(server: &TestServer, key: &str, id: &str, done: impl Fn(&Reply) -> bool) -> (Reply, Duration) {
    let started = Instant::now();
    loop {
        let r = server.get_proposal(key, id).await;
        if done(&r) || started.elapsed() > SEEN_WITHIN {
            return (r, started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_key_rotated_by_the_cli_stops_working_for_status_polls() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.status, 200, "the old key polls (and is cached)");
    }

    // `agent add` on an existing agent replaces its key.
    let (code, out, err) = server
        .cli(&[
            "agent",
            "add",
            "--tenant",
            "acme",
            "--id",
            "payout-bot",
            "--acts-for",
            "maya",
            "--source-account",
            ACME_SOURCE,
            "--purpose",
            "vendor",
            "--purpose",
            "refund",
        ])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    let new_key = out.split_whitespace().find(|w| w.starts_with("cs_")).expect("the new key").to_owned();

    // Endpoints that change anything always ask the database: refused at once.
    let propose = server.propose_as(ACME_BOT_KEY, &with(transfer(), serde_json::json!({"run_id": "after"}))).await;
    propose.assert_error(401, "unauthenticated");

    let (r, took) = poll_until(&server, ACME_BOT_KEY, &id, |r| r.status == 401).await;
    r.assert_error(401, "unauthenticated");
    assert!(took < SEEN_WITHIN, "the old key was refused after {took:?}");
    let r = server.get_proposal(&new_key, &id).await;
    assert_eq!(r.status, 200, "the new key reads the agent's proposal: {}", r.text);
    assert_eq!(r.body["id"], id.as_str());
}

#[tokio::test]
async fn a_deactivated_agent_is_refused_everywhere_until_activated_again() {
    let server = TestServer::start().await;
    let (approved, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &approved).await.status, 200, "polled (and cached)");

    let (code, out, err) = server.cli(&["agent", "deactivate", "--tenant", "acme", "--id", "payout-bot"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("deactivated"), "{out}");
    // Refused at once where anything would change or move money.
    server.commit(&approved, &token).await.assert_error(401, "unauthenticated");
    server.cancel(ACME_BOT_KEY, &approved).await.assert_error(401, "unauthenticated");
    server.propose_as(ACME_BOT_KEY, &transfer()).await.assert_error(401, "unauthenticated");
    // The status poll within the change log's bound.
    let (r, took) = poll_until(&server, ACME_BOT_KEY, &approved, |r| r.status == 401).await;
    r.assert_error(401, "unauthenticated");
    assert!(took < SEEN_WITHIN, "still answered after {took:?}");
    // Another agent of the tenant is untouched; the proposal is unchanged.
    assert_eq!(server.propose_as(ACME_OTHER_KEY, &transfer()).await.status, 201);
    assert_eq!(
        server.scalar(&format!("SELECT COUNT(*) FROM proposals WHERE id = '{approved}' AND status = 'approved'")).await,
        1
    );

    let (code, out, err) = server.cli(&["agent", "activate", "--tenant", "acme", "--id", "payout-bot"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (r, _) = poll_until(&server, ACME_BOT_KEY, &approved, |r| r.status == 200).await;
    assert_eq!(r.status, 200, "the key works again: {}", r.text);
    assert_eq!(server.cancel(ACME_BOT_KEY, &approved).await.status, 200);

    let (code, _, err) = server.cli(&["agent", "deactivate", "--tenant", "globex", "--id", "other-bot"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("there is no agent other-bot in tenant globex"), "{err}");
    let audited: Vec<(String, String)> =
        query("SELECT action, actor FROM audit_log WHERE action LIKE 'registry.agent.%activated' ORDER BY seq")
            .fetch_all(&server.db().await)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("action"), r.get("actor")))
            .collect();
    let expected = [("registry.agent.deactivated", "cli"), ("registry.agent.activated", "cli")];
    assert_eq!(audited, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
}

#[tokio::test]
async fn a_payee_trusted_by_the_cli_shows_in_the_next_polls() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let before = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(before.body["payee"]["trusted"], false, "{}", before.text);

    let (code, out, err) = server
        .cli(&[
            "payee",
            "add",
            "--tenant",
            "acme",
            "--id",
            ACME_PAYEE,
            "--legal-name",
            "Northwind Traders GmbH",
            "--trusted",
        ])
        .await;
    assert_eq!(code, 0, "{out}{err}");

    let (r, took) = poll_until(&server, ACME_BOT_KEY, &id, |r| r.body["payee"]["trusted"] == true).await;
    assert_eq!(r.body["payee"]["trusted"], true, "after {took:?}: {}", r.text);
}

#[tokio::test]
async fn a_proposal_changed_by_another_process_wakes_its_long_poll() {
    let server = Arc::new(TestServer::start().await);
    let started = Instant::now();
    let (id, etag, waiter) = parked_long_poll(&server, 20).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Another process (this test) writes the database directly.
    let db = server.db().await;
    let changed = query("UPDATE proposals SET status = 'cancelled', version = version + 1 WHERE id = ?")
        .bind(&id)
        .execute(&db)
        .await
        .expect("update");
    assert_eq!(changed.rows_affected(), 1);

    let r = waiter.await.expect("poll task");
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "cancelled", "{}", r.text);
    assert!(took < Duration::from_secs(10), "woke by the change, not at the 20 s deadline: {took:?}");
    assert_ne!(r.header("etag"), Some(etag.as_str()));
    // And a plain poll agrees.
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["status"], "cancelled");
}

#[tokio::test]
async fn the_change_log_is_written_by_triggers_and_not_by_new_proposals() {
    let server = TestServer::start().await;
    let db = server.db().await;
    let start = scalar(&db, "SELECT COALESCE(MAX(seq), 0) FROM change_log").await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    assert_eq!(
        scalar(&db, &format!("SELECT COUNT(*) FROM change_log WHERE seq > {start}")).await,
        0,
        "a new proposal invalidates nothing, so intake pays for no log row"
    );
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let logged: Vec<(String, Option<String>)> =
        query("SELECT kind, proposal_id FROM change_log WHERE seq > ? ORDER BY seq")
            .bind(start)
            .fetch_all(&db)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("kind"), r.get("proposal_id")))
            .collect();
    assert!(logged.contains(&("proposal".to_owned(), Some(id.clone()))), "{logged:?}");
}

/// A stored value the server cannot read (a status it does not know, a
/// timestamp that is not RFC 3339) is an internal error, never a guess such
/// as "needs review" or 1970; and the log names the column, not the value.
#[tokio::test]
async fn an_unreadable_stored_value_is_an_error_not_a_guess() {
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let log_path = scratch.dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = TestServer::spawn_logging(scratch.dir, scratch.config, &[("COUNTERSIGN_LOG", "info")], log).await;
    let db = server.db().await;
    for (column, value) in [("status", "frozen"), ("expires_at", "next tuesday")] {
        let mut body = transfer();
        body["run_id"] = format!("run-{column}").into();
        let id = server.create(&body).await["id"].as_str().unwrap().to_owned();
        let sql = format!("UPDATE proposals SET {column} = ?, version = version + 1 WHERE id = ?");
        query(&sql).bind(value).bind(&id).execute(&db).await.expect("update");
        let (r, took) = poll_until(&server, ACME_BOT_KEY, &id, |r| r.status != 200).await;
        assert_eq!(r.status, 500, "{column} after {took:?}: {}", r.text);
        assert_eq!(r.body["error"]["code"], "internal_error", "{}", r.text);
        assert!(!r.text.contains(value) && !r.text.contains("needs_review"), "{}", r.text);
        let logged = std::fs::read_to_string(&log_path).unwrap();
        assert!(logged.contains(&format!("unreadable {column}")), "the log names the column");
        assert!(!logged.contains(value), "the log does not quote the stored value");
    }
}
