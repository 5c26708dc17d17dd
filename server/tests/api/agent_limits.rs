//! Per-agent request limits on the agent API (docs/CONFIG.md "Agent API limits"): an agent past its limit is answered
//! 429 `rate_limited` with `Retry-After` and nothing it sent is done; other
//! agents, the same agent name in another tenant, and the console keep
//! their capacity; a per-agent limit overrides the default.

use reqwest::Method;
use serde_json::json;

use crate::console_client::*;
use crate::helpers::*;

const LIMITS: &str = r#"
[agent_api]
requests_per_second = 1
burst = 5

[agent_api.agents."acme/other-bot"]
requests_per_second = 1000
burst = 1000
"#;

/// Sends `n` list requests as `key` at once: how many were served, and the
/// refusals.
async fn flood(server: &TestServer, key: &str, n: usize) -> (usize, Vec<Reply>) {
    let replies = futures::future::join_all((0..n).map(|_| server.list(key, "limit=1"))).await;
    let (ok, refused): (Vec<Reply>, Vec<Reply>) = replies.into_iter().partition(|r| r.status == 200);
    (ok.len(), refused)
}

#[tokio::test]
async fn an_agent_past_its_limit_waits_while_others_and_the_console_are_served() {
    let server = TestServer::start_with(LIMITS).await;

    // payout-bot: a burst of 5 at 1 per second. Of 30 at once, about 5 pass.
    let (served, refused) = flood(&server, ACME_BOT_KEY, 30).await;
    assert!((5..=7).contains(&served), "served {served} of 30");
    for r in &refused {
        r.assert_error(429, "rate_limited");
        let wait: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!((1..=2).contains(&wait), "Retry-After {wait}");
    }

    // Refused writes are not done: no proposal is created.
    let before = server.scalar("SELECT COUNT(*) FROM proposals").await;
    server.propose_as(ACME_BOT_KEY, &transfer()).await.assert_error(429, "rate_limited");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, before);

    // Another agent of the tenant has its own (larger) limit; globex's
    // payout-bot, the same name in another tenant, its own bucket.
    let (served, refused) = flood(&server, ACME_OTHER_KEY, 30).await;
    assert_eq!((served, refused.len()), (30, 0));
    let (served, _) = flood(&server, GLOBEX_BOT_KEY, 5).await;
    assert_eq!(served, 5);

    // The console is not slowed by any agent.
    let ana = Console::sign_in(&server, "ana").await;
    let queue = send(ana.bare(Method::GET, "/api/v1/queue")).await;
    assert_eq!(queue.status, 200, "{}", queue.text);

    // After Retry-After, payout-bot is served again.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let created = server.propose_as(ACME_BOT_KEY, &json!(transfer())).await;
    assert_eq!(created.status, 201, "{}", created.text);
}

#[tokio::test]
async fn unknown_keys_are_refused_as_unauthenticated_not_counted() {
    let server = TestServer::start_with(LIMITS).await;
    for _ in 0..10 {
        let r = server.list("cs_test_wrong0key0000000000000000000000", "limit=1").await;
        r.assert_error(401, "unauthenticated");
    }
    // The real agent's bucket is whole.
    let (served, _) = flood(&server, ACME_BOT_KEY, 5).await;
    assert_eq!(served, 5);
}
