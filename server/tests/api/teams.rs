//! Microsoft Teams approvals through a Bot Framework bot, against a local
//! Bot Framework (`teams_harness.rs`: OpenID metadata, JWKS, the bot's own
//! token, the Bot Connector): the Adaptive Card posted for a waiting
//! payment, approve and reject through its `Action.Execute` buttons (the
//! same `decide`, `amr: teams`), the card replaced for everyone, every way
//! a token can be forged or misdirected, replays, and the rules Slack's
//! buttons follow (a linked user, step-up and the direct-approval cap
//! through the console, the card's amount and hash still the payment's).

use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::teams_harness::*;

async fn start(bf: &FakeBotFramework) -> TestServer {
    TestServer::start_with(&bf.config()).await
}

/// A pending acme proposal for `amount_minor` USD, and the data of its
/// posted card's Reject button (Approve's is the same, when it is a button).
async fn pending_with_card(server: &TestServer, bf: &FakeBotFramework, amount_minor: u64) -> (String, Value) {
    let id = pending_for(server, amount_minor).await;
    let posted = bf.wait_for("POST", &id).await;
    assert_eq!(
        posted.path,
        format!("/v3/conversations/{}/activities", CONVERSATION.replace(':', "%3A").replace('@', "%40"))
    );
    let reject = execute_action(&posted.body, "reject").expect("a Reject button");
    (id, reject["data"].clone())
}

async fn status(server: &TestServer, id: &str) -> Value {
    server.get_proposal(ACME_BOT_KEY, id).await.body
}

async fn press(server: &TestServer, bf: &FakeBotFramework, id: &str, aad: &str, verb: &str, data: &Value) -> Reply {
    let token = bf.token(&bf.claims());
    deliver(server, Some(&format!("Bearer {token}")), &bf.press(id, aad, verb, data)).await
}

#[tokio::test]
async fn a_waiting_payment_is_posted_as_an_adaptive_card_with_execute_buttons() {
    let bf = FakeBotFramework::start().await;
    let server = start(&bf).await;
    let id = pending_for(&server, 25_000).await;
    let p = status(&server, &id).await;
    let posted = bf.wait_for("POST", &id).await;
    let attachment = &posted.body["attachments"][0];
    assert_eq!(attachment["contentType"], "application/vnd.microsoft.card.adaptive");
    let card = &attachment["content"];
    assert_eq!((card["type"].as_str(), card["version"].as_str()), (Some("AdaptiveCard"), Some("1.4")));
    let printed = card.to_string();
    for expected in ["250.00 USD", "Northwind Traders GmbH", "untrusted", "Invoice 1842"] {
        assert!(printed.contains(expected), "{expected:?} in {printed}");
    }
    // Masked accounts only.
    assert!(!printed.contains(ACME_PAYEE) && !printed.contains(ACME_SOURCE), "{printed}");
    let hash = p["request_hash"].as_str().unwrap();
    for verb in ["approve", "reject"] {
        let button = execute_action(&posted.body, verb).unwrap_or_else(|| panic!("{verb}: {card}"));
        assert_eq!(
            button["data"],
            json!({"proposal_id": id, "request_hash": hash, "amount_minor": 25_000, "currency": "USD"})
        );
    }
    let open = card["actions"].as_array().unwrap().iter().find(|a| a["type"] == "Action.OpenUrl").expect("a link");
    assert_eq!(open["url"], p["approval_url"]);

    // Above teams.max_direct_approve_minor, Approve is a link to the console.
    let big = pending_for(&server, 2_000_000).await;
    let posted = bf.wait_for("POST", &big).await;
    assert!(execute_action(&posted.body, "approve").is_none(), "{}", posted.body);
    let first = &posted.body["attachments"][0]["content"]["actions"][0];
    assert_eq!((first["type"].as_str(), first["title"].as_str()), (Some("Action.OpenUrl"), Some("Approve in console")));
    // Another tenant has no conversation: nothing is posted for it.
    let theirs = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    let theirs_id = theirs.body["id"].as_str().unwrap_or_default().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!bf.sent().await.iter().any(|s| s.body.to_string().contains(&theirs_id)));
}

#[tokio::test]
async fn approve_and_reject_from_teams_go_through_decide_and_the_card_is_replaced_for_everyone() {
    let bf = FakeBotFramework::start().await;
    let server = start(&bf).await;
    link_teams(&server, "ana", ANA_AAD).await;
    link_teams(&server, "ben", BEN_AAD).await;

    let (id, data) = pending_with_card(&server, &bf, 25_000).await;
    let r = press(&server, &bf, "f:approve-1", ANA_AAD, "approve", &data).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The presser's card is replaced in place by the answer.
    assert_eq!(r.body["statusCode"], 200);
    assert_eq!(r.body["type"], "application/vnd.microsoft.card.adaptive");
    assert!(r.body["value"].to_string().contains("Approved by ana"), "{}", r.body);
    assert!(r.body["value"]["actions"].as_array().unwrap().iter().all(|a| a["type"] != "Action.Execute"));
    let now = status(&server, &id).await;
    assert_eq!(now["status"], "approved", "{now}");
    assert_eq!(now["approvals"][0]["via"], "teams");
    let claims = decode_jws(now["approval_token"].as_str().unwrap()).claims;
    assert_eq!(claims["amr"], json!(["teams"]));
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(claims["sub"], ana.user_id());
    // Everyone in the conversation sees the decided card: the pressed
    // activity is replaced through the Bot Connector.
    let replaced = bf.wait_for("PUT", "Approved by ana").await;
    assert!(
        replaced.path.ends_with(&format!("/activities/{}", CARD_ACTIVITY.replace(':', "%3A"))),
        "{}",
        replaced.path
    );

    // Reject, with the card's reason field.
    let (id, mut data) = pending_with_card(&server, &bf, 30_000).await;
    data["reason"] = json!("Invoice already paid by wire");
    let r = press(&server, &bf, "f:reject-1", BEN_AAD, "reject", &data).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["value"].to_string().contains("Rejected by ben"), "{}", r.body);
    let now = status(&server, &id).await;
    assert_eq!(now["status"], "rejected", "{now}");
    assert_eq!(now["approvals"][0]["via"], "teams");
    let reasons: Vec<String> =
        server.audit_actions_where("proposal.rejected").await.iter().map(|e| e.to_string()).collect();
    assert!(reasons.iter().any(|r| r.contains("Invoice already paid by wire")), "{reasons:?}");

    // Refresh shows the card as it stands, to a linked user.
    let r = press(&server, &bf, "f:refresh-1", ANA_AAD, "refresh", &data).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["value"].to_string().contains("This payment is now rejected"), "{}", r.body);
}

#[tokio::test]
async fn every_forged_or_misdirected_request_is_refused_and_changes_nothing() {
    let bf = FakeBotFramework::start().await;
    let server = start(&bf).await;
    link_teams(&server, "ana", ANA_AAD).await;
    let (id, data) = pending_with_card(&server, &bf, 25_000).await;
    let activity = bf.press("f:forged", ANA_AAD, "approve", &data);

    let r = deliver(&server, None, &activity).await;
    r.assert_error(401, "unauthenticated");
    assert_eq!(r.body["error"]["details"][0]["reason"], "missing_token", "{}", r.text);
    let r = deliver(&server, Some(&format!("Basic {}", bf.token(&bf.claims()))), &activity).await;
    assert_eq!(r.body["error"]["details"][0]["reason"], "missing_token", "{}", r.text);
    for (reason, token) in forged_tokens(&bf) {
        let r = deliver(&server, Some(&format!("Bearer {token}")), &activity).await;
        r.assert_error(401, "unauthenticated");
        assert_eq!(r.body["error"]["details"][0]["reason"], reason, "{}", r.text);
    }
    // A genuine token on an activity from another channel, or whose
    // serviceUrl is not the token's.
    let genuine = format!("Bearer {}", bf.token(&bf.claims()));
    let mut webchat = activity.clone();
    webchat["channelId"] = json!("webchat");
    let r = deliver(&server, Some(&genuine), &webchat).await;
    assert_eq!(r.body["error"]["details"][0]["reason"], "bad_channel", "{}", r.text);
    let mut elsewhere = activity.clone();
    elsewhere["serviceUrl"] = json!("https://evil.example/");
    let r = deliver(&server, Some(&genuine), &elsewhere).await;
    assert_eq!(r.body["error"]["details"][0]["reason"], "service_url_mismatch", "{}", r.text);
    let now = status(&server, &id).await;
    assert_eq!(
        (now["status"].as_str(), now["approvals"].as_array().map(Vec::len)),
        (Some("pending_approval"), Some(0))
    );

    // The genuine press is taken once; the same activity again is a replay,
    // even with a fresh token.
    let r = deliver(&server, Some(&genuine), &activity).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(status(&server, &id).await["status"], "approved");
    let again = format!("Bearer {}", bf.token(&bf.claims()));
    let r = deliver(&server, Some(&again), &activity).await;
    r.assert_error(401, "unauthenticated");
    assert_eq!(r.body["error"]["details"][0]["reason"], "replayed", "{}", r.text);
    assert_eq!(status(&server, &id).await["approvals"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn the_rules_of_the_console_hold_for_teams_presses() {
    let bf = FakeBotFramework::start().await;
    let server = start(&bf).await;
    link_teams(&server, "ana", ANA_AAD).await;
    link_teams(&server, "maya", "6f1c2d3e-4a5b-4c6d-8e7f-000000000a7a").await;
    let (id, data) = pending_with_card(&server, &bf, 25_000).await;
    let refused = |r: &Reply| {
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["type"], "application/vnd.microsoft.activity.message", "{}", r.body);
        r.body["value"].as_str().unwrap_or_default().to_owned()
    };
    // Someone not linked to any user.
    let text = refused(&press(&server, &bf, "f:1", STRANGER_AAD, "approve", &data).await);
    assert!(text.contains("not linked"), "{text}");
    // A card whose amount or hash is not the payment's.
    for (field, value) in [
        ("amount_minor", json!(24_999)),
        ("request_hash", json!(format!("sha256:{}", "0".repeat(64)))),
        ("currency", json!("EUR")),
    ] {
        let mut stale = data.clone();
        stale[field] = value;
        let text = refused(&press(&server, &bf, &format!("f:stale-{field}"), ANA_AAD, "approve", &stale).await);
        assert!(text.contains("no longer matches"), "{field}: {text}");
    }
    // The person the agent acts for may not approve its payments.
    let text = refused(&press(&server, &bf, "f:maya", "6f1c2d3e-4a5b-4c6d-8e7f-000000000a7a", "approve", &data).await);
    assert!(text.starts_with("Nothing was done"), "{text}");
    let now = status(&server, &id).await;
    assert_eq!(
        (now["status"].as_str(), now["approvals"].as_array().map(Vec::len)),
        (Some("pending_approval"), Some(0))
    );

    // Above the direct-approval cap, an approve press is refused with the
    // console's link (the card only offers the link anyway).
    let big = pending_for(&server, 2_000_000).await;
    let posted = bf.wait_for("POST", &big).await;
    let big_data = execute_action(&posted.body, "reject").unwrap()["data"].clone();
    let text = refused(&press(&server, &bf, "f:big", ANA_AAD, "approve", &big_data).await);
    assert!(text.contains("approved in the console") && text.contains(&format!("/proposals/{big}")), "{text}");
    assert_eq!(status(&server, &big).await["status"], "pending_approval");
}

#[tokio::test]
async fn at_the_step_up_threshold_the_card_links_to_the_console() {
    let bf = FakeBotFramework::start().await;
    let config = format!("{}\n[policy]\nstep_up_at_minor = {{ USD = 20_000 }}\n", bf.config());
    let server = TestServer::start_with(&config).await;
    link_teams(&server, "ana", ANA_AAD).await;
    let (id, data) = pending_with_card(&server, &bf, 25_000).await;
    let posted = bf.wait_for("POST", &id).await;
    assert!(execute_action(&posted.body, "approve").is_none(), "a passkey is needed: {}", posted.body);
    let r = press(&server, &bf, "f:step-up", ANA_AAD, "approve", &data).await;
    assert!(r.body["value"].as_str().unwrap_or_default().contains("approved in the console"), "{}", r.body);
    assert_eq!(status(&server, &id).await["status"], "pending_approval");
}
