//! `POST /api/v1/proposals`: the proposal object, canonicalization, the
//! request hash and duplicate collapsing (SPEC §3, §9).

use serde_json::json;
use std::collections::BTreeSet;

use crate::helpers::*;

/// Every member of the proposal object of SPEC §9.
const PROPOSAL_FIELDS: &[&str] = &[
    "id",
    "status",
    "kind",
    "run_id",
    "request_hash",
    "canonical_request",
    "payee",
    "policy",
    "approvals",
    "approval_token",
    "approval_expires_at",
    "operation",
    "approval_url",
    "created_at",
    "updated_at",
    "expires_at",
];

#[tokio::test]
async fn propose_returns_201_with_the_full_proposal_object() {
    let server = TestServer::start().await;
    let r = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.header("content-type").is_some_and(|ct| ct.starts_with("application/json")), "{:?}", r.headers);
    let p = &r.body;
    for field in PROPOSAL_FIELDS {
        assert!(p.get(*field).is_some(), "proposal object lacks `{field}`: {p}");
    }

    let id = p["id"].as_str().expect("id");
    assert!(id.starts_with("prop_") && id.len() > "prop_".len(), "{id}");
    assert_eq!(p["status"], "pending_approval");
    assert_eq!(p["kind"], "transfer");
    assert_eq!(p["run_id"], "run-42");
    assert!(is_request_hash(p["request_hash"].as_str().unwrap()), "{}", p["request_hash"]);

    // Fields that do not apply yet are null.
    assert_eq!(p["approval_token"], json!(null));
    assert_eq!(p["approval_expires_at"], json!(null));
    assert_eq!(p["operation"], json!(null));
    assert_eq!(p["approvals"], json!([]));

    assert_eq!(
        p["payee"],
        json!({"id": ACME_PAYEE, "legal_name": "Northwind Traders GmbH", "masked_account": "ba_…0007", "trusted": false})
    );
    assert_eq!(p["policy"]["outcome"], "needs_approval");
    assert_eq!(p["policy"]["required_approvals"], 1);
    let reasons = p["policy"]["reasons"].as_array().expect("reasons");
    assert!(!reasons.is_empty(), "every decision gives a reason: {p}");
    for reason in reasons {
        assert!(reason["rule"].as_str().is_some_and(|s| !s.is_empty()), "{reason}");
        assert!(reason["message"].as_str().is_some_and(|s| !s.is_empty()), "{reason}");
    }

    assert!(p["approval_url"].as_str().unwrap().ends_with(&format!("/proposals/{id}")), "{}", p["approval_url"]);
    let created = rfc3339(&p["created_at"]);
    let updated = rfc3339(&p["updated_at"]);
    let expires = rfc3339(&p["expires_at"]);
    assert_eq!(created, updated);
    assert_eq!((expires - created).num_seconds(), 24 * 3600, "default TTL is 24 h");
}

#[tokio::test]
async fn canonical_request_takes_identity_from_the_credential_and_resolves_the_payee() {
    let server = TestServer::start().await;
    let p = server.create(&transfer()).await;
    let c = &p["canonical_request"];
    assert_eq!(c["tenant_id"], "acme", "{c}");
    assert_eq!(c["agent_id"], "payout-bot", "{c}");
    assert_eq!(c["amount_minor"], 25000);
    assert_eq!(c["currency"], "USD");
    assert_eq!(c["purpose_code"], "vendor");
    assert_eq!(c["reference"], "Invoice 1842");
    assert_eq!(c["invoice_id"], "1842");
    assert_eq!(c["kind"], "transfer");
    assert_eq!(c["destination"]["legal_name"], "Northwind Traders GmbH", "{c}");
    assert_eq!(c["destination"]["masked_account"], "ba_…0007", "{c}");

    // The same agent of the other tenant gets its own identity, not acme's.
    let r = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["canonical_request"]["tenant_id"], "globex");
    assert_eq!(r.body["canonical_request"]["destination"]["legal_name"], "Globex Payee");
}

#[tokio::test]
async fn request_hash_is_the_sha256_of_the_jcs_canonical_request() {
    let server = TestServer::start().await;
    let p = server.create(&transfer()).await;
    let expected = sha256_prefixed(jcs(&p["canonical_request"]).as_bytes());
    assert_eq!(p["request_hash"], expected.as_str(), "canonical_request is the exact object that was hashed");
}

#[tokio::test]
async fn lower_case_currency_is_canonicalized_to_upper_case() {
    let server = TestServer::start().await;
    let lower = server.create(&with(transfer(), json!({"currency": "usd"}))).await;
    assert_eq!(lower["canonical_request"]["currency"], "USD");

    // The same logical request in canonical case is the same proposal.
    let upper = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(upper.status, 200, "{}", upper.text);
    assert_eq!(upper.body["id"], lower["id"]);
    assert_eq!(upper.body["request_hash"], lower["request_hash"]);
}

#[tokio::test]
async fn identical_proposal_in_the_same_run_returns_200_and_the_same_proposal() {
    let server = TestServer::start().await;
    let first = server.create(&transfer()).await;

    let again = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body, first, "the existing proposal is returned unchanged");

    // Member order and whitespace do not make a different request.
    let reordered = r#"{ "invoice_id": "1842", "purpose_code": "vendor", "reference": "Invoice 1842",
        "destination": "ba_northwind0007", "source_account": "acct_0123456789abcdef",
        "currency": "USD", "amount_minor": 25000, "run_id": "run-42" }"#;
    let r = server.propose_raw(Some("application/json"), reordered).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["id"], first["id"]);

    // `kind` defaults to `transfer`: saying so is the same request.
    let explicit = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"kind": "transfer"}))).await;
    assert_eq!(explicit.status, 200, "{}", explicit.text);
    assert_eq!(explicit.body["id"], first["id"]);

    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1);
}

#[tokio::test]
async fn identical_proposal_in_a_different_run_is_a_new_proposal() {
    let server = TestServer::start().await;
    let first = server.create(&transfer()).await;
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"run_id": "run-43"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_ne!(r.body["id"], first["id"]);
    assert_eq!(r.body["run_id"], "run-43");
    assert_eq!(server.all_ids(ACME_BOT_KEY).await.len(), 2);
}

#[tokio::test]
async fn the_same_request_from_another_agent_is_its_own_proposal_with_its_own_hash() {
    let server = TestServer::start().await;
    let mine = server.create(&transfer()).await;
    let r = server.propose_as(ACME_OTHER_KEY, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_ne!(r.body["id"], mine["id"]);
    assert_eq!(r.body["canonical_request"]["agent_id"], "other-bot");
    assert_ne!(r.body["request_hash"], mine["request_hash"]);
}

#[tokio::test]
async fn the_same_request_in_another_tenant_has_another_hash() {
    let server = TestServer::start().await;
    let acme = server.create(&transfer()).await;

    // A tenant whose agent, source account and payee mirror acme's exactly.
    let (code, out, err) = server.cli(&["tenant", "add", "--id", "initech", "--name", "Initech"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = server
        .cli_stdin(
            &["user", "add", "--tenant", "initech", "--username", "iris", "--role", "approver"],
            "a passphrase\n",
        )
        .await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = server
        .cli(&[
            "agent",
            "add",
            "--tenant",
            "initech",
            "--id",
            "payout-bot",
            "--acts-for",
            "iris",
            "--source-account",
            ACME_SOURCE,
            "--purpose",
            "vendor",
        ])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    let key = out.split_whitespace().find(|w| w.starts_with("cs_")).expect("key printed").to_owned();
    let (code, out, err) = server
        .cli(&["payee", "add", "--tenant", "initech", "--id", ACME_PAYEE, "--legal-name", "Northwind Traders GmbH"])
        .await;
    assert_eq!(code, 0, "{out}{err}");

    let r = server.propose_as(&key, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut theirs = r.body["canonical_request"].clone();
    assert_eq!(theirs["tenant_id"], "initech");
    theirs["tenant_id"] = json!("acme");
    assert_eq!(theirs, acme["canonical_request"], "only the tenant differs");
    assert_ne!(r.body["request_hash"], acme["request_hash"], "the tenant is part of the hash");
}

#[tokio::test]
async fn any_field_change_gives_a_different_request_hash() {
    let server = TestServer::start().await;
    let base = server.create(&transfer()).await;
    let variants = [
        ("amount", json!({"amount_minor": 25001})),
        ("currency", json!({"currency": "EUR"})),
        ("payee", json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 50000})),
        ("reference", json!({"reference": "Invoice 1842 (corrected)"})),
        ("no reference", json!({"reference": null})),
        ("purpose", json!({"purpose_code": "refund"})),
        ("invoice", json!({"invoice_id": "1843"})),
        ("no invoice", json!({"invoice_id": null})),
    ];
    let mut hashes = BTreeSet::from([base["request_hash"].as_str().unwrap().to_owned()]);
    for (what, change) in variants {
        let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), change)).await;
        assert_eq!(r.status, 201, "{what}: a changed request is a new proposal: {}", r.text);
        let hash = r.body["request_hash"].as_str().unwrap().to_owned();
        assert!(is_request_hash(&hash), "{hash}");
        assert!(hashes.insert(hash), "{what}: the hash did not change");
    }
}
