//! Approval groups (docs/POLICY.md): a tenant's rule can
//! require approvals from named groups ("one from treasury and one from
//! controllers", "any 2 of 3 directors"), beside the dual approval. Each
//! person counts for one group; an approval that would help no group still
//! short is refused; the agent's status, the console and Slack say what is
//! needed; commit checks the groups again with their members as they stand
//! then; `countersign policy explain` shows the rule for a sample request.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::{add_acme_approver, pending_for, status_of, Console};
use crate::helpers::*;

/// treasury: ana; controllers: ben, carol; directors: ana, ben, carol.
/// From 1,000.00 USD one from treasury and one from controllers; from
/// 4,000.00 USD two directors.
const GROUPS: &str = "[tenants.acme.approval_groups]\ntreasury = [\"ana\"]\ncontrollers = [\"ben\", \"carol\"]\n\
    directors = [\"ana\", \"ben\", \"carol\"]\n\
    [[tenants.acme.group_approval]]\ncurrency = \"USD\"\nfrom_minor = 100000\n\
    require = [{ group = \"treasury\", count = 1 }, { group = \"controllers\", count = 1 }]\n\
    [[tenants.acme.group_approval]]\ncurrency = \"USD\"\nfrom_minor = 400000\n\
    require = [{ group = \"directors\", count = 2 }]\n";

async fn approve(console: &Console, id: &str) -> Reply {
    console.approve(id).await
}

#[tokio::test]
async fn one_from_treasury_and_one_from_controllers_each_counting_once() {
    let server = TestServer::start_process_with(GROUPS).await;
    add_acme_approver(&server, "carol", 10_000_000).await;
    add_acme_approver(&server, "dan", 10_000_000).await;
    let (ana, ben, carol, dan) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "carol").await,
        Console::sign_in(&server, "dan").await,
    );
    // Under the band: no group rule, and the policy object says nothing of groups.
    let small = pending_for(&server, 25_000).await;
    let view = server.get_proposal(ACME_BOT_KEY, &small).await.body;
    assert!(view["policy"].get("groups").is_none(), "{view}");

    let id = pending_for(&server, 200_000).await;
    let view = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    assert_eq!(
        view["policy"]["groups"],
        json!([{"group": "treasury", "count": 1}, {"group": "controllers", "count": 1}]),
        "{view}"
    );
    assert_eq!(view["policy"]["required_approvals"], 2);
    let rules: Vec<&str> =
        view["policy"]["reasons"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap()).collect();
    assert!(rules.contains(&"group_approval"), "{rules:?}");

    // dan is in no group: his approval would help none.
    let r = approve(&dan, &id).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["group_approval"], "{}", r.text);
    assert!(r.text.contains("treasury and controllers"), "{}", r.text);
    // ben fills controllers; then carol (controllers too) helps no more.
    assert!(approve(&ben, &id).await.status < 400);
    assert_eq!(status_of(&server, &id).await, "pending_approval");
    let r = approve(&carol, &id).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["group_approval"], "{}", r.text);

    // The console says what is still needed, and from whom.
    let page = send(dan.authed(Method::GET, &format!("/proposals/{id}"))).await.text;
    let needed = &page[page.find(r#"id="still-needed""#).expect("still needed")..];
    let needed = &needed[..needed.find("</p>").unwrap()];
    assert!(
        needed.contains("from: ana.") && needed.contains("Still needed from named groups: 1 from treasury."),
        "{needed}"
    );
    assert!(
        page.contains("The approvals still missing must come from treasury; you are not in it."),
        "dan's Approve says why"
    );

    // ana fills treasury: approved with two approvals.
    let r = approve(&ana, &id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let token = server.get_proposal(ACME_BOT_KEY, &id).await.body["approval_token"].as_str().unwrap().to_owned();

    // Commit checks the groups as they stand then: ana has left treasury.
    // (The config file holds more than GROUPS, the database URL on PostgreSQL among it.)
    let (dir, config) = server.stop().await;
    let written = std::fs::read_to_string(&config).unwrap();
    let moved = written.replace("treasury = [\"ana\"]", "treasury = [\"dan\"]");
    assert_ne!(moved, written);
    std::fs::write(&config, moved).unwrap();
    let server = TestServer::spawn_env(dir, config.clone(), &[]).await;
    let r = server.commit(&id, &token).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["group_approval"], "{}", r.text);
    assert!(r.text.contains("1 from treasury"), "{}", r.text);
    // Back in treasury, the same token pays.
    let (dir, config) = server.stop().await;
    std::fs::write(&config, written).unwrap();
    let server = TestServer::spawn_env(dir, config, &[]).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn any_two_of_three_directors() {
    let server = TestServer::start_process_with(GROUPS).await;
    add_acme_approver(&server, "carol", 10_000_000).await;
    add_acme_approver(&server, "dan", 10_000_000).await;
    let (ana, ben, dan) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "dan").await,
    );
    let id = pending_for(&server, 450_000).await;
    let view = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    assert_eq!(view["policy"]["groups"], json!([{"group": "directors", "count": 2}]));
    approve(&dan, &id).await.assert_error(403, "policy_denied");
    assert!(approve(&ana, &id).await.status < 400);
    assert_eq!(status_of(&server, &id).await, "pending_approval", "one director of two");
    let r = approve(&ben, &id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let approvers: Vec<Value> = r.body["approvals"].as_array().unwrap().clone();
    assert_eq!(approvers.len(), 2);
}

#[tokio::test]
async fn policy_explain_shows_the_rule_for_a_sample_request_and_stores_nothing() {
    let server = TestServer::start_process_with(GROUPS).await;
    let dir = TestDir::new();
    let request = dir.path().join("request.json");
    let body = with(transfer(), json!({"amount_minor": 200_000, "run_id": "explain-1"}));
    std::fs::write(&request, body.to_string()).unwrap();
    let before: i64 = server.scalar("SELECT COUNT(*) FROM proposals").await;
    let audit_before: i64 = server.scalar("SELECT COUNT(*) FROM audit_log").await;
    let path = request.to_str().unwrap();
    let (code, out, err) = server.cli(&["policy", "explain", "--tenant", "acme", "--agent", "payout-bot", path]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Policy:    needs 2 human approvals from different people"), "{out}");
    assert!(
        out.contains(
            "group_approval: 2,000.00 USD needs approvals from named groups: 1 from treasury and 1 from controllers."
        ),
        "{out}"
    );
    assert!(out.contains("  - 1 from treasury: ana\n") && out.contains("  - 1 from controllers: ben, carol"), "{out}");
    assert!(out.contains("First approval could come from: ana, ben"), "{out}");
    assert!(!out.contains(ACME_SOURCE), "no full account number: {out}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, before, "nothing stored");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM audit_log").await, audit_before, "nothing audited");

    // What is wrong with a request is named.
    std::fs::write(&request, json!({"amount_minor": 5}).to_string()).unwrap();
    let (code, _, err) = server.cli(&["policy", "explain", "--tenant", "acme", "--agent", "payout-bot", path]).await;
    assert_eq!(code, 1);
    assert!(err.contains("run_id: is required"), "{err}");
    let (code, _, err) = server.cli(&["policy", "explain", "--tenant", "acme", "--agent", "nobody", path]).await;
    assert_eq!((code, err.trim()), (1, "countersign: no agent `nobody` in tenant `acme`"));
}

#[tokio::test]
async fn a_risk_signals_extra_approval_is_given_by_anyone_once_the_groups_are_met() {
    // A first payment to the payee is a signal; with extra_approval it asks a
    // third approval beside the two the groups fill.
    let server = TestServer::start_process_with(&format!("{GROUPS}[risk]\nextra_approval = true\n")).await;
    add_acme_approver(&server, "carol", 10_000_000).await;
    add_acme_approver(&server, "dan", 10_000_000).await;
    let (ana, ben, dan) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "dan").await,
    );
    let id = pending_for(&server, 200_000).await;
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["policy"]["required_approvals"], 3);
    // dan's plain approval is still wanted (one beyond the groups), so it counts.
    assert!(approve(&dan, &id).await.status < 400);
    // Now only the groups' members help.
    let carol = Console::sign_in(&server, "carol").await;
    assert!(approve(&carol, &id).await.status < 400, "carol fills controllers");
    assert_eq!(status_of(&server, &id).await, "pending_approval");
    approve(&ben, &id).await.assert_error(403, "policy_denied");
    let r = approve(&ana, &id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
}
