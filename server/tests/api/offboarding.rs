//! Offboarding (docs/PEOPLE.md): deactivating someone in the middle of a
//! pending approval ends, in one transaction, everything they could still
//! do — each effect asserted here — and reactivating them brings none of it
//! back. Also: signing out everywhere, and a script's bare sign-out.

use reqwest::Method;
use serde_json::json;

use crate::console_client::*;
use crate::helpers::*;
use crate::slack_harness::*;

/// Dual approval from 1,000.00 USD; Slack; push services on loopback.
fn config(slack: &FakeSlack) -> String {
    format!(
        "[policy]\ndual_approval_at_minor = {{ USD = 100000 }}\n{}\n[notifications.push]\nallowed_hosts = [\"127.0.0.1\"]\n",
        slack_config(slack)
    )
}

/// An agent acting for ana (the fixture's act for maya).
const ANA_BOT_KEY: &str = "cs_test_ana0bot0key000000000000000000000";

async fn add_ana_bot(server: &TestServer) {
    let toml = format!(
        "[[agent]]\ntenant = \"acme\"\nid = \"ana-bot\"\nkey = \"{ANA_BOT_KEY}\"\nacts_for = \"ana\"\n\
         source_accounts = [\"{ACME_SOURCE}\"]\npurposes = [\"vendor\"]\n"
    );
    let file = server.data_dir().join("ana-bot.toml");
    std::fs::write(&file, toml).unwrap();
    let (code, out, err) = server.cli(&["apply", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}{err}");
}

async fn id_of(server: &TestServer, username: &str) -> String {
    one(&format!("SELECT id FROM users WHERE username = '{username}'"))
        .fetch_one(&server.db().await)
        .await
        .expect("the user")
}

async fn count(server: &TestServer, sql: &str) -> i64 {
    server.scalar(sql).await
}

fn span(hours: i64) -> (String, String) {
    let at = |h: i64| (chrono::Utc::now() + chrono::Duration::hours(h)).to_rfc3339();
    (at(0), at(hours))
}

#[tokio::test]
async fn deactivating_an_approver_mid_approval_ends_everything_they_could_do_at_once() {
    let slack = FakeSlack::start().await;
    let server = TestServer::start_with(&config(&slack)).await;
    add_ana_bot(&server).await;
    link_slack(&server, "acme", "ana", "U0ANA").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let abe = add_admin(&server, "acme", "abe").await;
    let ana_id = id_of(&server, "ana").await;

    // ana is signed in on two devices, has a phone subscribed to Web Push,
    // and approves for ben while he is away.
    let ana = Console::sign_in(&server, "ana").await;
    let ana_phone = Console::sign_in(&server, "ana").await;
    let ben = Console::sign_in(&server, "ben").await;
    let (from, to) = span(72);
    let r = send(
        ben.authed(Method::POST, "/api/v1/me/delegations")
            .json(&json!({"delegate": "ana", "starts_at": from, "ends_at": to})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let delegation = r.body["delegation"]["id"].as_str().unwrap().to_owned();
    query(
        "INSERT INTO push_subscriptions (id, tenant_id, user_id, endpoint, p256dh, auth, label, created_at)
         VALUES ('sub_ana', 'acme', ?, 'http://127.0.0.1:9/push/ana', 'k', 'a', 'phone', '2026-01-01T00:00:00.000Z')",
    )
    .bind(&ana_id)
    .execute(&server.db().await)
    .await
    .expect("a device of ana's");

    // A dual-approval payment waits with ana's approval; another is approved
    // by ana and ben, its token not redeemed yet; her agent has a payment
    // approved by policy (small, trusted payee).
    let waiting = pending_for(&server, 200_000).await;
    assert_eq!(ana.approve(&waiting).await.status, 200);
    let approved = pending_for(&server, 300_000).await;
    assert_eq!(ana.approve(&approved).await.status, 200);
    assert_eq!(ben.approve(&approved).await.status, 200);
    let (old_token, _) = token_of(&server, &approved).await;
    let by_policy = server
        .propose_as(
            ANA_BOT_KEY,
            &with(transfer(), json!({"run_id": "ana-bot-1", "destination": ACME_TRUSTED_PAYEE, "amount_minor": 500})),
        )
        .await;
    assert_eq!(by_policy.body["status"], "approved", "{}", by_policy.text);
    let policy_token = by_policy.body["approval_token"].as_str().unwrap().to_owned();
    let by_policy_id = by_policy.body["id"].as_str().unwrap().to_owned();
    let next = pending_for(&server, 25_000).await;
    let next_view = server.get_proposal(ACME_BOT_KEY, &next).await.body;

    // ada deactivates ana from her page.
    let r = ada.form("/admin/users/ana/deactivate", &[]).await;
    assert_eq!((r.status, r.header("location")), (303, Some("/admin/users/ana")), "{}", r.text);

    // 1. Every session ended: the next request of each is signed out.
    assert_eq!(ana.queue("").await.status, 401);
    let page = send(ana_phone.bare(Method::GET, &format!("/proposals/{next}"))).await;
    assert!(page.status == 303 && page.header("location").is_some_and(|l| l.starts_with("/login")), "{}", page.status);
    assert_eq!(count(&server, &format!("SELECT COUNT(*) FROM console_sessions WHERE user_id = '{ana_id}'")).await, 0);
    // ... and she cannot sign in again.
    assert_eq!(sign_in_as(&server, "ana", PASSWORD).await.status, 401);

    // 2. Slack presses as ana change nothing.
    let r = press_signed(
        &server,
        NEW_SECRET,
        &press_body("U0ANA", "approve", &button_value(&next_view), &slack.url("/r/1")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_still_pending(&server, &next).await;

    // 3. Her push device is gone; nothing is queued for her.
    assert_eq!(count(&server, &format!("SELECT COUNT(*) FROM push_subscriptions WHERE user_id = '{ana_id}'")).await, 0);
    assert_eq!(
        count(
            &server,
            &format!("SELECT COUNT(*) FROM notifications WHERE user_id = '{ana_id}' AND status = 'pending'")
        )
        .await,
        0
    );

    // 4. The delegation to her ended.
    let status: String = one(&format!("SELECT status FROM delegations WHERE id = '{delegation}'"))
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert_eq!(status, "revoked");

    // 5. Her approval of the waiting payment no longer counts: kept, marked,
    // audited; the payment needs two approvals from others.
    let w = server.get_proposal(ACME_BOT_KEY, &waiting).await;
    assert_eq!(
        (w.body["status"].as_str(), w.body["approvals"].clone()),
        (Some("pending_approval"), json!([])),
        "{}",
        w.text
    );
    assert_eq!(
        count(
            &server,
            &format!("SELECT COUNT(*) FROM approvals WHERE proposal_id = '{waiting}' AND withdrawn_at IS NOT NULL")
        )
        .await,
        1
    );
    assert!(server.audit_actions(&waiting).await.contains(&"approval.withdrawn".to_owned()));
    assert_eq!(ben.approve(&waiting).await.body["status"], "pending_approval", "one approval counts now");

    // 6. The approved payment is sent back for approval: its token commits nothing.
    assert_eq!(status_of(&server, &approved).await, "approval_expired");
    let commit = send(server.post_json(
        &format!("/api/v1/proposals/{approved}/commit"),
        ACME_BOT_KEY,
        &json!({"approval_token": old_token}),
    ))
    .await;
    assert_eq!((commit.status, commit.body["error"]["code"].as_str()), (409, Some("invalid_state")), "{}", commit.text);

    // 7. Her agent is frozen: it proposes and commits nothing, with a typed refusal.
    let r = server.propose_as(ANA_BOT_KEY, &with(transfer(), json!({"run_id": "ana-bot-2"}))).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["acts_for_deactivated"], "{}", r.text);
    let r = send(server.post_json(
        &format!("/api/v1/proposals/{by_policy_id}/commit"),
        ANA_BOT_KEY,
        &json!({"approval_token": policy_token}),
    ))
    .await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["kill_switch"], "{}", r.text);
    assert!(r.text.contains("ana, whom this agent acts for, was deactivated"), "{}", r.text);

    // All of it is one audit entry, and her page says it.
    let entries = server.audit_actions_where("user.deactivated").await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let data = &entries[0]["data"];
    assert_eq!(entries[0]["actor"], format!("user:{}", ada.user_id()));
    assert_eq!((data["sessions_ended"].as_i64(), data["push_devices_removed"].as_i64()), (Some(2), Some(1)), "{data}");
    assert_eq!(data["approvals_withdrawn"], json!([waiting]));
    assert_eq!(data["approvals_lapsed"], json!([approved]));
    assert_eq!(data["agents_frozen"], json!(["ana-bot"]));
    assert_eq!(data["delegations_ended"], json!([delegation]));
    assert_eq!(data["had"]["roles"], json!(["approver"]));
    let page = send(ada.bare(Method::GET, "/admin/users/ana")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("Deactivated at") && page.text.contains("user.deactivated"), "{}", page.text);
    assert!(page.text.contains("id=\"no-sessions\""), "{}", page.text);

    // An admin reassigns the agent (four-eyes): it may propose again.
    let r = ada.form("/admin/agent-reassignments", &[("agent", "ana-bot"), ("acts_for", "ben")]).await;
    assert_eq!(r.status, 303);
    let change = pending_change_ids(&server).await.pop().expect("the reassignment waits");
    let r = abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let r = server.propose_as(ANA_BOT_KEY, &with(transfer(), json!({"run_id": "ana-bot-3"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(server.audit_actions_where("kill_switch.lifted").await.iter().any(|e| e["data"]["agent_id"] == "ana-bot"));

    // Reactivation brings nothing back: no session, no role, no limit.
    let r = ada.form("/admin/users/ana/reactivate", &[]).await;
    assert_eq!(r.status, 303);
    assert_eq!(ana.queue("").await.status, 401, "the old session stays ended");
    let back = sign_in_as(&server, "ana", PASSWORD).await;
    assert_eq!(back.status, 200, "{}", back.text);
    assert_eq!(back.body["user"]["roles"], json!([]), "{}", back.text);
    assert_eq!(usd_limit(&server, "ana").await, None);
    assert_eq!(server.audit_actions_where("user.reactivated").await.len(), 1);
}

#[tokio::test]
async fn only_an_admin_of_the_tenant_deactivates_and_nobody_deactivates_themselves() {
    let server = TestServer::start().await;
    let ada = add_admin(&server, "acme", "ada").await;
    let ben = Console::sign_in(&server, "ben").await;
    let gus = Console::sign_in(&server, "gus").await;
    // Not an admin.
    let r = ben.form("/admin/users/ana/deactivate", &[]).await;
    assert_eq!(r.status, 403, "{}", r.text);
    // Another tenant's admin: "no such user", nothing done.
    let r = gus.form("/admin/users/ana/deactivate", &[]).await;
    assert_eq!(r.status, 303);
    // No CSRF token.
    let r = send(ada.with_origin(Method::POST, "/admin/users/ana/deactivate").form(&[("x", "y")])).await;
    assert_eq!(r.status, 403, "{}", r.text);
    // Herself.
    let r = ada.form("/admin/users/ada/deactivate", &[]).await;
    assert_eq!(r.status, 303);
    assert_eq!(count(&server, "SELECT COUNT(*) FROM users WHERE active = 0").await, 0, "nobody was deactivated");
    assert!(server.audit_actions_where("user.deactivated").await.is_empty());
    // Another tenant's admin cannot see her page.
    assert_eq!(send(gus.bare(Method::GET, "/admin/users/ana")).await.status, 404);

    // The CLI (the operator's) deactivates; twice is refused.
    let (code, out, err) = server.cli(&["user", "deactivate", "--tenant", "acme", "--username", "ana"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("user ana deactivated"), "{out}");
    let (code, _, err) = server.cli(&["user", "deactivate", "--tenant", "acme", "--username", "ana"]).await;
    assert_eq!(code, 2, "{err}");
    let entries = server.audit_actions_where("user.deactivated").await;
    assert_eq!(
        (entries.len(), entries[0]["actor"].as_str(), entries[0]["data"]["via"].as_str()),
        (1, Some("cli"), Some("cli"))
    );
}

#[tokio::test]
async fn sign_out_everywhere_and_a_scripts_bare_sign_out() {
    let server = TestServer::start().await;
    let (one_tab, other) = (Console::sign_in(&server, "ana").await, Console::sign_in(&server, "ana").await);
    // Her own page lists both sessions.
    let page = send(one_tab.bare(Method::GET, "/account/sessions")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(page.text.matches("data-session=").count(), 2, "{}", page.text);
    assert!(page.text.contains("(this one)"));
    let r = one_tab.form("/account/sessions/end", &[]).await;
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    assert_eq!(other.queue("").await.status, 401, "signed out everywhere");
    assert_eq!(one_tab.queue("").await.status, 401);
    // The other tab's next page is the sign-in page, not the welcome for
    // those who never signed in; a browser that never did sees the welcome.
    let next = send(other.bare(Method::GET, "/")).await;
    assert_eq!((next.status, next.header("location")), (303, Some("/login")), "{}", next.text);
    let next = send(other.bare(Method::GET, "/?status=rejected")).await;
    assert_eq!(next.header("location"), Some("/login?next=/%3Fstatus%3Drejected"), "{}", next.text);
    let welcome = send(http_client().get(server.url("/"))).await;
    assert_eq!(welcome.status, 200, "{}", welcome.text);
    assert!(welcome.text.contains("id=\"home-sign-in\""), "{}", welcome.text);
    assert_eq!(server.audit_actions_where("session.ended_everywhere").await.len(), 1);

    // A script signs in with JSON and out with a bare DELETE (no content
    // type, no Origin): its session and CSRF token are what it holds.
    let script = Console::sign_in(&server, "ben").await;
    let bare = |csrf: Option<&str>| {
        let mut rb = script.bare(Method::DELETE, "/api/v1/session");
        if let Some(t) = csrf {
            rb = rb.header("x-csrf-token", t);
        }
        send(rb)
    };
    assert_eq!(bare(None).await.status, 403, "still needs its CSRF token");
    assert_eq!(bare(Some("wrong")).await.status, 403);
    let foreign = send(
        script
            .bare(Method::DELETE, "/api/v1/session")
            .header("origin", "http://evil.example")
            .header("x-csrf-token", &script.csrf),
    )
    .await;
    assert_eq!(foreign.status, 403, "a foreign Origin is still refused");
    let r = bare(Some(&script.csrf)).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(script.queue("").await.status, 401);
}
