//! A tenant's policy in Cedar (docs/POLICY.md, "Cedar"): every decision
//! path on a Cedar policy through the API, its reasons from `@id` and
//! `@reason`; a policy that does not validate stops the start with its
//! place named; observe mode; the backtest (API and CLI); policy tests
//! (`countersign policy test`, over the shipped examples); and the
//! four-eyes policy change whose confirmation answers with the backtest.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;

/// Auto-approval below 50.00 USD to a trusted payee (the TOML default is
/// 100.00), two people from 5,000.00 USD, refunds refused to agents.
const ACME_CEDAR: &str = r#"
@id("scope")
permit (principal, action == Countersign::Action::"propose", resource);

@id("no_agent_refunds")
@reason("Refunds of {amount} are made by people, not agents.")
forbid (principal, action == Countersign::Action::"propose", resource)
when { resource.purpose == "refund" };

@id("source_account_not_allowed")
@reason("Source account {source_account} is not configured for agent {agent}.")
forbid (principal, action == Countersign::Action::"propose", resource)
unless { principal.source_accounts.contains(resource.source_account) };

@id("dual_approval")
@reason("{amount} is at or above 5,000.00 USD: two distinct approvers required.")
permit (principal, action == Countersign::Action::"dual_approval", resource)
when { resource.currency == "USD" && resource.amount_minor >= 500000 };

@id("small_trusted")
@reason("{amount} to a trusted payee is below 50.00 USD: approved by policy.")
permit (principal, action == Countersign::Action::"auto_approve", resource)
when { resource.payee.trusted && resource.currency == "USD" && resource.amount_minor < 5000 };
"#;

/// The same as the TOML rules but never approved by policy alone.
const NO_AUTO_CEDAR: &str = r#"
@id("scope")
permit (principal, action == Countersign::Action::"propose", resource);

@id("source_account_not_allowed")
@reason("Source account {source_account} is not configured for agent {agent}.")
forbid (principal, action == Countersign::Action::"propose", resource)
unless { principal.source_accounts.contains(resource.source_account) };

@id("purpose_not_allowed")
@reason("Purpose `{purpose}` is not allowed for agent {agent}.")
forbid (principal, action == Countersign::Action::"propose", resource)
unless { principal.purposes.contains(resource.purpose) };

@id("dual_approval")
@reason("{amount} is at or above 10,000.00 USD: two distinct approvers required.")
permit (principal, action == Countersign::Action::"dual_approval", resource)
when { resource.currency == "USD" && resource.amount_minor >= 1000000 };
"#;

fn rules(p: &Value) -> Vec<String> {
    p["policy"]["reasons"].as_array().expect("reasons").iter().map(|r| r["rule"].as_str().unwrap().to_owned()).collect()
}

async fn cedar_server(policy_file: &str, text: &str, more: &str) -> TestServer {
    let scratch = Scratch::with_fixture(&format!("[tenants.acme]\n{policy_file} = \"acme.cedar\"\n{more}"));
    scratch.file("acme.cedar", text);
    scratch.apply_fixture().await;
    scratch.serve(&[]).await
}

#[tokio::test]
async fn a_cedar_policy_decides_every_path_and_explains_it_in_its_own_words() {
    let server = cedar_server("policy", ACME_CEDAR, "").await;

    // Approved by policy alone, under the Cedar rule's name.
    let auto = server
        .create(&with(
            transfer(),
            json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 4_999, "invoice_id": "C-1"}),
        ))
        .await;
    assert_eq!(
        (auto["status"].as_str(), auto["policy"]["outcome"].as_str()),
        (Some("approved"), Some("auto_approved"))
    );
    assert_eq!(rules(&auto), ["small_trusted"]);
    assert_eq!(
        auto["policy"]["reasons"][0]["message"],
        "49.99 USD to a trusted payee is below 50.00 USD: approved by policy."
    );
    assert_eq!(auto["approvals"][0]["approver_id"], "policy:small_trusted", "{auto}");
    // The agent commits it: policy is checked again at commit, on Cedar.
    let token = auto["approval_token"].as_str().expect("a token").to_owned();
    let id = auto["id"].as_str().unwrap();
    let commit = send(server.post_json(
        &format!("/api/v1/proposals/{id}/commit"),
        ACME_BOT_KEY,
        &json!({"approval_token": token}),
    ))
    .await;
    assert_eq!(commit.status, 200, "{}", commit.text);

    // 50.00 USD: the TOML rules would approve it alone; Cedar asks a human.
    let one = server
        .create(&with(
            transfer(),
            json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 5_000, "run_id": "r-2", "invoice_id": "C-2"}),
        ))
        .await;
    assert_eq!(
        (one["policy"]["outcome"].as_str(), one["policy"]["required_approvals"].as_u64()),
        (Some("needs_approval"), Some(1))
    );
    assert_eq!(rules(&one), ["single_approval"]);
    assert_eq!(one["policy"]["reasons"][0]["message"], "50.00 USD needs one human approval.");
    // ana approves it (the approval re-evaluates Cedar) and the agent commits.
    let ana = Console::sign_in(&server, "ana").await;
    let approved = ana.approve(one["id"].as_str().unwrap()).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.body["status"], "approved");

    // 5,000.00 USD: two people.
    let two =
        server.create(&with(transfer(), json!({"amount_minor": 500_000, "run_id": "r-3", "invoice_id": "C-3"}))).await;
    assert_eq!(two["policy"]["required_approvals"], 2, "{two}");
    assert_eq!(rules(&two), ["dual_approval"]);
    assert_eq!(
        two["policy"]["reasons"][0]["message"],
        "5,000.00 USD is at or above 5,000.00 USD: two distinct approvers required."
    );

    // Refused by a forbid, with its reason; nothing stored but the audit entry.
    let refund =
        server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"purpose_code": "refund", "run_id": "r-4"}))).await;
    refund.assert_error(403, "policy_denied");
    assert_eq!(refund.detail_rules(), ["no_agent_refunds"]);
    assert!(
        refund.body["error"]["message"].as_str().unwrap().contains("Refunds of 250.00 USD are made by people"),
        "{}",
        refund.text
    );
    assert_eq!(server.audit_actions_where("proposal.denied").await.len(), 1);

    // The console's detail page says the reasons in words.
    let page = send(ana.bare(Method::GET, &format!("/proposals/{}", two["id"].as_str().unwrap()))).await;
    assert!(
        page.text.contains("5,000.00 USD is at or above 5,000.00 USD: two distinct approvers required."),
        "the detail page shows the reason"
    );
}

#[tokio::test]
async fn a_policy_that_does_not_validate_stops_the_start_with_cedar_s_error_in_its_file() {
    let scratch = Scratch::with_fixture("[tenants.acme]\npolicy = \"acme.cedar\"\n");
    // A typo on line 4: `amount` is no attribute of a proposal.
    scratch.file(
        "acme.cedar",
        "@id(\"scope\")\npermit (principal, action == Countersign::Action::\"propose\", resource);\n\
         @id(\"big\") permit (principal, action == Countersign::Action::\"dual_approval\", resource)\n\
         when { resource.amount >= 100 };\n",
    );
    let (code, _, err) = scratch.cli(&["migrate"], None).await;
    assert_ne!(code, 0);
    assert!(err.contains("tenants.acme.policy"), "{err}");
    assert!(err.contains("acme.cedar:4:"), "Cedar's error, located: {err}");
    // A file that is not there.
    let scratch = Scratch::with_fixture("[tenants.acme]\nobserve = \"missing.cedar\"\n");
    let (code, _, err) = scratch.cli(&["migrate"], None).await;
    assert_ne!(code, 0);
    assert!(err.contains("tenants.acme.observe") && err.contains("missing.cedar"), "{err}");
    // `policy check` says the same and loads nothing.
    let scratch = Scratch::with_fixture("");
    let bad =
        scratch.file("bad.cedar", "@id(\"x\")\npermit (principal, action == Countersign::Action::\"pay\", resource);");
    let (code, out, err) = scratch.cli(&["policy", "check", bad.to_str().unwrap()], None).await;
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("bad.cedar:2:"), "{err}");
}

#[tokio::test]
async fn the_converted_toml_rules_check_and_the_shipped_examples_pass() {
    let scratch = Scratch::with_fixture("");
    let (code, cedar, err) = scratch.cli(&["policy", "to-cedar"], None).await;
    assert_eq!(code, 0, "{err}");
    assert!(cedar.contains("@id(\"dual_approval\")"), "{cedar}");
    let file = scratch.file("converted.cedar", &cedar);
    let (code, out, err) = scratch.cli(&["policy", "check", file.to_str().unwrap()], None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("valid") && out.contains("auto_approve_trusted_payee"), "{out}");
    // The shipped policy is the conversion of the default rules.
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/demo.cedar")).unwrap();
    assert_eq!(shipped.trim_end(), cedar.trim_end(), "policies/demo.cedar is `policy to-cedar` of the defaults");

    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/examples.toml");
    let (code, out, err) = scratch.cli(&["policy", "test", examples], None).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("10 passed, 0 failed"), "{out}");
    // A wrong expectation fails the run.
    let wrong = scratch.file(
        "wrong.toml",
        &format!(
            "policy = {:?}\n[[case]]\nname = \"too optimistic\"\namount_minor = 20000\ncurrency = \"USD\"\n\
             payee_trusted = true\nexpect = {{ outcome = \"auto_approved\" }}\n",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/demo.cedar")
        ),
    );
    let (code, out, _) = scratch.cli(&["policy", "test", wrong.to_str().unwrap()], None).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED  too optimistic") && out.contains("0 passed, 1 failed"), "{out}");
}

const METRICS_TOKEN: &str = "scrape-me-0123456789";

#[tokio::test]
async fn observe_mode_records_differences_and_never_enforces_them() {
    let more = format!("[metrics]\nbearer_token = \"{METRICS_TOKEN}\"\n");
    let server = cedar_server("observe", NO_AUTO_CEDAR, &more).await;
    let auto = server
        .create(&with(
            transfer(),
            json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 9_999, "invoice_id": "O-1"}),
        ))
        .await;
    // Enforced: the TOML rules, as before.
    assert_eq!(auto["status"], "approved", "{auto}");
    // Decided alike: nothing recorded.
    server.create(&with(transfer(), json!({"amount_minor": 20_000, "run_id": "r-2", "invoice_id": "O-2"}))).await;

    let ada = add_admin(&server, "acme", "ada").await;
    let status = send(ada.bare(Method::GET, "/api/v1/admin/policy")).await;
    assert_eq!(status.status, 200, "{}", status.text);
    assert_eq!(status.body["enforced"], "the TOML rules ([policy])");
    assert!(status.body["observed"].as_str().unwrap().starts_with("Cedar policy sha256:"), "{}", status.text);
    let seen = status.body["observations"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "{}", status.text);
    assert_eq!(seen[0]["proposal_id"], auto["id"]);
    assert_eq!(seen[0]["change"], "auto_approved -> needs_approval");
    assert_eq!(seen[0]["amount"], "99.99 USD");
    assert_eq!(seen[0]["enforced_rules"], json!(["auto_approve_trusted_payee"]));
    assert_eq!(seen[0]["observed_rules"], json!(["single_approval"]));

    let metrics = send(server.client.get(server.url("/metrics")).bearer_auth(METRICS_TOKEN)).await;
    assert!(
        metrics
            .text
            .contains("countersign_policy_observed_differences_total{change=\"auto_approved -> needs_approval\"} 1"),
        "{}",
        metrics.text
    );
    // Admins only; another tenant sees none of it.
    let ana = Console::sign_in(&server, "ana").await;
    send(ana.bare(Method::GET, "/api/v1/admin/policy")).await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    let theirs = send(gus.bare(Method::GET, "/api/v1/admin/policy")).await;
    assert_eq!(theirs.body["observations"], json!([]), "{}", theirs.text);
    // The console page shows it.
    let page = send(ada.bare(Method::GET, "/admin/policy")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("auto_approved → needs_approval"), "the page lists the difference");
}

#[tokio::test]
async fn a_backtest_says_what_a_candidate_would_have_changed_with_totals_by_currency() {
    let server = TestServer::start().await;
    for (i, amount) in [1_000u64, 2_000, 9_999].iter().enumerate() {
        let body = with(
            transfer(),
            json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": amount, "run_id": format!("b-{i}"), "invoice_id": format!("B-{i}")}),
        );
        assert_eq!(server.create(&body).await["status"], "approved");
    }
    server.create(&with(transfer(), json!({"amount_minor": 50_000, "run_id": "b-9"}))).await;

    let ada = add_admin(&server, "acme", "ada").await;
    let r = send(
        ada.authed(Method::POST, "/api/v1/admin/policy/backtest")
            .json(&json!({"policy": NO_AUTO_CEDAR, "since": "90d"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((r.body["replayed"].as_u64(), r.body["changed"].as_u64()), (Some(4), Some(3)), "{}", r.text);
    let usd = &r.body["changes"]["auto_approved -> needs_approval"]["USD"];
    assert_eq!((usd["count"].as_u64(), usd["amount_minor"].as_u64()), (Some(3), Some(12_999)), "{}", r.text);
    assert_eq!(usd["amount"], "129.99 USD");
    assert_eq!(r.body["examples"][0]["rules"], json!(["single_approval"]));

    // The same from the command line.
    let candidate = server.dir.path().join("candidate.cedar");
    std::fs::write(&candidate, NO_AUTO_CEDAR).unwrap();
    let (code, out, err) =
        server.cli(&["policy", "backtest", candidate.to_str().unwrap(), "--tenant", "acme", "--since", "90d"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("4 replayed, 3 decided differently"), "{out}");
    assert!(out.contains("auto_approved → needs_approval: 3") && out.contains("USD: 3 proposals, 129.99 USD"), "{out}");

    // A candidate that does not validate: 422 naming the field, Cedar's place.
    let bad = send(
        ada.authed(Method::POST, "/api/v1/admin/policy/backtest")
            .json(&json!({"policy": "permit (principal, action, resource) when { resource.nope };"})),
    )
    .await;
    bad.assert_error(422, "validation_failed");
    assert_eq!(bad.body["error"]["details"][0]["field"], "policy");
    assert!(bad.body["error"]["details"][0]["message"].as_str().unwrap().starts_with("policy:1:"), "{}", bad.text);
    // Not for approvers; not without the CSRF token.
    let ana = Console::sign_in(&server, "ana").await;
    send(ana.authed(Method::POST, "/api/v1/admin/policy/backtest").json(&json!({"policy": NO_AUTO_CEDAR})))
        .await
        .assert_error(403, "forbidden");
    let no_csrf =
        send(ada.with_origin(Method::POST, "/api/v1/admin/policy/backtest").json(&json!({"policy": NO_AUTO_CEDAR})))
            .await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.text);
}

#[tokio::test]
async fn a_policy_change_is_four_eyes_and_the_second_admin_sees_its_backtest() {
    let server = TestServer::start().await;
    let small = |n: &str| {
        with(
            transfer(),
            json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 1_000, "run_id": n, "invoice_id": n}),
        )
    };
    assert_eq!(server.create(&small("first")).await["status"], "approved");
    let ada = add_admin(&server, "acme", "ada").await;
    let abe = add_admin(&server, "acme", "abe").await;

    // Refused whole when it does not validate.
    let bad = send(ada.authed(Method::POST, "/api/v1/admin/policy/changes").json(&json!({"mode": "enforce", "policy": "@id(\"x\") forbid (principal, action, resource) when { principal.nope };"}))).await;
    bad.assert_error(422, "validation_failed");
    assert!(pending_change_ids(&server).await.is_empty());

    let proposed = send(
        ada.authed(Method::POST, "/api/v1/admin/policy/changes")
            .json(&json!({"mode": "enforce", "policy": NO_AUTO_CEDAR})),
    )
    .await;
    assert_eq!(proposed.status, 202, "{}", proposed.text);
    assert_eq!(proposed.body["backtest"]["changed"], 1, "{}", proposed.text);
    let id = proposed.body["change_id"].as_str().unwrap().to_owned();
    let confirm = format!("/api/v1/admin/policy/changes/{id}/confirm");
    // Nothing changed yet.
    assert_eq!(server.create(&small("before")).await["status"], "approved");

    // Not by its proposer, not by an approver, not from another tenant, not without CSRF.
    send(ada.authed(Method::POST, &confirm)).await.assert_error(403, "forbidden");
    let ana = Console::sign_in(&server, "ana").await;
    send(ana.authed(Method::POST, &confirm)).await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    send(gus.authed(Method::POST, &confirm)).await.assert_error(404, "not_found");
    let no_csrf = send(abe.with_origin(Method::POST, &confirm)).await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.text);
    // The admin page shows the second admin the stored backtest.
    let page = send(abe.bare(Method::GET, "/admin/policy")).await;
    assert!(
        page.text.contains("What it would have changed") && page.text.contains("auto_approved → needs_approval: 1"),
        "the confirm page shows the backtest"
    );

    let confirmed = send(abe.authed(Method::POST, &confirm)).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.text);
    assert_eq!(confirmed.body["status"], "applied");
    // Run again at confirmation: the two auto-approvals now.
    assert_eq!(confirmed.body["backtest"]["changed"], 2, "{}", confirmed.text);
    send(abe.authed(Method::POST, &confirm)).await.assert_error(409, "invalid_state");

    // Enforced from now on: no approval by policy alone.
    let after = server.create(&small("after")).await;
    assert_eq!(
        (after["status"].as_str(), rules(&after)),
        (Some("pending_approval"), vec!["single_approval".to_owned()])
    );
    let changed = server.audit_actions_where("policy.changed").await;
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0]["data"]["mode"], "enforce");
    let status = send(abe.bare(Method::GET, "/api/v1/admin/policy")).await;
    assert!(status.body["enforced"].as_str().unwrap().starts_with("Cedar policy sha256:"), "{}", status.text);
}
