//! Several `serve` processes on one PostgreSQL database (issue 16, part 1):
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
    if !on_postgres() {
        eprintln!("SKIPPED {test}: needs API_TESTS_DATABASE=postgres (make test runs it)");
        return None;
    }
    let rail = RailSim::start().await;
    let scratch = Scratch::new(extra);
    scratch.apply_fixture().await;
    let second = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(scratch.data_dir(), second.path().join("data")).expect("share the data directory");
    let config = scratch.config.clone();
    // One after the other: the first creates the signing keys.
    let a = scratch.serve(&env_for(&rail, &[])).await;
    let b = TestServer::spawn_env(second, config, &env_for(&rail, &[])).await;
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
