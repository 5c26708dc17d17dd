//! Slack-style interactive approvals (SPEC §11), against a fake
//! Slack on loopback: the announced message, approve / reject / dual
//! approval through buttons, each way the signature check fails, each
//! refusal after it, the outbox across a crash, and the SSRF guard.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::console_client::*;
use crate::helpers::*;
use crate::slack_harness::*;

async fn start(slack: &FakeSlack) -> TestServer {
    TestServer::start_with(&slack_config(slack)).await
}

/// A pending acme proposal for `amount_minor` USD (the message is announced).
async fn pending_proposal(server: &TestServer, amount_minor: u64) -> Value {
    let id = pending_for(server, amount_minor).await;
    server.get_proposal(ACME_BOT_KEY, &id).await.body
}

/// The announcement of `proposal` on `/hook/acme`.
async fn announcement(slack: &FakeSlack, proposal: &Value) -> Value {
    let id = proposal["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(m) = slack.received("/hook/acme").await.into_iter().find(|m| message_text(&m.body).contains(id)) {
            return m.body;
        }
        assert!(Instant::now() < deadline, "{id} announced within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn status(server: &TestServer, id: &str) -> Value {
    server.get_proposal(ACME_BOT_KEY, id).await.body
}

async fn outbox_rows(server: &TestServer, sql_where: &str) -> i64 {
    scalar(&server.db().await, &format!("SELECT COUNT(*) FROM slack_outbox WHERE {sql_where}")).await
}

#[tokio::test]
async fn a_pending_proposal_is_announced_with_the_payment_restated_and_three_buttons() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    let t0 = Instant::now();
    let p = pending_proposal(&server, 25_000).await;
    let message = announcement(&slack, &p).await;
    assert!(t0.elapsed() < Duration::from_secs(5));

    let text = message_text(&message);
    let hash = p["request_hash"].as_str().unwrap();
    for expected in
        ["250.00 USD", "Northwind Traders GmbH", p["payee"]["masked_account"].as_str().unwrap(), &hash[7..19]]
    {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    // Full account numbers never leave the server.
    assert!(!text.contains(ACME_PAYEE) && !text.contains(ACME_SOURCE), "{text}");
    // The agent's reference is shown, labelled as untrusted, in its own block.
    let reference_block = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| message_text(b).contains("Invoice 1842") && b["type"] == "context")
        .unwrap_or_else(|| panic!("a context block with the reference: {message}"));
    assert!(message_text(reference_block).contains("untrusted"), "{reference_block}");
    // Data is never mrkdwn: nothing the agent writes becomes a link or mention.
    assert!(!message.to_string().contains("\"mrkdwn\",") && message["mrkdwn"] == false, "{message}");
    // Its risk signals, as the console shows them (a fresh registry: the
    // payee is new and was never paid).
    let risk = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "risk")
        .unwrap_or_else(|| panic!("a risk section: {message}"));
    assert!(message_text(risk).contains("First payment") && message_text(risk).contains("New payee"), "{risk}");

    let actions = message["blocks"].as_array().unwrap().iter().find(|b| b["type"] == "actions").expect("buttons");
    let buttons = actions["elements"].as_array().unwrap();
    assert_eq!(action_ids(&message), ["approve", "reject", "open_console"]);
    assert_eq!(buttons[0]["style"], "primary");
    assert_eq!(buttons[1]["style"], "danger");
    assert_eq!(buttons[0]["value"], button_value(&p));
    assert_eq!(buttons[1]["value"], button_value(&p));
    let confirm = message_text(&buttons[0]["confirm"]);
    assert!(confirm.contains("250.00 USD") && confirm.contains("Northwind Traders GmbH"), "{confirm}");
    assert_eq!(buttons[2]["url"], p["approval_url"]);

    // Policy-approved proposals wait for nobody: no message. Another
    // tenant's goes to its own channel only.
    let auto = server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 500}))).await;
    assert_eq!(auto["status"], "approved");
    let theirs = server
        .propose_as(
            GLOBEX_BOT_KEY,
            &json!({"run_id": "g-1", "amount_minor": 20_000, "currency": "USD", "source_account": GLOBEX_SOURCE,
                    "destination": GLOBEX_PAYEE, "purpose_code": "vendor"}),
        )
        .await;
    assert_eq!(theirs.body["status"], "pending_approval", "{}", theirs.text);
    let theirs_id = theirs.body["id"].as_str().unwrap();
    let on_default = slack.wait_for("/hook/default", 1, 10).await;
    assert!(message_text(&on_default[0].body).contains(theirs_id));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acme = slack.received("/hook/acme").await;
    assert_eq!(acme.len(), 1, "only the pending acme proposal: {acme:?}");
    assert!(!acme.iter().any(|m| message_text(&m.body).contains(theirs_id)));
    assert!(!slack.received("/").await.iter().any(|m| message_text(&m.body).contains(auto["id"].as_str().unwrap())));
}

#[tokio::test]
async fn approve_and_reject_through_buttons_go_through_decide_with_amr_slack() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    link_slack(&server, "acme", "ana", "U0ANA").await;
    link_slack(&server, "acme", "ben", "U0BEN").await;

    // Approve (signed with the new secret).
    let p = pending_proposal(&server, 25_000).await;
    let id = p["id"].as_str().unwrap();
    let t0 = Instant::now();
    let r =
        press_signed(&server, NEW_SECRET, &press_body("U0ANA", "approve", &button_value(&p), &slack.url("/r/1"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(t0.elapsed() < Duration::from_secs(3), "answered within 3 s");
    let now = status(&server, id).await;
    assert_eq!(now["status"], "approved", "{now}");
    let approval = &now["approvals"][0];
    assert_eq!((approval["via"].as_str(), approval["decision"].as_str()), (Some("slack"), Some("approve")));
    let ana = Console::sign_in(&server, "ana").await;
    let claims = decode_jws(now["approval_token"].as_str().unwrap()).claims;
    assert_eq!(claims["amr"], json!(["slack"]));
    assert_eq!(claims["sub"], ana.user_id());
    let audit: String = one(
        "SELECT data FROM audit_log WHERE action = 'proposal.approval_given' AND proposal_id = ? ORDER BY seq DESC",
    )
    .bind(id)
    .fetch_one(&server.db().await)
    .await
    .unwrap();
    assert!(audit.contains("\"via\":\"slack\"") && audit.contains("\"amr\":\"slack\""), "{audit}");
    // The message is updated through response_url: outcome shown, buttons gone.
    let update = &slack.wait_for("/r/1", 1, 10).await[0].body;
    assert_eq!(update["replace_original"], true, "{update}");
    assert!(message_text(update).contains("Approved by ana"), "{update}");
    assert_eq!(action_ids(update), ["open_console"], "{update}");

    // Reject (signed with the old secret: both are accepted while rotating).
    let p = pending_proposal(&server, 30_000).await;
    let id = p["id"].as_str().unwrap();
    let r =
        press_signed(&server, OLD_SECRET, &press_body("U0BEN", "reject", &button_value(&p), &slack.url("/r/2"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let now = status(&server, id).await;
    assert_eq!(now["status"], "rejected", "{now}");
    assert_eq!(now["approvals"][0]["via"], "slack");
    assert!(now["approvals"][0]["reason"].as_str().unwrap().contains("Slack"), "{now}");
    let update = &slack.wait_for("/r/2", 1, 10).await[0].body;
    assert!(message_text(update).contains("Rejected by ben"), "{update}");
    assert_eq!(action_ids(update), ["open_console"]);

    // Dual approval: the first press keeps the buttons and says 1 of 2.
    add_acme_approver(&server, "kim", 50_000_000).await;
    link_slack(&server, "acme", "kim", "U0KIM").await;
    let p = pending_proposal(&server, 1_500_000).await;
    let id = p["id"].as_str().unwrap();
    let value = button_value(&p);
    assert_eq!(
        press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &value, &slack.url("/r/3"))).await.status,
        200
    );
    assert_eq!(status(&server, id).await["status"], "pending_approval");
    let update = &slack.wait_for("/r/3", 1, 10).await[0].body;
    assert!(message_text(update).contains("1 of 2"), "{update}");
    assert_eq!(action_ids(update), ["approve", "reject", "open_console"]);
    // The same person pressing again changes nothing.
    assert_eq!(
        press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &value, &slack.url("/r/4"))).await.status,
        200
    );
    let refusal = &slack.wait_for("/r/4", 1, 10).await[0].body;
    assert_eq!(
        (refusal["response_type"].as_str(), refusal["replace_original"].as_bool()),
        (Some("ephemeral"), Some(false))
    );
    assert_eq!(status(&server, id).await["approvals"].as_array().unwrap().len(), 1);
    // A second approver completes it.
    assert_eq!(
        press_signed(&server, NEW_SECRET, &press_body("U0KIM", "approve", &value, &slack.url("/r/5"))).await.status,
        200
    );
    assert_eq!(status(&server, id).await["status"], "approved");
    let update = &slack.wait_for("/r/5", 1, 10).await[0].body;
    assert!(message_text(update).contains("Approved by kim"), "{update}");
}

#[tokio::test]
async fn every_failure_of_the_signature_check_changes_nothing() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;
    let p = pending_proposal(&server, 25_000).await;
    let id = p["id"].as_str().unwrap();
    let body = press_body("U0BEN", "approve", &button_value(&p), &slack.url("/r/forged"));
    let now = now_unix();
    let ts = now.to_string();
    let good = slack_signature(NEW_SECRET, &ts, &body);
    let stale = (now - 6 * 60).to_string();
    let future = (now + 6 * 60).to_string();
    let other = pending_proposal(&server, 26_000).await;
    let altered = press_body("U0BEN", "approve", &button_value(&other), &slack.url("/r/forged"));

    // (what, body, timestamp header, signature header, refusal reason)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<String>, &'a str);
    let cases: Vec<Case> = vec![
        ("no signature", &body, Some(&ts), None, "missing_signature"),
        ("no timestamp", &body, None, Some(good.clone()), "missing_timestamp"),
        ("wrong secret", &body, Some(&ts), Some(slack_signature("not-our-secret", &ts, &body)), "bad_signature"),
        ("stale timestamp", &body, Some(&stale), Some(slack_signature(NEW_SECRET, &stale, &body)), "stale_timestamp"),
        (
            "future timestamp",
            &body,
            Some(&future),
            Some(slack_signature(NEW_SECRET, &future, &body)),
            "future_timestamp",
        ),
        ("body altered after signing", &altered, Some(&ts), Some(good.clone()), "bad_signature"),
        ("timestamp altered after signing", &body, Some(&stale), Some(good.clone()), "stale_timestamp"),
        ("garbage signature", &body, Some(&ts), Some("v0=zzzz".into()), "bad_signature"),
    ];
    for (what, body, ts, sig, reason) in cases {
        let r = post_interaction(&server, body, ts, sig.as_deref()).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        assert_eq!(r.body["error"]["code"], "unauthenticated", "{what}");
        assert_eq!(r.body["error"]["reason"], reason, "{what}: {}", r.text);
        // The expected MAC is never returned.
        let expected = slack_signature(NEW_SECRET, ts.unwrap_or(""), body);
        assert!(!r.text.contains(&expected[3..]), "{what}: {}", r.text);
    }
    assert_still_pending(&server, id).await;
    assert_still_pending(&server, other["id"].as_str().unwrap()).await;

    // A replay of a genuine request (same timestamp and signature) changes nothing.
    let first = post_interaction(&server, &body, Some(&ts), Some(&good)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(status(&server, id).await["status"], "approved");
    let replay = post_interaction(&server, &body, Some(&ts), Some(&good)).await;
    assert_eq!(replay.status, 401, "{}", replay.text);
    assert_eq!(replay.body["error"]["reason"], "replayed");
    // Nor does a replay with the signature's hex digits re-cased (found by fuzzing).
    let respelled = format!("v0={}", good[3..].to_uppercase());
    let replay = post_interaction(&server, &body, Some(&ts), Some(&respelled)).await;
    assert_eq!(replay.status, 401, "{}", replay.text);
    assert_eq!(replay.body["error"]["reason"], "bad_signature");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(slack.received("/r/forged").await.len(), 1, "one follow-up, for the genuine press only");
    assert_eq!(status(&server, id).await["approvals"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn refused_presses_change_nothing_and_are_explained_to_the_presser() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    for (tenant, user, slack_id) in [
        ("acme", "ana", "U0ANA"),
        ("acme", "ben", "U0BEN"),
        ("acme", "vic", "U0VIC"),
        ("acme", "maya", "U0MAYA"),
        ("globex", "gus", "U0GUS"),
    ] {
        link_slack(&server, tenant, user, slack_id).await;
    }
    // 6,000.00 USD: one approval needed, above ana's 5,000.00 limit.
    let p = pending_proposal(&server, 600_000).await;
    let id = p["id"].as_str().unwrap();
    let value = button_value(&p);
    let wrong_hash = format!("{id}:sha256:{}", "ab".repeat(32));
    // 30,000.00 USD: above slack.max_direct_approve_minor (20,000.00).
    let big = pending_proposal(&server, 3_000_000).await;
    let announced = announcement(&slack, &big).await;
    assert!(!action_ids(&announced).contains(&"approve".to_owned()), "{announced}");
    assert!(action_ids(&announced).contains(&"approve_in_console".to_owned()));

    let cases = [
        ("unmapped user", "U0NOBODY", value.as_str(), "not linked"),
        ("viewer", "U0VIC", &value, "only approvers"),
        ("the user the agent acts for", "U0MAYA", &value, "Nothing was done"),
        ("over their limit", "U0ANA", &value, "Nothing was done"),
        ("hash no longer matches", "U0BEN", &wrong_hash, "no longer matches"),
        ("another tenant's user", "U0GUS", &value, "not found"),
    ];
    for (n, (what, user, value, says)) in cases.iter().enumerate() {
        let path = format!("/r/refused-{n}");
        let r = press_signed(&server, NEW_SECRET, &press_body(user, "approve", value, &slack.url(&path))).await;
        assert_eq!(r.status, 200, "{what}: {}", r.text);
        let reply = &slack.wait_for(&path, 1, 10).await[0].body;
        assert_eq!(reply["response_type"], "ephemeral", "{what}: {reply}");
        assert_eq!(reply["replace_original"], false, "{what}");
        assert!(message_text(reply).contains(says), "{what}: {reply}");
        assert!(!message_text(reply).contains(ACME_PAYEE), "{what}: {reply}");
    }
    // Policy's own words for segregation of duties and limits reach the presser.
    let maya = message_text(&slack.received("/r/refused-2").await[0].body);
    let ana = message_text(&slack.received("/r/refused-3").await[0].body);
    assert_ne!(maya, ana, "each refusal says why");
    // A forged approve press on the big one changes nothing either.
    let r =
        press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&big), &slack.url("/r/big")))
            .await;
    assert_eq!(r.status, 200);
    assert!(message_text(&slack.wait_for("/r/big", 1, 10).await[0].body).contains("in the console"));

    assert_still_pending(&server, id).await;
    assert_still_pending(&server, big["id"].as_str().unwrap()).await;
    // Rejecting needs no approval limit: ben's reject still works after all that.
    press_signed(&server, NEW_SECRET, &press_body("U0BEN", "reject", &value, &slack.url("/r/ok"))).await;
    assert_eq!(status(&server, id).await["status"], "rejected");
}

#[tokio::test]
async fn the_outbox_survives_a_crash_and_retries_until_slack_answers() {
    let slack = FakeSlack::start().await;
    slack.set_failing(true);
    // A process: it is killed and restarted.
    let server = TestServer::start_process_with(&slack_config(&slack)).await;
    // Slack is down: the agent is answered at once all the same.
    let t0 = Instant::now();
    let p = pending_proposal(&server, 25_000).await;
    let cancelled = pending_proposal(&server, 26_000).await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    slack.wait_for("/hook/acme", 3, 15).await;
    assert!(outbox_rows(&server, "status = 'pending' AND attempts >= 1 AND last_error = 'HTTP 500'").await >= 1);
    let r = send(server.post_json(
        &format!("/api/v1/proposals/{}/cancel", cancelled["id"].as_str().unwrap()),
        ACME_BOT_KEY,
        &json!({}),
    ))
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Crash (SIGKILL), Slack comes back, the server restarts: the message goes out.
    let (dir, config) = server.stop().await;
    slack.set_failing(false);
    let before = slack.received("/hook/acme").await.len();
    let server = TestServer::spawn(dir, config).await;
    let id = p["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !slack.received("/hook/acme").await[before..].iter().any(|m| message_text(&m.body).contains(id)) {
        assert!(Instant::now() < deadline, "delivered after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Slack has it; the outbox records the delivery once Slack's answer is read.
    let deadline = Instant::now() + Duration::from_secs(10);
    while outbox_rows(&server, &format!("proposal_id = '{id}' AND status = 'delivered'")).await != 1 {
        assert!(Instant::now() < deadline, "recorded as delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The cancelled proposal's message is no longer worth sending: abandoned, not sent.
    let gone = cancelled["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while outbox_rows(&server, &format!("proposal_id = '{gone}' AND status = 'abandoned'")).await != 1 {
        assert!(Instant::now() < deadline, "abandoned after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!slack.received("/hook/acme").await[before..].iter().any(|m| message_text(&m.body).contains(gone)));
}

#[tokio::test]
async fn response_urls_off_the_allowlist_are_ignored_and_redirects_are_not_followed() {
    let slack = FakeSlack::start().await;
    let scratch = Scratch::with_fixture(&slack_config(&slack));
    scratch.apply_fixture().await;
    let log_path = scratch.dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = TestServer::spawn_logging(scratch.dir, scratch.config, &[("COUNTERSIGN_LOG", "info")], log).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;

    for (n, off_list) in
        ["https://evil.example/hook", "http://localhost:9/hook", "http://10.0.0.1/hook"].iter().enumerate()
    {
        let p = pending_proposal(&server, 25_000 + n as u64).await;
        let r = press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&p), off_list)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        // The decision stands (the press was genuine); the follow-up is dropped.
        assert_eq!(status(&server, p["id"].as_str().unwrap()).await["status"], "approved");
    }
    assert_eq!(outbox_rows(&server, "target = 'response_url'").await, 0);
    let logged = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(logged.matches("response_url refused").count(), 3, "{logged}");
    assert!(!logged.contains("evil.example"), "the URL itself is not logged");

    // A redirect is never followed.
    let p = pending_proposal(&server, 27_000).await;
    let r =
        press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&p), &slack.url("/redirect")))
            .await;
    assert_eq!(r.status, 200);
    slack.wait_for("/redirect", 1, 10).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while outbox_rows(&server, "target = 'response_url' AND status = 'abandoned'").await != 1 {
        assert!(Instant::now() < deadline, "the redirected message is abandoned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(slack.received("/landed").await.is_empty());
    assert_eq!(slack.received("/redirect").await.len(), 1);
}

#[tokio::test]
async fn the_answer_comes_within_3_seconds_even_when_slack_is_slow() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;
    let p = pending_proposal(&server, 25_000).await;
    let t0 = Instant::now();
    let r = press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&p), &slack.url("/slow")))
        .await;
    assert_eq!(r.status, 200);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(status(&server, p["id"].as_str().unwrap()).await["status"], "approved");
}

#[tokio::test]
async fn slack_ids_are_linked_with_the_cli_and_the_admin_page() {
    let slack = FakeSlack::start().await;
    let server = start(&slack).await;
    let users = |s: &str| format!("SELECT COUNT(*) FROM users WHERE slack_user_id = '{s}'");
    link_slack(&server, "acme", "ben", "U0BEN").await;
    assert_eq!(scalar(&server.db().await, &users("U0BEN")).await, 1);
    // One Slack id, one user; ids are shape-checked; users are looked up in the tenant.
    for (args, says) in [
        (vec!["--tenant", "acme", "--username", "ana", "--slack-user-id", "U0BEN"], "already linked"),
        (vec!["--tenant", "acme", "--username", "ana", "--slack-user-id", "U0/../x"], "slack_user_id"),
        (vec!["--tenant", "globex", "--username", "ana", "--slack-user-id", "U0ANA"], "no user ana"),
    ] {
        let (code, stdout, stderr) = server.cli(&[&["user", "link-slack"][..], &args].concat()).await;
        assert_ne!(code, 0, "{args:?}: {stdout}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let (code, _, _) = server.cli(&["user", "link-slack", "--tenant", "acme", "--username", "ben", "--unlink"]).await;
    assert_eq!(code, 0);
    assert_eq!(scalar(&server.db().await, &users("U0BEN")).await, 0);

    // The admin page: gus (globex admin) links himself, and cannot reach acme's users.
    let gus = Console::sign_in(&server, "gus").await;
    let form = |username: &str, slack_id: &str| {
        gus.authed(reqwest::Method::POST, "/admin/slack-links").form(&[
            ("username", username),
            ("slack_user_id", slack_id),
            ("csrf_token", gus.csrf.as_str()),
        ])
    };
    let r = send(form("gus", "U0GUS")).await;
    assert!(r.status == 303 || r.status == 302, "{} {}", r.status, r.text);
    assert_eq!(scalar(&server.db().await, &users("U0GUS")).await, 0, "a link waits for a second admin");
    let gia = add_admin(&server, "globex", "gia").await;
    let change = pending_change_ids(&server).await.pop().expect("pending link");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(scalar(&server.db().await, &users("U0GUS")).await, 1);
    send(form("ana", "U0ANAX")).await;
    assert_eq!(scalar(&server.db().await, &users("U0ANAX")).await, 0, "another tenant's user is out of reach");
    let audit = scalar(
        &server.db().await,
        &format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'registry.user.slack_linked' AND actor = 'user:{}'",
            gia.user_id()
        ),
    )
    .await;
    assert_eq!(audit, 1);
    // A viewer cannot link anyone.
    let vic = Console::sign_in(&server, "vic").await;
    let r = send(vic.authed(reqwest::Method::POST, "/admin/slack-links").form(&[
        ("username", "vic"),
        ("slack_user_id", "U0VIC"),
        ("csrf_token", vic.csrf.as_str()),
    ]))
    .await;
    assert_ne!(r.status, 303);
    assert_eq!(scalar(&server.db().await, &users("U0VIC")).await, 0);
}

#[tokio::test]
async fn a_lapsed_approval_is_announced_again_to_the_approvers() {
    // An approval the agent did not redeem in time lapses;
    // the approvers hear of it where they are, with the buttons again.
    let slack = FakeSlack::start().await;
    let config =
        format!("{}\n[approval]\ntoken_ttl_secs = 1\n\n[proposals]\nexpiry_sweep_secs = 1\n", slack_config(&slack));
    let server = TestServer::start_process_with(&config).await;
    let p = pending_proposal(&server, 25_000).await;
    let id = p["id"].as_str().unwrap().to_owned();
    announcement(&slack, &p).await;
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&id).await.status, 200);
    // Past the token's 30 s leeway without waiting it out: the server again,
    // its clock 45 s ahead (test hook).
    let (dir, config) = server.stop().await;
    let server = TestServer::spawn_env(dir, config, &[("COUNTERSIGN_CLOCK_SKEW_SECS", "45")]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let lapsed = loop {
        let found = slack.received("/hook/acme").await.into_iter().find(|m| {
            let text = message_text(&m.body);
            text.contains(&id) && text.contains("lapsed")
        });
        if let Some(m) = found {
            break m.body;
        }
        assert!(Instant::now() < deadline, "the lapse announced within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(lapsed["text"].as_str().unwrap().starts_with("Approval lapsed, approve again: 250.00 USD"), "{lapsed}");
    let buttons = lapsed["blocks"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(buttons["block_id"], "decision", "{lapsed}");
    assert_eq!(status(&server, &id).await["status"], "approval_expired");
}
