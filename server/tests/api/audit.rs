//! The audit trail (SPEC §13): hash-chained, verified by
//! `countersign audit verify`, with account numbers masked.

use serde_json::json;

use crate::helpers::*;

/// Some of everything: created, auto-approved, cancelled, denied, refused.
async fn activity(server: &TestServer) -> String {
    let pending = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 700}))).await;
    let cancelled =
        server.create(&with(transfer(), json!({"reference": "withdrawn"}))).await["id"].as_str().unwrap().to_owned();
    assert_eq!(server.cancel(ACME_BOT_KEY, &cancelled).await.status, 200);
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"source_account": GLOBEX_SOURCE}))).await;
    r.assert_error(403, "policy_denied");
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"destination": "acct_unknown000000042"}))).await;
    r.assert_error(422, "unknown_destination");
    let r = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    pending
}

#[tokio::test]
async fn audit_verify_reports_an_intact_chain_after_activity() {
    let server = TestServer::start().await;
    activity(&server).await;
    let (code, stdout, stderr) = server.cli(&["audit", "verify"]).await;
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("intact"), "{stdout}");

    // Each entry links to the one before it.
    let rows =
        query("SELECT seq, prev_hash, hash FROM audit_log ORDER BY seq").fetch_all(&server.db().await).await.unwrap();
    assert!(rows.len() > 5);
    for pair in rows.windows(2) {
        assert_eq!(pair[1].get::<String>("prev_hash"), pair[0].get::<String>("hash"));
        assert_eq!(pair[1].get::<i64>("seq"), pair[0].get::<i64>("seq") + 1);
    }
    for row in &rows {
        assert!(is_request_hash(&row.get::<String>("hash")), "entry hashes are SHA-256");
    }
}

#[tokio::test]
async fn audit_verify_names_the_entry_that_was_edited() {
    let server = TestServer::start().await;
    let pending = activity(&server).await;
    let db = server.db().await;
    let seq: i64 = one("SELECT seq FROM audit_log WHERE proposal_id = ? AND action = 'proposal.created'")
        .bind(&pending)
        .fetch_one(&db)
        .await
        .unwrap();
    let last: i64 = one("SELECT MAX(seq) FROM audit_log").fetch_one(&db).await.unwrap();
    assert!(seq > 1 && seq < last, "an entry in the middle of the chain: {seq} of {last}");

    // Someone quietly makes the payment look smaller.
    let set_amount = if on_postgres() {
        "UPDATE audit_log SET data = jsonb_set(data::jsonb, '{amount_minor}', '1')::text WHERE seq = ?"
    } else {
        "UPDATE audit_log SET data = json_set(data, '$.amount_minor', 1) WHERE seq = ?"
    };
    let changed = query(set_amount).bind(seq).execute(&db).await.unwrap().rows_affected();
    assert_eq!(changed, 1);
    // And a later one, to see that the first break is the one reported.
    query("UPDATE audit_log SET actor = 'cli' WHERE seq = ?").bind(last).execute(&db).await.unwrap();

    let (code, stdout, stderr) = server.cli(&["audit", "verify"]).await;
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
    let output = format!("{stdout}\n{stderr}");
    assert!(!output.contains("intact"), "{output}");
    let numbers: Vec<i64> = output.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse().ok()).collect();
    assert!(numbers.contains(&seq), "the output names entry {seq}: {output}");
    assert!(!numbers.contains(&last), "only the first broken entry is named, not {last}: {output}");
    assert!(!output.contains("panicked"), "{output}");
}

#[tokio::test]
async fn audit_verify_catches_a_deleted_entry() {
    let server = TestServer::start().await;
    let pending = activity(&server).await;
    let db = server.db().await;
    let seq: i64 = one("SELECT seq FROM audit_log WHERE proposal_id = ? AND action = 'proposal.created'")
        .bind(&pending)
        .fetch_one(&db)
        .await
        .unwrap();
    query("DELETE FROM audit_log WHERE seq = ?").bind(seq).execute(&db).await.unwrap();
    let (code, stdout, stderr) = server.cli(&["audit", "verify"]).await;
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
}

#[tokio::test]
async fn audit_entries_never_hold_full_account_numbers() {
    let server = TestServer::start().await;
    activity(&server).await;
    let rows = query(
        "SELECT seq, COALESCE(tenant_id, '') || ' ' || actor || ' ' || action || ' ' || COALESCE(proposal_id, '') || ' ' ||
                COALESCE(request_hash, '') || ' ' || data AS line FROM audit_log ORDER BY seq",
    )
    .fetch_all(&server.db().await)
    .await
    .unwrap();
    let lines: Vec<String> = rows.iter().map(|r| r.get("line")).collect();
    let all = lines.join("\n");
    for full in [ACME_SOURCE, GLOBEX_SOURCE, ACME_PAYEE, ACME_TRUSTED_PAYEE, GLOBEX_PAYEE, "acct_unknown000000042"] {
        assert!(!all.contains(full), "`{full}` appears unmasked in the audit trail:\n{all}");
    }
    assert!(all.contains("acct_…cdef"), "the source account is kept masked:\n{all}");
    assert!(all.contains("ba_…0007"), "the destination is kept masked:\n{all}");
    // Agent keys and passwords never reach it either.
    for secret in [ACME_BOT_KEY, GLOBEX_BOT_KEY, PASSWORD] {
        assert!(!all.contains(secret), "a secret is in the audit trail");
    }
}

#[tokio::test]
async fn every_transition_is_audited_with_actor_and_request_hash() {
    let server = TestServer::start().await;
    let p = server.create(&transfer()).await;
    let id = p["id"].as_str().unwrap();
    assert_eq!(server.cancel(ACME_BOT_KEY, id).await.status, 200);
    let rows = query("SELECT actor, action, request_hash, at FROM audit_log WHERE proposal_id = ? ORDER BY seq")
        .bind(id)
        .fetch_all(&server.db().await)
        .await
        .unwrap();
    let actions: Vec<String> = rows.iter().map(|r| r.get("action")).collect();
    assert_eq!(actions, ["proposal.created", "proposal.cancelled"]);
    let created: String = one("SELECT data FROM audit_log WHERE proposal_id = ? AND action = 'proposal.created'")
        .bind(id)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    for expected in ["25000", "USD", "needs_approval"] {
        assert!(created.contains(expected), "the created entry keeps amount, currency and policy decision: {created}");
    }
    for row in &rows {
        assert_eq!(row.get::<Option<String>>("request_hash").as_deref(), p["request_hash"].as_str());
        assert!(row.get::<String>("actor").contains("payout-bot"));
        rfc3339(&json!(row.get::<String>("at")));
    }
}

#[tokio::test]
async fn logs_never_hold_full_account_numbers_or_keys() {
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let log_path = scratch.dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let Scratch { dir, config } = scratch;
    let server = TestServer::spawn_logging(dir, config, &[("COUNTERSIGN_LOG", "debug")], log).await;
    activity(&server).await;
    let r = server.propose_as("cs_test_guessing0a0key0000000000000000000", &transfer()).await;
    r.assert_error(401, "unauthenticated");
    server.all_ids(ACME_BOT_KEY).await;

    let (dir, _) = server.stop().await;
    let logs = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(!logs.trim().is_empty(), "the server logged something at debug level");
    for secret in [
        ACME_SOURCE,
        GLOBEX_SOURCE,
        ACME_PAYEE,
        ACME_TRUSTED_PAYEE,
        GLOBEX_PAYEE,
        "acct_unknown000000042",
        ACME_BOT_KEY,
        GLOBEX_BOT_KEY,
        "cs_test_guessing0a0key0000000000000000000",
    ] {
        assert!(!logs.contains(secret), "`{secret}` appears in the server's logs:\n{logs}");
    }
}
