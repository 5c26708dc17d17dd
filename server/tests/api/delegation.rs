//! Delegation while away (docs/DELEGATION.md): an approver
//! lets another approve for them between two instants. The delegate's
//! approval says "for ana" (the approval, its audit entry, the page, the
//! token), passes every rule for both people (the lower limit, each one's
//! segregation of duties, each approves once), counts once for whom it is
//! given; a delegation that would let the delegate count for a group they
//! are not in waits for an admin other than the two; commit checks that the
//! delegation has not been ended since.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;

/// Dual approval from 1,000.00 USD, so two people approve a 2,000.00 USD payment.
const DUAL: &str = "[policy]\ndual_approval_at_minor = { USD = 100000 }\n";

const PATH: &str = "/api/v1/me/delegations";

/// RFC 3339 instants `from` and `to` hours from now.
fn span(from: i64, to: i64) -> (String, String) {
    let at = |h: i64| (chrono::Utc::now() + chrono::Duration::hours(h)).to_rfc3339();
    (at(from), at(to))
}

async fn delegate(console: &Console, to: &str, (starts_at, ends_at): (String, String)) -> Reply {
    let body = json!({"delegate": to, "starts_at": starts_at, "ends_at": ends_at});
    send(console.authed(Method::POST, PATH).json(&body)).await
}

async fn approve_for(console: &Console, id: &str, whom: &str) -> Reply {
    console.decide(id, &json!({"decision": "approve", "on_behalf_of": whom})).await
}

async fn user_id(server: &TestServer, username: &str) -> String {
    let sql = format!("SELECT id FROM users WHERE username = '{username}'");
    one::<String>(&sql).fetch_one(&server.db().await).await.expect("the user")
}

#[track_caller]
fn assert_field(r: &Reply, field: &str) {
    r.assert_error(422, "validation_failed");
    assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.text);
}

#[tokio::test]
async fn a_delegate_approves_for_someone_away_once_and_it_says_so_everywhere() {
    let server = TestServer::start_with(DUAL).await;
    add_acme_approver(&server, "carl", 10_000_000).await;
    let (ana, ben, carl, vic) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "carl").await,
        Console::sign_in(&server, "vic").await,
    );
    let (ana_id, ben_id) = (user_id(&server, "ana").await, user_id(&server, "ben").await);

    // Each way a delegation is refused.
    let body = json!({"delegate": "ben", "starts_at": span(0, 72).0, "ends_at": span(0, 72).1});
    let r = send(ana.with_origin(Method::POST, PATH).json(&body)).await;
    assert_eq!(r.status, 403, "no CSRF token: {}", r.text);
    delegate(&vic, "ben", span(0, 72)).await.assert_error(403, "forbidden");
    assert_field(&delegate(&ana, "vic", span(0, 72)).await, "delegate");
    assert_field(&delegate(&ana, "ana", span(0, 72)).await, "delegate");
    assert_field(&delegate(&ana, "nobody", span(0, 72)).await, "delegate");
    assert_field(&delegate(&ana, "gus", span(0, 72)).await, "delegate");
    assert_field(&delegate(&ana, "ben", span(48, 24)).await, "ends_at");
    assert_field(&delegate(&ana, "ben", span(0, 24 * 91)).await, "ends_at");
    assert_field(&delegate(&ana, "ben", ("next monday".into(), span(0, 1).1)).await, "starts_at");
    assert!(server.audit_actions_where("delegation.created").await.is_empty(), "nothing refused is stored");

    // ana is away for three days: ben approves for her. No group is
    // involved, so it is in force at once.
    let r = delegate(&ana, "ben", span(0, 72)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let made = &r.body["delegation"];
    assert_eq!((made["status"].as_str(), made["in_force"].as_bool()), (Some("active"), Some(true)), "{made}");
    assert_eq!((made["delegator"].as_str(), made["delegate"].as_str()), (Some("ana"), Some("ben")));
    let delegation = made["id"].as_str().unwrap().to_owned();
    assert_field(&delegate(&ana, "carl", span(24, 48)).await, "starts_at");
    let listed = send(ben.authed(Method::GET, PATH)).await;
    assert_eq!(listed.body["delegations"][0]["id"], delegation.as_str(), "{}", listed.text);
    let audited = server.audit_actions_where("delegation.created").await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(
        (audited[0]["actor"].as_str(), audited[0]["data"]["delegate"].as_str()),
        (Some(&*format!("user:{ana_id}")), Some("ben"))
    );

    let id = pending_for(&server, 200_000).await;
    // ben's page offers both: as himself, and for ana; and says who approves for whom.
    let page = send(ben.authed(Method::GET, &format!("/proposals/{id}"))).await.text;
    assert!(page.contains(r#"data-approve-for="ana""#) && page.contains("Approve for ana…"), "{page}");
    assert!(page.contains(r#"id="approve""#), "ben may still approve as himself");
    assert!(page.contains("ben approves for ana until"), "{page}");
    // The confirmation page says for whom, and carries it.
    let confirm = send(ben.authed(Method::GET, &format!("/proposals/{id}/approve?for=ana"))).await.text;
    assert!(
        confirm.contains("You are approving for ana") && confirm.contains(r#"name="on_behalf_of" value="ana""#),
        "{confirm}"
    );
    // carl holds no delegation from ana: his page offers nothing for her.
    let page = send(carl.authed(Method::GET, &format!("/proposals/{id}"))).await.text;
    assert!(!page.contains("data-approve-for"), "{page}");

    let r = approve_for(&ben, &id, "ana").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let given = &r.body["approvals"][0];
    assert_eq!(
        (given["approver_id"].as_str(), given["on_behalf_of"].as_str()),
        (Some(&*ben_id), Some(&*ana_id)),
        "{given}"
    );
    assert_eq!(r.body["status"], "pending_approval", "one approval of two");
    // The agent reads it too.
    let view = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    assert_eq!(view["approvals"][0]["on_behalf_of"], ana_id.as_str(), "{view}");

    // It counts once, for ana: neither ana nor ben may give another.
    let r = ana.approve(&id).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["distinct_approvers"], "{}", r.text);
    let r = ben.approve(&id).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["distinct_approvers"], "{}", r.text);
    let page = send(ana.authed(Method::GET, &format!("/proposals/{id}"))).await.text;
    assert!(page.contains("ben for ana"), "the approvals list says for whom: {page}");

    let r = carl.approve(&id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let entries = server.audit_actions_where("proposal.approval_given").await;
    let delegated: Vec<&Value> = entries.iter().filter(|e| e["data"]["on_behalf_of"].is_string()).collect();
    assert_eq!(delegated.len(), 1, "{entries:?}");
    assert_eq!(delegated[0]["actor"], format!("user:{ben_id}"));
    assert_eq!(delegated[0]["data"]["delegation_id"], delegation.as_str());
    assert!(delegated[0]["data"]["receipt"].is_string(), "the signed receipt carries it");

    // The token names the delegation; the agent commits with it.
    let token = server.get_proposal(ACME_BOT_KEY, &id).await.body["approval_token"].as_str().unwrap().to_owned();
    let claims = decode_jws(&token).claims;
    assert_eq!(
        claims["delegations"],
        json!([{"approver": ben_id, "for": ana_id, "delegation": delegation}]),
        "{claims}"
    );
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.wait_status(&id, "succeeded", 20).await;

    // The proof bundle's mandate restates them, and the bundle verifies
    // (`make test` gives it to the independent verifier too).
    let r = crate::evidence::evidence(&server, ACME_BOT_KEY, &id, "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mandate = decode_jws(r.body["mandate"].as_str().unwrap()).claims;
    assert_eq!(mandate["delegations"], claims["delegations"], "{mandate}");
    crate::evidence::write_fixture("bundle-delegated.json", &r.body);
    let dir = TestDir::new();
    let (code, out, err) = crate::evidence::verify(&server, &dir, &r.body, &[]).await;
    assert_eq!(code, 0, "the delegated approval's bundle verifies: {out}{err}");

    // Without delegations a token has no such claim.
    let plain = pending_for(&server, 200_000).await;
    assert!(carl.approve(&plain).await.status < 400);
    let r = ana.approve(&plain).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let token = server.get_proposal(ACME_BOT_KEY, &plain).await.body["approval_token"].as_str().unwrap().to_owned();
    assert!(decode_jws(&token).claims.get("delegations").is_none());
    assert!(server.commit(&plain, &token).await.status < 400);
    let r = crate::evidence::evidence(&server, ACME_BOT_KEY, &plain, "").await;
    let mandate = decode_jws(r.body["mandate"].as_str().unwrap()).claims;
    assert_eq!(mandate["delegations"], json!([]), "none given: an empty list: {mandate}");
}

#[tokio::test]
async fn only_a_delegation_in_force_under_every_rule_of_both_lets_a_delegate_approve() {
    let server = TestServer::start_with(DUAL).await;
    add_acme_approver(&server, "carl", 10_000_000).await;
    let (ana, ben, carl, maya, vic) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "carl").await,
        Console::sign_in(&server, "maya").await,
        Console::sign_in(&server, "vic").await,
    );
    let to_ben = delegate(&ana, "ben", span(0, 24)).await.body["delegation"]["id"].as_str().unwrap().to_owned();
    assert_eq!(delegate(&maya, "ben", span(0, 24)).await.status, 201);
    assert_eq!(delegate(&carl, "ben", span(24, 48)).await.body["delegation"]["in_force"], false);

    // The lower of the two limits: 6,000.00 USD is within ben's, above ana's 5,000.00.
    let big = pending_for(&server, 600_000).await;
    let r = approve_for(&ben, &big, "ana").await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["approver_limit"], "{}", r.text);
    assert!(r.text.contains("above ana's approval limit of 5,000.00 USD"), "{}", r.text);
    let page = send(ben.authed(Method::GET, &format!("/proposals/{big}"))).await.text;
    assert!(!page.contains(r#"data-approve-for="ana""#), "not offered above ana's limit");

    let id = pending_for(&server, 200_000).await;
    // maya is the person the agent acts for: nobody approves for her.
    let r = approve_for(&ben, &id, "maya").await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["segregation_of_duties"], "{}", r.text);
    // carl's delegation starts tomorrow; vic never delegated and is no approver.
    for whom in ["carl", "vic", "nobody"] {
        let r = approve_for(&ben, &id, whom).await;
        r.assert_error(403, "policy_denied");
        assert_eq!(r.detail_rules(), ["delegation"], "{whom}: {}", r.text);
    }
    // The delegation is the delegate's alone.
    let r = approve_for(&carl, &id, "ana").await;
    assert_eq!(r.detail_rules(), ["delegation"], "{}", r.text);

    // Ending it: not by someone it does not name; by ben; then it is over.
    let end = |who: Console, id: String| async move { send(who.authed(Method::DELETE, &format!("{PATH}/{id}"))).await };
    end(vic.clone(), to_ben.clone()).await.assert_error(403, "forbidden");
    let r = end(ben.clone(), to_ben.clone()).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("revoked")), "{}", r.text);
    end(ana.clone(), to_ben.clone()).await.assert_error(409, "invalid_state");
    let r = approve_for(&ben, &id, "ana").await;
    assert_eq!(r.detail_rules(), ["delegation"], "{}", r.text);
    assert_eq!(server.audit_actions_where("delegation.ended").await.len(), 1);
    assert_eq!(status_of(&server, &id).await, "pending_approval", "nothing was approved");
}

/// treasury: ana; controllers: ben. From 1,000.00 USD one of each.
const GROUPS: &str = "[tenants.acme.approval_groups]\ntreasury = [\"ana\"]\ncontrollers = [\"ben\"]\n\
    [[tenants.acme.group_approval]]\ncurrency = \"USD\"\nfrom_minor = 100000\n\
    require = [{ group = \"treasury\", count = 1 }, { group = \"controllers\", count = 1 }]\n";

#[tokio::test]
async fn a_delegation_that_counts_for_a_group_waits_for_a_second_admin_and_commit_checks_it_still_stands() {
    let server = TestServer::start_with(GROUPS).await;
    apply_user(&server, "acme", "dan", &["approver", "admin"], 10_000_000).await;
    let abe = add_admin(&server, "acme", "abe").await;
    let (ana, ben, dan) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "dan").await,
    );
    // dan is in no group: approving for ana he would count for treasury.
    let r = delegate(&ana, "dan", span(0, 48)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["delegation"]["status"], "pending", "{}", r.text);
    assert_eq!(r.body["delegation"]["extra_groups"], json!(["treasury"]));
    assert!(r.text.contains("dan's approvals for ana count for treasury"), "{}", r.text);
    let change = r.body["delegation"]["change_id"].as_str().unwrap().to_owned();
    assert_eq!(pending_change_ids(&server).await, std::slice::from_ref(&change));

    let id = pending_for(&server, 200_000).await;
    let r = approve_for(&dan, &id, "ana").await;
    assert_eq!(r.detail_rules(), ["delegation"], "not in force while pending: {}", r.text);
    // The delegate may not confirm it (nor could ana, who proposed it).
    dan.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(dan.admin_flash().await.contains("your own account"), "{}", dan.admin_flash().await);
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(abe.admin_flash().await.contains("confirmed"), "{}", abe.admin_flash().await);
    assert_eq!(server.audit_actions_where("delegation.confirmed").await.len(), 1);

    // Now dan's approval for ana fills treasury, ben's controllers.
    assert_eq!(approve_for(&dan, &id, "ana").await.status, 200);
    let r = ben.approve(&id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let token = server.get_proposal(ACME_BOT_KEY, &id).await.body["approval_token"].as_str().unwrap().to_owned();

    // ana is back early and ends it: the token not yet redeemed is refused.
    let delegation = decode_jws(&token).claims["delegations"][0]["delegation"].as_str().unwrap().to_owned();
    assert_eq!(send(ana.authed(Method::DELETE, &format!("{PATH}/{delegation}"))).await.status, 200);
    let r = server.commit(&id, &token).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["delegation"], "{}", r.text);

    // A pending delegation whose change is rejected never comes into force.
    let r = delegate(&ana, "dan", span(72, 96)).await;
    let (pending, change) = (
        r.body["delegation"]["id"].as_str().unwrap().to_owned(),
        r.body["delegation"]["change_id"].as_str().unwrap().to_owned(),
    );
    abe.form(&format!("/admin/changes/{change}/reject"), &[]).await;
    let refused = format!("SELECT COUNT(*) FROM delegations WHERE id = '{pending}' AND status = 'refused'");
    assert_eq!(server.scalar(&refused).await, 1);
}
