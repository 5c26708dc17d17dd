//! The kill switch (docs/SECURITY.md "Kill switch"): an
//! admin freezes an agent or the tenant in one form post, the operator
//! every commit; a frozen commit is refused with `policy_denied` (rule
//! `kill_switch`) before any rail call, whichever instance serves it, and
//! the token stays unused; lifting a freeze needs a second admin.

use serde_json::json;

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

/// Commits `id` with `token`: the reply.
async fn refused_commit(server: &TestServer, id: &str, token: &str) -> Reply {
    let r = server.commit(id, token).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["kill_switch"], "{}", r.text);
    r
}

#[tokio::test]
async fn a_frozen_agent_commits_nothing_until_a_second_admin_lifts_the_freeze() {
    let (server, rail) = with_rail("").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let abe = add_admin(&server, "acme", "abe").await;
    let (id, token) = auto_approved(&server, 5_000).await;

    // One form post freezes payout-bot, at once, audited.
    let r = ada.form("/admin/freezes", &[("agent", "payout-bot"), ("reason", "runaway loop in run 42")]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert!(ada.admin_flash().await.starts_with("Frozen: agent payout-bot's commits."));
    let r = refused_commit(&server, &id, &token).await;
    assert!(r.text.contains("runaway loop in run 42") && r.text.contains("Nothing was sent to the rail"), "{}", r.text);
    assert!(rail.transfers().await.is_empty(), "the rail was never called");
    assert_eq!(status_of(&server, &id).await, "approved", "still approved, the token unused");
    let frozen = server.audit_actions_where("kill_switch.frozen").await;
    assert_eq!(frozen.len(), 1);
    assert_eq!(frozen[0]["actor"], format!("user:{}", ada.user_id()));
    assert_eq!(frozen[0]["data"]["reason"], "runaway loop in run 42");

    // Another agent of the tenant is not frozen.
    let other =
        with(transfer(), json!({"run_id": "other-run", "amount_minor": 5_000, "destination": ACME_TRUSTED_PAYEE}));
    let r = server.propose_as(ACME_OTHER_KEY, &other).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let (other_id, other_token) =
        (r.body["id"].as_str().unwrap().to_owned(), r.body["approval_token"].as_str().unwrap().to_owned());
    let r = send(server.post_json(
        &format!("/api/v1/proposals/{other_id}/commit"),
        ACME_OTHER_KEY,
        &json!({"approval_token": other_token}),
    ))
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Lifting waits for a second admin; the proposer cannot confirm it.
    let r = ada.form("/admin/freezes/lift", &[("agent", "payout-bot")]).await;
    assert_eq!(r.status, 303);
    assert!(ada.admin_flash().await.contains("Another admin must confirm lifting the freeze"), "four-eyes");
    refused_commit(&server, &id, &token).await;
    let change = pending_change_ids(&server).await.pop().expect("a pending lift");
    ada.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(ada.admin_flash().await.contains("you proposed this change"), "the proposer cannot confirm");
    refused_commit(&server, &id, &token).await;
    let r = abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(r.status, 303);
    assert!(abe.admin_flash().await.starts_with("Change confirmed"));
    let lifted = server.audit_actions_where("kill_switch.lifted").await;
    assert_eq!(lifted[0]["data"]["confirmed_by"], abe.user_id());
    assert_eq!(lifted[0]["data"]["frozen_reason"], "runaway loop in run 42");

    // The same token now commits.
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(rail.transfers().await.len(), 2);
}

#[tokio::test]
async fn a_tenant_freeze_holds_only_that_tenant_and_an_approver_cannot_freeze() {
    let (server, _rail) = with_rail("").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let ana = Console::sign_in(&server, "ana").await;
    let r = ana.form("/admin/freezes", &[("agent", ""), ("reason", "not mine to pull")]).await;
    assert_ne!(r.status, 303, "an approver is not an admin: {}", r.text);
    let r = ada.form("/admin/freezes", &[("agent", ""), ("reason", "")]).await;
    assert_eq!(r.status, 303);
    assert!(ada.admin_flash().await.contains("reason"), "a freeze says why");
    let r = ada.form("/admin/freezes", &[("agent", "no-such-bot"), ("reason", "x")]).await;
    assert_eq!(r.status, 303);
    assert!(ada.admin_flash().await.contains("there is no agent no-such-bot here"));

    ada.form("/admin/freezes", &[("agent", ""), ("reason", "quarter-end audit")]).await;
    assert!(ada.admin_flash().await.starts_with("Frozen: every commit of tenant acme."));
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = refused_commit(&server, &id, &token).await;
    assert!(r.text.contains("every commit of tenant acme"), "{}", r.text);
    // globex commits.
    let r = server.propose_as(GLOBEX_BOT_KEY, &with(globex_transfer(), json!({"amount_minor": 100}))).await;
    assert!(r.status == 201, "{}", r.text);
    // The admin page shows it, with a Lift form.
    let page = send(ada.bare(reqwest::Method::GET, "/admin")).await.text;
    assert!(page.contains("Frozen: every commit of tenant acme") && page.contains("quarter-end audit"), "{page}");
    assert!(page.contains("/admin/freezes/lift"));
}

#[tokio::test]
async fn the_operator_freezes_every_commit_from_the_command_line_and_the_running_server_obeys_at_once() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let (code, out, err) = server.cli(&["freeze", "--all", "--reason", "incident 7: rail credentials leaked"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("frozen: every commit"), "{out}");
    // Another process wrote it; this server refuses the very next commit.
    let r = refused_commit(&server, &id, &token).await;
    assert!(r.text.contains("incident 7"), "{}", r.text);
    assert!(rail.transfers().await.is_empty());
    // An admin sees it but cannot lift the operator's freeze from the page.
    let ada = add_admin(&server, "acme", "ada").await;
    let page = send(ada.bare(reqwest::Method::GET, "/admin")).await.text;
    assert!(page.contains("Frozen: every commit") && !page.contains("/admin/freezes/lift"), "{page}");

    let (code, out, err) = server.cli(&["unfreeze", "--all"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("lifted: every commit"), "{out}");
    let (code, out, _) = server.cli(&["unfreeze", "--all"]).await;
    assert_eq!((code, out.contains("was not frozen")), (0, true), "{out}");
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(server.audit_actions_where("kill_switch.frozen").await[0]["actor"], "cli");
    let (code, _, err) = server.cli(&["freeze", "--reason", "no scope"]).await;
    assert_ne!(code, 0, "a scope is required: {err}");
}
