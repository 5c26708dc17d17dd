//! Tenants on other rails, end to end through the server: an agent
//! proposes, the payment is approved and committed, and the rail the
//! tenant's configuration names pays — bank files (ISO 20022, answered by
//! e2e/rails/bank/bank_sim.py, which validates every file against the
//! official XSD) and Stripe (e2e/rails/stripe/stripe_fake.py, checked
//! against Stripe's published OpenAPI description).

use reqwest::Method;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

/// The payees' bank details (the acme fixture's two payees).
const BENEFICIARIES: &str = r#"
[[beneficiary]]
id = "acct_acme0000000001"
name = "Acme Supplies Ltd"
iban = "GB82WEST12345698765432"
bic = "NWBKGB2L"

[[beneficiary]]
id = "ba_northwind0007"
name = "Northwind Traders GmbH"
iban = "DE89370400440532013000"
"#;

struct Bank {
    dir: tempfile::TempDir,
    python: PathBuf,
}

impl Bank {
    fn new() -> Option<Bank> {
        let python = checkers_python()?;
        let dir = tempfile::tempdir().unwrap();
        for sub in ["out", "in"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("beneficiaries.toml"), BENEFICIARIES).unwrap();
        Some(Bank { dir, python })
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn config(&self) -> String {
        format!(
            r#"
[rail]
reconcile_interval_secs = 1

[rails.bank]
kind = "iso20022"
outbox = {out:?}
inbox = {inbox:?}
debtor_name = "Acme Corp"
debtor_iban = "FR1420041010050500013M02606"
debtor_bic = "BNPAFRPP"
beneficiaries = {beneficiaries:?}
cut_every_secs = 0

[tenants.acme]
rail = "bank"
"#,
            out = self.path("out"),
            inbox = self.path("in"),
            beneficiaries = self.path("beneficiaries.toml"),
        )
    }

    /// The bank answers every file in the outbox (refusing, and failing the
    /// test, any file its XSD does not accept).
    fn answer(&self, args: &[&str]) -> Value {
        let out = std::process::Command::new(&self.python)
            .arg(repo_root().join("e2e/rails/bank/bank_sim.py"))
            .args(["respond", "--outbox"])
            .arg(self.path("out"))
            .arg("--inbox")
            .arg(self.path("in"))
            .arg("--state")
            .arg(self.path("bank-state.json"))
            .args(args)
            .output()
            .expect("the bank runs");
        assert!(out.status.success(), "the bank refused a file: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("its summary")
    }

    fn outbox_files(&self) -> Vec<String> {
        files(&self.path("out"))
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// A payment to the untrusted payee, approved by ana and ben.
async fn approved(server: &TestServer, amount_minor: u64) -> (String, String) {
    let run = fresh_run();
    let body = with(
        transfer(),
        json!({"run_id": run, "amount_minor": amount_minor, "destination": ACME_PAYEE, "invoice_id": run}),
    );
    let p = server.create(&body).await;
    let id = p["id"].as_str().unwrap().to_owned();
    for who in ["ana", "ben"] {
        let console = Console::sign_in(server, who).await;
        let r = console.approve(&id).await;
        assert_eq!(r.status, 200, "{}", r.text);
        if r.body["status"] == "approved" {
            break;
        }
    }
    let p = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    let token = p["approval_token"].as_str().unwrap_or_else(|| panic!("approved: {p}")).to_owned();
    (id, token)
}

#[tokio::test]
async fn a_bank_tenant_is_paid_only_once_a_statement_books_it() {
    let Some(bank) = Bank::new() else { return };
    let server = TestServer::start_with(&bank.config()).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "executing", "handed to the bank channel, not paid: {}", r.text);
    let op = &r.body["operation"];
    assert_eq!(op["status"], "accepted");
    let op_id = op["id"].as_str().unwrap().to_owned();
    assert_eq!(op["rail_reference"], op_id.as_str(), "the end-to-end id is the operation id");

    // One file, naming the payment once; the default rail was not called.
    let written = bank.outbox_files();
    assert_eq!(written.len(), 1, "{written:?}");
    let file = std::fs::read_to_string(bank.path("out").join(&written[0])).unwrap();
    assert_eq!(file.matches(&format!("<EndToEndId>{op_id}</EndToEndId>")).count(), 1, "{file}");
    assert!(file.contains("<InstdAmt Ccy=\"USD\">50.00</InstdAmt>"), "{file}");

    // Silence settles nothing: still executing after passes.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["status"], "executing");

    let summary = bank.answer(&[]);
    assert_eq!(summary["processed"][0]["transactions"][0]["status"], "ACCP", "{summary}");
    let paid = server.wait_status(&id, "succeeded", 30).await;
    assert_eq!(paid["operation"]["status"], "succeeded");

    let applied = server.audit_actions_where("rail.document.applied").await;
    let kinds: Vec<&str> = applied.iter().filter_map(|e| e["data"]["kind"].as_str()).collect();
    assert!(applied.iter().all(|e| e["actor"] == "rail:bank"), "{applied:?}");
    assert!(
        kinds.iter().any(|k| k.starts_with("pain.002")) && kinds.iter().any(|k| k.starts_with("camt.054")),
        "{applied:?}"
    );
    let succeeded = server.audit_actions_where("operation.succeeded").await;
    let evidence = succeeded.iter().find(|e| e["data"]["operation_id"] == op_id.as_str()).expect("audited");
    assert!(evidence["data"]["rail_outcome"].as_str().unwrap().contains("camt.054.001.08"), "{evidence}");

    // The reviewer sees the bank's document as the evidence.
    let ana = Console::sign_in(&server, "ana").await;
    let page = ana.authed(Method::GET, &format!("/proposals/{id}")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Booked by the bank: camt.054.001.08"), "the document is shown as evidence");

    // No full account number in the audit trail.
    let trail = format!("{:?}", server.audit_actions_where("rail.document.applied").await);
    for iban in ["GB82WEST12345698765432", "FR1420041010050500013M02606", "DE89370400440532013000"] {
        assert!(!trail.contains(iban), "an IBAN in the audit trail");
    }
}

#[tokio::test]
async fn a_bank_document_that_does_not_fit_is_flagged_and_pays_nothing() {
    let Some(bank) = Bank::new() else { return };
    let server = TestServer::start_with(&bank.config()).await;
    let (a, token_a) = approved(&server, 25_000).await;
    let (b, token_b) = auto_approved(&server, 7_000).await;
    let op_a = server.commit(&a, &token_a).await.body["operation"]["id"].as_str().unwrap().to_owned();
    let r = server.commit(&b, &token_b).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The bank books A for 1.00 more than was sent, names a payment nobody
    // sent, sends its notification twice, and a page that is no document.
    let delta = format!("{op_a}=+100");
    bank.answer(&["--amount-delta", &delta, "--unknown-e2e", "--duplicate-last", "--garbage"]);

    let a_after = server.wait_status(&a, "needs_review", 30).await;
    assert_eq!(a_after["operation"]["error"]["code"], "rail_record_mismatch", "{a_after}");
    server.wait_status(&b, "succeeded", 30).await;

    let problems: Vec<String> = server
        .audit_actions_where("rail.document.applied")
        .await
        .iter()
        .flat_map(|e| e["data"]["problems"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["code"].as_str().map(str::to_owned))
        .collect();
    assert!(problems.contains(&"amount_differs".to_owned()), "{problems:?}");
    assert!(problems.contains(&"unknown_end_to_end_id".to_owned()), "{problems:?}");
    assert_eq!(server.audit_actions_where("rail.document.duplicate").await.len(), 1);
    assert_eq!(server.audit_actions_where("rail.document.refused").await.len(), 1);

    // The operations page says so, in words.
    let ana = Console::sign_in(&server, "ana").await;
    let page = ana.authed(Method::GET, "/operations").send().await.unwrap().text().await.unwrap();
    let flagged: Vec<&str> = page.split("data-problems=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
    assert!(flagged.iter().any(|codes| codes.split(' ').any(|c| c == "amount_differs")), "the mismatch: {flagged:?}");
    assert!(page.contains("which this rail never sent"), "the unknown end-to-end id is listed");
    assert!(page.contains("was received before as"), "the duplicate is listed");
    assert!(page.contains("not an ISO 20022 document this rail reads"), "the garbage is listed");
}

#[tokio::test]
async fn a_tenant_on_stripe_pays_through_transfers_with_the_pinned_version() {
    let Some(python) = checkers_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let url_file = dir.path().join("stripe.url");
    let _fake = Reaped(
        std::process::Command::new(python)
            .arg(repo_root().join("e2e/rails/stripe/stripe_fake.py"))
            .arg("--url-file")
            .arg(&url_file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = loop {
        if let Ok(u) = std::fs::read_to_string(&url_file) {
            break u.trim().to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let http = reqwest::Client::new();
    let r = http.post(format!("{url}/_sim/accounts")).json(&json!({"id": ACME_TRUSTED_PAYEE})).send().await.unwrap();
    assert!(r.status().is_success());
    let config = format!(
        "[rail]\nreconcile_interval_secs = 1\n\n[rails.stripe]\nkind = \"stripe\"\nurl = {url:?}\napi_key = \"sk_test_countersign\"\n\n[tenants.acme]\nrail = \"stripe\"\n"
    );
    let server = TestServer::start_with(&config).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "succeeded", "a Stripe transfer is settled when made: {}", r.text);
    let reference = r.body["operation"]["rail_reference"].as_str().unwrap();
    assert!(reference.starts_with("tr_"), "{reference}");

    let requests: Value = http.get(format!("{url}/_sim/requests")).send().await.unwrap().json().await.unwrap();
    let create = requests["data"].as_array().unwrap().iter().find(|q| q["method"] == "POST").expect("the creation");
    assert_eq!(create["path"], "/v1/transfers");
    assert_eq!(create["headers"]["Stripe-Version"], countersign::config::rails::STRIPE_API_VERSION);
    assert_eq!(create["params"]["transfer_group"], create["headers"]["Idempotency-Key"]);
    assert_eq!(create["status"], 200, "Stripe's description accepts what was sent: {create}");
}

/// A child process killed and reaped when dropped.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A configuration naming a rail that does not exist, or a second tenant
/// on a bank-file rail, stops the server at start with the key named.
#[tokio::test]
async fn rail_settings_are_checked_at_start() {
    use countersign::config::{Overrides, Settings};
    let dir = tempfile::tempdir().unwrap();
    let load = |text: &str| {
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        Settings::load(Some(&path), &Overrides::default()).map(|_| ()).map_err(|e| e.to_string())
    };
    let err = load("[tenants.acme]\nrail = \"nowhere\"\n").unwrap_err();
    assert!(err.contains("tenants.acme.rail"), "{err}");
    let bank = "[rails.bank]\nkind = \"iso20022\"\noutbox = \"/o\"\ninbox = \"/i\"\ndebtor_name = \"Acme\"\ndebtor_iban = \"DE89370400440532013000\"\nbeneficiaries = \"/b\"\n";
    let err = load(&format!("{bank}[tenants.acme]\nrail = \"bank\"\n[tenants.globex]\nrail = \"bank\"\n")).unwrap_err();
    assert!(err.contains("rails.bank") && err.contains("one tenant"), "{err}");
    let err = load(&bank.replace("DE89370400440532013000", "DE89370400440532013001")).unwrap_err();
    assert!(err.contains("rails.bank.debtor_iban") && !err.contains("DE8937"), "{err}");
    let err = load("[rails.live]\nkind = \"stripe\"\n").unwrap_err();
    assert!(err.contains("rails.live.api_key"), "{err}");
    let err =
        load("[rails.live]\nkind = \"stripe\"\napi_key = \"sk\"\nurl = \"http://api.example.com\"\n").unwrap_err();
    assert!(err.contains("rails.live.url"), "{err}");
    assert!(load(&format!("{bank}[tenants.acme]\nrail = \"bank\"\n")).is_ok());
}
