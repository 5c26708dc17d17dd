//! Several `serve` processes on one PostgreSQL database:
//! what must happen once happens once whichever instance is asked. Only on
//! PostgreSQL runs (`API_TESTS_DATABASE=postgres`); elsewhere each test
//! says it skipped.
//!
//! The instances share the config (so the database) and the data
//! directory (the approval-token signing keys), and call one rail
//! simulator, as a deployment behind a proxy would.

use crate::helpers::*;
use crate::rail_harness::*;

/// Two instances of one deployment and its rail, or None off PostgreSQL.
async fn two_instances(test: &str) -> Option<(TestServer, TestServer, RailSim)> {
    two_instances_with(test, "").await
}

/// [`two_instances`], with `extra` added to their config.
async fn two_instances_with(test: &str, extra: &str) -> Option<(TestServer, TestServer, RailSim)> {
    two_instances_env(test, extra, &[]).await
}

/// [`two_instances_with`], with extra environment for both servers.
async fn two_instances_env(test: &str, extra: &str, env: &[(&str, &str)]) -> Option<(TestServer, TestServer, RailSim)> {
    if !on_postgres() {
        eprintln!("SKIPPED {test}: needs API_TESTS_DATABASE=postgres (make test runs it)");
        return None;
    }
    let rail = RailSim::start().await;
    let scratch = Scratch::with_fixture(extra);
    scratch.apply_fixture().await;
    let second = TestDir::new();
    std::os::unix::fs::symlink(scratch.data_dir(), second.path().join("data")).expect("share the data directory");
    let config = scratch.config.clone();
    // One after the other: the first creates the signing keys.
    let a = scratch.serve(&env_for(&rail, env)).await;
    let b = TestServer::spawn_env(second, config, &env_for(&rail, env)).await;
    Some((a, b, rail))
}

#[tokio::test]
async fn twenty_commits_split_across_two_instances_make_one_transfer() {
    let Some((a, b, rail)) = two_instances("twenty_commits_split_across_two_instances_make_one_transfer").await else {
        return;
    };
    let (id, token) = auto_approved(&a, 5_000).await;
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let split = (0..20).map(|i| (if i % 2 == 0 { a.clone() } else { b.clone() }, id.clone(), token.clone()));
    let ops = operations_of(&commit_all(split.collect()).await);
    assert_eq!(ops.len(), 1, "every answer, from either instance, names the one operation: {ops:?}");
    assert_eq!(rail.transfers().await.len(), 1, "one rail transfer");
    assert_eq!(a.scalar(&format!("SELECT COUNT(*) FROM operations WHERE proposal_id = '{id}'")).await, 1);
    let (code, stdout, stderr) = a.cli(&["audit", "verify"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[tokio::test]
async fn the_daily_budget_holds_across_instances() {
    let Some((a, b, rail)) = two_instances("the_daily_budget_holds_across_instances").await else {
        return;
    };
    let (code, out, err) =
        a.cli(&["tenant", "add", "--id", "acme", "--name", "Acme Corp", "--budget", "USD=20000"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let mut approved = Vec::new();
    for _ in 0..6 {
        approved.push(auto_approved(&a, 5_000).await);
    }
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let split = approved
        .into_iter()
        .enumerate()
        .map(|(i, (id, token))| (if i % 2 == 0 { a.clone() } else { b.clone() }, id, token));
    let (ok, denied) = budget_outcomes(&commit_all(split.collect()).await);
    assert_eq!((ok, denied), (4, 2), "20,000 of budget holds four 5,000 payments, from both instances together");
    assert_eq!(rail.transfers().await.len(), 4);
    assert_eq!(a.scalar("SELECT reserved_minor FROM budget_days WHERE tenant_id = 'acme'").await, 20_000);
}

#[tokio::test]
async fn a_slack_message_is_posted_by_one_instance_only() {
    let slack = crate::slack_harness::FakeSlack::start().await;
    // Slack answers `/slow…` after 10 s and a post gives up after 3 s: while
    // the instance that took the message waits, the other one ticks every
    // second and finds it still pending. It must not post it too.
    let extra = format!(
        "[slack]\nwebhook_url = \"{}\"\nsigning_secrets = [\"{}\"]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout_ms = 3000\n",
        slack.url("/slow/hook"),
        crate::slack_harness::NEW_SECRET,
    );
    let Some((a, _b, _rail)) = two_instances_with("a_slack_message_is_posted_by_one_instance_only", &extra).await
    else {
        return;
    };
    crate::console_client::pending_for(&a, 25_000).await;
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let posts: Vec<String> = slack.received("/slow").await.into_iter().map(|r| r.path).collect();
    assert_eq!(posts.len(), 1, "the announcement is posted once, by one instance: {posts:?}");
}

#[tokio::test]
async fn an_agent_webhook_event_is_delivered_by_one_instance_only() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    // The receiver answers after 2 s: while one instance waits on it, the
    // other one's pass (every second) finds the event not yet delivered. It
    // must not send it too.
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(2)))
        .mount(&receiver)
        .await;
    let extra = "[webhooks]\nallow_http_loopback = true\nallowed_hosts = [\"hooks.example.com\"]\n";
    let Some((a, _b, _rail)) =
        two_instances_with("an_agent_webhook_event_is_delivered_by_one_instance_only", extra).await
    else {
        return;
    };
    let url = format!("{}/hook", receiver.uri());
    let (code, out, err) =
        a.cli(&["agent", "webhook", "set", "--url", &url, "--tenant", "acme", "--id", "payout-bot"]).await;
    assert_eq!(code, 0, "{out}{err}");
    crate::console_client::pending_for(&a, 25_000).await;
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    let got = receiver.received_requests().await.unwrap_or_default();
    assert_eq!(got.len(), 1, "the proposal's event is delivered once, by one instance: {} deliveries", got.len());
}

#[tokio::test]
async fn an_open_operation_is_reconciled_by_one_instance_at_a_time() {
    // Each instance looks at due operations every second. The commit's rail
    // call fails with a 500 (`unknown`); reconciliation then finds no record
    // and resubmits, and the rail takes 5 s to answer that. While it waits,
    // the other instance must leave the operation alone: no second look.
    let Some((a, _b, rail)) = two_instances_with(
        "an_open_operation_is_reconciled_by_one_instance_at_a_time",
        "[rail]\nreconcile_interval_secs = 1\n",
    )
    .await
    else {
        return;
    };
    let (id, token) = auto_approved(&a, 5_000).await;
    rail.fault("error_500", 1).await;
    let r = a.commit(&id, &token).await;
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    rail.fault_after("delay", 1, 5_000).await;
    let started = std::time::Instant::now();
    while rail.calls("POST /v1/transfers").await < 2 {
        assert!(started.elapsed().as_secs() < 20, "reconciliation never resubmitted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(
        rail.calls("GET /v1/transfers").await,
        1,
        "while one instance's resubmission is in flight, the other does not look the operation up"
    );
    a.wait_status(&id, "succeeded", 40).await;
    assert_eq!(rail.transfers().await.len(), 1, "one rail transfer");
    let (code, stdout, stderr) = a.cli(&["audit", "verify"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[tokio::test]
async fn a_long_poll_on_one_instance_wakes_when_another_decides() {
    // Without a notification the instances read the change log only every
    // 30 s here: the long-poll on `b` can only wake in time through
    // PostgreSQL's NOTIFY of `a`'s decision.
    let Some((a, b, _rail)) = two_instances_env(
        "a_long_poll_on_one_instance_wakes_when_another_decides",
        "",
        &[("COUNTERSIGN_FOLLOW_EVERY_MS", "30000")],
    )
    .await
    else {
        return;
    };
    let id = crate::console_client::pending_for(&a, 25_000).await;
    let first = b.get_proposal(ACME_BOT_KEY, &id).await;
    let etag = first.header("etag").expect("an ETag").to_owned();
    let b = std::sync::Arc::new(b);
    let waiting = tokio::spawn({
        let b = b.clone();
        let (id, etag) = (id.clone(), etag.clone());
        async move {
            let r = b
                .get(&format!("/api/v1/proposals/{id}?wait=30"), ACME_BOT_KEY)
                .header("If-None-Match", etag)
                .send()
                .await
                .expect("b answers");
            (std::time::Instant::now(), r.status().as_u16(), r.text().await.unwrap_or_default())
        }
    });
    // The poll is waiting on `b` before `a` decides.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let ana = crate::console_client::Console::sign_in(&a, "ana").await;
    let decided = ana.approve(&id).await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    let decided_at = std::time::Instant::now();
    let (woke_at, status, text) = waiting.await.expect("the poll task");
    assert_eq!(status, 200, "the long-poll on b answers with the change: {text}");
    assert!(text.contains("\"approved\""), "{text}");
    let after = woke_at.saturating_duration_since(decided_at);
    assert!(after < std::time::Duration::from_secs(5), "b woke {after:?} after a's decision");
}

#[tokio::test]
async fn a_commit_in_flight_is_not_reconciled_by_another_instance() {
    // The rail takes 4 s to answer the commit's call (inside its 10 s
    // timeout). Meanwhile the operation is `pending` and due, and the other
    // instance looks at due operations every second: it must not ask the rail
    // about it (nor resubmit it) while the commit's own call is running.
    let Some((a, _b, rail)) = two_instances_with(
        "a_commit_in_flight_is_not_reconciled_by_another_instance",
        "[rail]\nreconcile_interval_secs = 1\n",
    )
    .await
    else {
        return;
    };
    let (id, token) = auto_approved(&a, 5_000).await;
    rail.fault_after("delay", 1, 4_000).await;
    let r = a.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(rail.calls("GET /v1/transfers").await, 0, "no reconciliation looked while the commit's call ran");
    assert_eq!(rail.calls("POST /v1/transfers").await, 1, "one rail call: the commit's");
    assert_eq!(rail.transfers().await.len(), 1);
}

/// Two copies of one invoice, proposed one on each instance, approved at
/// the same moment by two approvers (ana on one instance, ben on the
/// other), then each committed at the same moment on both instances: the
/// database lets one operation hold the invoice, so one transfer is made
/// every round, whichever instance each request reached.
#[tokio::test]
async fn two_copies_of_an_invoice_approved_and_committed_on_two_instances_are_paid_once() {
    use crate::console_client::Console;
    use serde_json::json;
    let Some((a, b, rail)) =
        two_instances("two_copies_of_an_invoice_approved_and_committed_on_two_instances_are_paid_once").await
    else {
        return;
    };
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let (ana, ben) = (Console::sign_in(&a, "ana").await, Console::sign_in(&b, "ben").await);
    let mut both_approved = 0;
    for round in 0..12 {
        let invoice = format!("INV-TWO-{round}");
        let body = |run: &str| with(transfer(), json!({"amount_minor": 32_000, "invoice_id": invoice, "run_id": run}));
        let (body_a, body_b) = (body(&format!("two-a-{round}")), body(&format!("two-b-{round}")));
        let (pa, pb) = tokio::join!(a.propose_as(ACME_BOT_KEY, &body_a), b.propose_as(ACME_BOT_KEY, &body_b));
        let (ida, idb) = (pa.body["id"].as_str().unwrap().to_owned(), pb.body["id"].as_str().unwrap().to_owned());
        let (ra, rb) = tokio::join!(ana.approve(&ida), ben.approve(&idb));
        let approved: Vec<&String> =
            [(&ida, &ra), (&idb, &rb)].into_iter().filter(|(_, r)| r.status == 200).map(|(id, _)| id).collect();
        for r in [&ra, &rb].into_iter().filter(|r| r.status != 200) {
            r.assert_error(403, "policy_denied");
            assert_eq!(r.detail_rules(), ["duplicate_invoice"], "{}", r.text);
        }
        both_approved += usize::from(approved.len() == 2);
        let mut commits = Vec::new();
        for id in &approved {
            let token = a.get_proposal(ACME_BOT_KEY, id).await.body["approval_token"].as_str().unwrap().to_owned();
            // Each token committed on both instances at once.
            commits.push((a.clone(), id.to_string(), token.clone()));
            commits.push((b.clone(), id.to_string(), token));
        }
        let replies = commit_all(commits).await;
        let transfers = rail
            .transfers()
            .await
            .iter()
            .filter(|t| t["metadata"]["proposal_id"] == ida.as_str() || t["metadata"]["proposal_id"] == idb.as_str())
            .count();
        assert_eq!(
            transfers,
            1,
            "round {round}: one transfer: {:?}",
            replies.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
        for r in replies.iter().filter(|r| r.status != 200) {
            r.assert_error(403, "policy_denied");
            assert_eq!(r.detail_rules(), ["duplicate_invoice"], "{}", r.text);
        }
    }
    eprintln!("{both_approved} of 12 rounds had both copies approved; one transfer each round");
}

/// The registered invoice's open balance across instances: two partial
/// payments that together exceed it, committed at the same moment, one on
/// each instance (`payables::race_partial_payments`).
#[tokio::test]
async fn partial_payments_committed_on_two_instances_never_exceed_the_open_balance() {
    let Some((a, b, rail)) =
        two_instances("partial_payments_committed_on_two_instances_never_exceed_the_open_balance").await
    else {
        return;
    };
    crate::payables::race_partial_payments(std::sync::Arc::new(a), std::sync::Arc::new(b), &rail, 12).await;
}
