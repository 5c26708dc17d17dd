//! Policy on propose (SPEC §2, §4): auto-approval, dual approval, refund
//! review, and the agent's own source accounts and purposes.

use serde_json::{json, Value};

use crate::helpers::*;

fn rules(p: &Value) -> Vec<String> {
    p["policy"]["reasons"].as_array().expect("reasons").iter().map(|r| r["rule"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn small_payment_to_a_trusted_payee_is_auto_approved_by_policy() {
    let server = TestServer::start().await;
    let body = with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 9_999}));
    let p = server.create(&body).await;
    assert_eq!(p["status"], "approved", "{p}");
    assert_eq!(p["policy"]["outcome"], "auto_approved");
    assert_eq!(p["policy"]["required_approvals"], 0);
    assert!(rules(&p).contains(&"auto_approve_trusted_payee".to_owned()), "{p}");
    assert_eq!(p["payee"]["trusted"], true);
    let approvals = p["approvals"].as_array().expect("approvals");
    assert_eq!(approvals.len(), 1, "{p}");
    assert_eq!(approvals[0]["approver_id"], "policy:auto_approve_trusted_payee");
    assert_eq!(approvals[0]["decision"], "approve");
    rfc3339(&approvals[0]["at"]);

    let actions = server.audit_actions(p["id"].as_str().unwrap()).await;
    assert_eq!(actions, ["proposal.created", "proposal.approved"], "every transition is audited");
}

#[tokio::test]
async fn payment_at_the_auto_approve_threshold_needs_a_human() {
    let server = TestServer::start().await;
    let body = with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 10_000}));
    let p = server.create(&body).await;
    assert_eq!(p["status"], "pending_approval", "{p}");
    assert_eq!(p["policy"]["outcome"], "needs_approval");
    assert_eq!(p["policy"]["required_approvals"], 1);
    assert_eq!(p["approvals"], json!([]));
}

#[tokio::test]
async fn small_payment_to_an_untrusted_payee_needs_a_human() {
    let server = TestServer::start().await;
    let p = server.create(&with(transfer(), json!({"amount_minor": 100}))).await;
    assert_eq!(p["status"], "pending_approval");
    assert_eq!(p["policy"]["outcome"], "needs_approval");
    assert_eq!(p["policy"]["required_approvals"], 1);
    assert!(!rules(&p).contains(&"auto_approve_trusted_payee".to_owned()));
}

#[tokio::test]
async fn payment_of_10000_usd_needs_two_approvals() {
    let server = TestServer::start().await;
    for payee in [ACME_PAYEE, ACME_TRUSTED_PAYEE] {
        let p = server.create(&with(transfer(), json!({"amount_minor": 1_000_000, "destination": payee}))).await;
        assert_eq!(p["status"], "pending_approval", "{p}");
        assert_eq!(p["policy"]["outcome"], "needs_approval");
        assert_eq!(p["policy"]["required_approvals"], 2, "{p}");
        let reasons = p["policy"]["reasons"].as_array().unwrap();
        let dual =
            reasons.iter().find(|r| r["rule"] == "dual_approval").unwrap_or_else(|| panic!("no dual_approval: {p}"));
        assert!(dual["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let below = server.create(&with(transfer(), json!({"amount_minor": 999_999}))).await;
    assert_eq!(below["policy"]["required_approvals"], 1, "{below}");
    assert!(!rules(&below).contains(&"dual_approval".to_owned()));
}

#[tokio::test]
async fn refund_of_99000_usd_needs_manual_review() {
    let server = TestServer::start().await;
    // Even to a trusted payee.
    let body = json!({"amount_minor": 9_900_000, "purpose_code": "refund", "destination": ACME_TRUSTED_PAYEE});
    let p = server.create(&with(transfer(), body)).await;
    assert_eq!(p["status"], "pending_approval", "{p}");
    assert_eq!(p["policy"]["outcome"], "needs_approval");
    assert!(rules(&p).contains(&"refund_manual_review".to_owned()), "{p}");
    assert!(p["policy"]["required_approvals"].as_u64().unwrap() >= 1);

    let below = server.create(&with(transfer(), json!({"amount_minor": 9_899_999, "purpose_code": "refund"}))).await;
    assert!(!rules(&below).contains(&"refund_manual_review".to_owned()), "{below}");
    // A vendor payment of the same size is not a refund.
    let vendor = server.create(&with(transfer(), json!({"amount_minor": 9_900_000}))).await;
    assert!(!rules(&vendor).contains(&"refund_manual_review".to_owned()), "{vendor}");
}

/// Asserts a 403 `policy_denied` naming `expected` rules, with nothing stored
/// but one `proposal.denied` audit entry.
async fn assert_denied(server: &TestServer, body: &Value, expected: &[&str]) {
    let before_list = server.all_ids(ACME_BOT_KEY).await;
    let before_proposals = server.scalar("SELECT COUNT(*) FROM proposals").await;
    let before_denied = server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'proposal.denied'").await;

    let r = server.propose_as(ACME_BOT_KEY, body).await;
    r.assert_error(403, "policy_denied");
    let got = r.detail_rules();
    for rule in expected {
        assert!(got.iter().any(|g| g == rule), "details name `{rule}`: {}", r.text);
    }
    for d in r.body["error"]["details"].as_array().unwrap() {
        assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "each reason is readable: {d}");
    }

    assert_eq!(server.all_ids(ACME_BOT_KEY).await, before_list, "the listing is unchanged");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, before_proposals, "nothing stored");
    assert_eq!(
        server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'proposal.denied'").await,
        before_denied + 1,
        "the denial is audited"
    );
    let row = query(
        "SELECT tenant_id, actor, request_hash FROM audit_log WHERE action = 'proposal.denied' ORDER BY seq DESC LIMIT 1",
    )
    .fetch_one(&server.db().await)
    .await
    .unwrap();
    let (tenant, actor, hash): (Option<String>, String, Option<String>) =
        (row.get("tenant_id"), row.get("actor"), row.get("request_hash"));
    assert_eq!(tenant.as_deref(), Some("acme"));
    assert!(actor.contains("payout-bot"), "the agent is the actor: {actor}");
    assert!(hash.as_deref().is_some_and(is_request_hash), "the denied request's hash is kept: {hash:?}");
}

#[tokio::test]
async fn source_account_not_configured_for_the_agent_is_policy_denied() {
    let server = TestServer::start().await;
    server.create(&transfer()).await;
    let body = with(transfer(), json!({"source_account": GLOBEX_SOURCE, "run_id": "run-denied"}));
    assert_denied(&server, &body, &["source_account_not_allowed"]).await;
}

#[tokio::test]
async fn purpose_not_allowed_for_the_agent_is_policy_denied() {
    let server = TestServer::start().await;
    server.create(&transfer()).await;
    let body = with(transfer(), json!({"purpose_code": "payroll", "run_id": "run-denied"}));
    assert_denied(&server, &body, &["purpose_not_allowed"]).await;
    // other-bot may not refund, even though payout-bot may.
    let r = server.propose_as(ACME_OTHER_KEY, &with(transfer(), json!({"purpose_code": "refund"}))).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(server.all_ids(ACME_OTHER_KEY).await.len(), 0);
}

#[tokio::test]
async fn every_denial_reason_is_listed() {
    let server = TestServer::start().await;
    let body = with(transfer(), json!({"purpose_code": "payroll", "source_account": GLOBEX_SOURCE}));
    assert_denied(&server, &body, &["source_account_not_allowed", "purpose_not_allowed"]).await;
}
