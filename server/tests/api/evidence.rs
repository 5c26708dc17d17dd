//! A payment's proof bundle (docs/EVIDENCE.md "The
//! proof bundle"), black-box: exported by the agent or by an admin or
//! auditor on the console, checked offline by `countersign evidence
//! verify` (and, in `make test`, by the independent Python verifier on the
//! fixtures written here), with every tampered copy refused by the check
//! that should catch it.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use countersign::evidence::tlog::note::{Checkpoint, NoteSigner, NoteVerifier};
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::passkeys::PUBLIC_URL;
use crate::passkeys_step_up::{approve_with, no_cool_off, sign, sign_in, step_up, with_passkey};
use crate::rail_harness::*;
use crate::transparency_log::caught_up;

/// `GET /api/v1/proposals/{id}/evidence{query}` as `key`.
pub(crate) async fn evidence(server: &TestServer, key: &str, id: &str, query: &str) -> Reply {
    send(server.get(&format!("/api/v1/proposals/{id}/evidence{query}"), key)).await
}

/// Runs `countersign evidence verify` on `bundle` (plus `extra`
/// arguments): exit code, stdout, stderr.
pub(crate) async fn verify(
    server: &TestServer,
    dir: &TestDir,
    bundle: &Value,
    extra: &[&str],
) -> (i32, String, String) {
    let file = dir.path().join(format!("bundle-{}.json", rand::random::<u32>()));
    std::fs::write(&file, serde_json::to_vec_pretty(bundle).unwrap()).unwrap();
    let mut args = vec!["evidence", "verify", file.to_str().unwrap()];
    args.extend(extra);
    server.cli(&args).await
}

/// Asserts `bundle` is refused by check `check`.
async fn refused(server: &TestServer, dir: &TestDir, bundle: &Value, check: u8, what: &str) {
    let (code, out, err) = verify(server, dir, bundle, &[]).await;
    assert_eq!(code, 1, "{what}: refused\n{out}{err}");
    assert!(err.contains(&format!("FAIL: check {check} ")), "{what}: refused by check {check}, got {err}");
}

/// Writes `bundle` as `$COUNTERSIGN_EVIDENCE_FIXTURES/{name}` for the
/// independent verifier, when that is set.
pub(crate) fn write_fixture(name: &str, bundle: &Value) {
    let Ok(dir) = std::env::var("COUNTERSIGN_EVIDENCE_FIXTURES") else { return };
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(std::path::Path::new(&dir).join(name), serde_json::to_vec_pretty(bundle).unwrap()).unwrap();
}

fn leaf_bodies(bundle: &Value) -> Vec<Value> {
    bundle["log"]["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_slice(&STANDARD.decode(l["body"].as_str().unwrap()).unwrap()).unwrap())
        .collect()
}

fn position(bundle: &Value, action: &str) -> usize {
    leaf_bodies(bundle).iter().position(|b| b["action"] == action).unwrap_or_else(|| panic!("a {action} leaf"))
}

/// A payment approved with a passkey and paid on the rail; its id.
async fn paid_with_a_passkey(server: &TestServer) -> String {
    let ana = sign_in(server, "ana").await;
    let (mut key, _) = with_passkey(server, &ana).await;
    let id = pending(server).await;
    let options = step_up(&ana, &id).await;
    let approved = approve_with(&ana, &id, &sign(&mut key, &options)).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let (token, _) = token_of(server, &id).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.wait_status(&id, "succeeded", 20).await;
    id
}

async fn passkey_server() -> (TestServer, RailSim) {
    let rail = RailSim::start().await;
    let config = format!("public_url = \"{PUBLIC_URL}\"\n[policy]\nstep_up_at_minor = {{ USD = 20_000 }}\n");
    let server = TestServer::start_with(&rail_config(&rail, &no_cool_off(&config))).await;
    (server, rail)
}

#[tokio::test]
async fn a_paid_payments_bundle_verifies_offline_and_each_tampered_copy_is_refused() {
    let (server, _rail) = passkey_server().await;
    let dir = TestDir::new();
    let id = paid_with_a_passkey(&server).await;

    let r = evidence(&server, ACME_BOT_KEY, &id, "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let bundle = r.body;
    // Accounts only as commitments: the full numbers are nowhere in it.
    for account in [ACME_SOURCE, ACME_PAYEE] {
        assert!(!r.text.contains(account), "{account} is committed, not shown");
    }
    assert_eq!(bundle["disclosed"], json!({}));
    assert_eq!(bundle["request"]["destination"]["id"], bundle["commitments"]["destination"]);
    assert_eq!(bundle["operation"]["status"], "succeeded");
    assert!(bundle["operation"]["rail_reference"].as_str().is_some_and(|r| r.starts_with("tr_")), "{bundle:#}");
    assert_eq!(bundle["approvals"][0]["amr"], "passkey");
    assert!(bundle["approvals"][0]["passkey"]["fingerprint"].as_str().unwrap().starts_with("sha256:"));
    let bodies = leaf_bodies(&bundle);
    let actions: Vec<&str> = bodies.iter().map(|b| b["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions[..5],
        ["passkey.registered", "proposal.created", "proposal.approval_given", "proposal.approved", "operation.created"],
        "{actions:?}"
    );
    let created = &bodies[position(&bundle, "operation.created")];
    assert_eq!(
        created["data"]["destination_commitment"], bundle["commitments"]["destination"],
        "the authorization receipt commits to the destination"
    );
    assert_eq!(created["data"]["source_account_commitment"], bundle["commitments"]["source_account"]);
    let mandate = decode_jws(bundle["mandate"].as_str().unwrap());
    assert_eq!(mandate.header["typ"], "countersign-mandate+jwt");
    let details = &mandate.claims["authorization_details"][0];
    assert_eq!(details["type"], "payment_initiation");
    assert_eq!(details["instructedAmount"]["currency"], "USD");
    assert_eq!(details["creditorAccount"]["commitment"], bundle["commitments"]["destination"]);
    assert_eq!(mandate.claims["jti"], decode_jws(bundle["approval_token"].as_str().unwrap()).claims["jti"]);
    write_fixture("bundle.json", &bundle);

    let (code, out, err) = verify(&server, &dir, &bundle, &[]).await;
    assert_eq!(code, 0, "{out}{err}");
    for check in 1..=12 {
        assert!(out.contains(&format!("ok {check} ")), "check {check} ran and passed:\n{out}");
    }
    assert!(out.contains("1 signed by a passkey"), "{out}");

    // Disclosed, the accounts are shown with their salts and the request
    // hash is recomputed from the request.
    let r = evidence(&server, ACME_BOT_KEY, &id, "?disclose=destination,source_account").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let disclosed = r.body;
    assert_eq!(disclosed["disclosed"]["destination"]["value"], ACME_PAYEE);
    assert_eq!(disclosed["disclosed"]["source_account"]["value"], ACME_SOURCE);
    assert_eq!(disclosed["commitments"], bundle["commitments"], "the same salts on every export");
    write_fixture("bundle-disclosed.json", &disclosed);
    let (code, out, err) = verify(&server, &dir, &disclosed, &[]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("hashes to the request hash"), "{out}");

    // Against a checkpoint the auditor trusts: the same one passes; one of
    // another size asks for an export at that size; a forged one fails.
    let trusted = dir.path().join("trusted");
    std::fs::write(&trusted, bundle["log"]["checkpoint"].as_str().unwrap()).unwrap();
    let (code, out, err) = verify(&server, &dir, &bundle, &["--checkpoint", trusted.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ok 4 trusted checkpoint: the bundle's checkpoint is the trusted one"), "{out}");
    let key = bundle["keys"]["log"].as_str().unwrap();
    let verifier = NoteVerifier::parse(key).unwrap();
    let size = bundle["log"]["tree_size"].as_u64().unwrap();
    let r = evidence(&server, ACME_BOT_KEY, &id, &format!("?tree_size={size}")).await;
    assert_eq!(r.status, 200, "an export at a past size: {}", r.text);
    assert_eq!(r.body["log"]["checkpoint"], bundle["log"]["checkpoint"]);

    // The log grows; a bundle exported now is refused against the old
    // checkpoint until exported at its size.
    pending(&server).await;
    caught_up(&server).await;
    let later = evidence(&server, ACME_BOT_KEY, &id, "").await.body;
    assert!(later["log"]["tree_size"].as_u64().unwrap() > size);
    let (code, _, err) = verify(&server, &dir, &later, &["--checkpoint", trusted.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("FAIL: check 4 ") && err.contains(&format!("tree_size={size}")), "{err}");
    let (code, _, err) = verify(
        &server,
        &dir,
        &bundle,
        &["--key", &NoteSigner::from_seed(&verifier.name, &[9; 32]).verifier().encoded()],
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("FAIL: check 2 "), "another pinned key: {err}");

    // Tampered copies, each refused by the check that should catch it.
    let mut t = bundle.clone();
    t["request"]["amount_minor"] = json!(t["request"]["amount_minor"].as_u64().unwrap() + 1);
    refused(&server, &dir, &t, 7, "a changed amount").await;

    let mut t = disclosed.clone();
    t["disclosed"]["destination"]["value"] = json!(ACME_TRUSTED_PAYEE);
    refused(&server, &dir, &t, 7, "another destination disclosed").await;

    let mut t = bundle.clone();
    t["log"]["leaves"].as_array_mut().unwrap().remove(position(&bundle, "operation.created"));
    refused(&server, &dir, &t, 6, "a dropped receipt").await;

    let mut t = bundle.clone();
    t["log"]["leaves"].as_array_mut().unwrap().swap(2, 3);
    refused(&server, &dir, &t, 5, "two leaves reordered").await;

    let mut t = bundle.clone();
    let forger = NoteSigner::from_seed(&verifier.name, &[9; 32]);
    t["log"]["checkpoint"] = json!(forger.sign(&Checkpoint { origin: verifier.name.clone(), size, root: [7; 32] }));
    refused(&server, &dir, &t, 3, "a checkpoint signed by another key").await;
    t["keys"]["log"] = json!(forger.verifier().encoded());
    refused(&server, &dir, &t, 5, "a forged checkpoint with its own key: the leaves are not under its root").await;

    let mut t = bundle.clone();
    t["tenant_id"] = json!("globex");
    t["request"]["tenant_id"] = json!("globex");
    refused(&server, &dir, &t, 5, "the bundle claimed for another tenant").await;

    let mut t = bundle.clone();
    t["approval_token"] = t["mandate"].clone();
    refused(&server, &dir, &t, 10, "the mandate passed off as the approval token").await;

    let mut t = bundle.clone();
    let signature = URL_SAFE_NO_PAD.decode(t["approvals"][0]["passkey"]["signature"].as_str().unwrap()).unwrap();
    let mut other = signature.clone();
    let last = other.len() - 1;
    other[last] ^= 1;
    t["approvals"][0]["passkey"]["signature"] = json!(URL_SAFE_NO_PAD.encode(other));
    refused(&server, &dir, &t, 9, "a changed passkey signature").await;

    let mut t = bundle.clone();
    t["operation"]["rail_reference"] = json!("tr_someone_elses");
    refused(&server, &dir, &t, 11, "another rail reference").await;
}

#[tokio::test]
async fn evidence_goes_to_its_agent_and_to_admins_and_auditors_of_its_tenant_only() {
    let server = TestServer::start().await;
    let dir = TestDir::new();
    let ana = Console::sign_in(&server, "ana").await;
    let before = caught_up(&server).await;
    let id = pending(&server).await;
    let r = ana.reject(&id, "not this month").await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The agent that proposed it; no other agent, in or out of the tenant.
    let own = evidence(&server, ACME_BOT_KEY, &id, "").await;
    assert_eq!(own.status, 200, "{}", own.text);
    evidence(&server, ACME_OTHER_KEY, &id, "").await.assert_error(404, "not_found");
    evidence(&server, GLOBEX_BOT_KEY, &id, "").await.assert_error(404, "not_found");
    send(server.client.get(server.url(&format!("/api/v1/proposals/{id}/evidence"))))
        .await
        .assert_error(401, "unauthenticated");

    // A rejection's bundle: its receipt, no token, no operation, no mandate.
    let bundle = own.body;
    assert_eq!(
        (bundle["approval_token"].clone(), bundle["operation"].clone(), bundle["mandate"].clone()),
        (Value::Null, Value::Null, Value::Null)
    );
    assert_eq!(bundle["approvals"][0]["decision"], "reject");
    write_fixture("bundle-rejected.json", &bundle);
    let (code, out, err) = verify(&server, &dir, &bundle, &[]).await;
    assert_eq!(code, 0, "{out}{err}");

    // Approved by policy alone: the decision's receipt is the grant's.
    let (auto, _) = auto_approved(&server, 5_000).await;
    let r = evidence(&server, ACME_BOT_KEY, &auto, "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["approvals"][0]["via"], "policy");
    assert!(r.body["approvals"][0]["receipt"].is_string(), "{}", r.text);
    assert!(r.body["approval_token"].is_string() && r.body["mandate"].is_string());
    write_fixture("bundle-auto.json", &r.body);
    let (code, out, err) = verify(&server, &dir, &r.body, &[]).await;
    assert_eq!(code, 0, "{out}{err}");

    // Typed errors for the exporter's parameters.
    let r = evidence(&server, ACME_BOT_KEY, &id, "?disclose=salt").await;
    r.assert_error(422, "validation_failed");
    assert!(r.detail_fields().contains("disclose"), "{}", r.text);
    let r = evidence(&server, ACME_BOT_KEY, &id, "?tree_size=999999").await;
    r.assert_error(422, "validation_failed");
    assert!(r.detail_fields().contains("tree_size"), "{}", r.text);
    let r = evidence(&server, ACME_BOT_KEY, &id, &format!("?tree_size={before}")).await;
    r.assert_error(422, "validation_failed");
    assert!(r.text.contains("does not cover"), "a checkpoint before the proposal: {}", r.text);

    // The console: admins and auditors of the tenant; not approvers or
    // viewers; not another tenant's admin.
    apply_user(&server, "acme", "aud", &["auditor"], 0).await;
    let aud = Console::sign_in(&server, "aud").await;
    let path = format!("/api/v1/console/proposals/{id}/evidence");
    let r = send(aud.authed(reqwest::Method::GET, &path)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-disposition"), Some(format!("attachment; filename=\"evidence-{id}.json\"").as_str()));
    assert_eq!(r.body["proposal_id"], id.as_str());
    let admin = add_admin(&server, "acme", "ada").await;
    assert_eq!(send(admin.authed(reqwest::Method::GET, &path)).await.status, 200);
    send(ana.authed(reqwest::Method::GET, &path)).await.assert_error(403, "forbidden");
    let vic = Console::sign_in(&server, "vic").await;
    send(vic.authed(reqwest::Method::GET, &path)).await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    send(gus.authed(reqwest::Method::GET, &path)).await.assert_error(404, "not_found");

    // The detail page offers the download to the auditor only; the auditor
    // decides nothing.
    let page = |c: &Console| {
        let rb = c.authed(reqwest::Method::GET, &format!("/proposals/{id}"));
        async move { send(rb).await.text }
    };
    assert!(page(&aud).await.contains("id=\"download-evidence\""));
    assert!(!page(&ana).await.contains("id=\"download-evidence\""));
    let next = pending(&server).await;
    let r = aud.approve(&next).await;
    assert_eq!(r.status, 403, "an auditor cannot approve: {}", r.text);
}
