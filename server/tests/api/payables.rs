//! The invoice registry (docs/PAYABLES.md): an accounting export imported
//! all or nothing, by an admin over the console's API or by the operator's
//! CLI; a proposal naming a registered invoice checked against it at intake
//! and again at commit, where its amount is reserved against the open
//! balance in the commit's transaction and given back when the payment
//! fails.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

pub const IMPORT: &str = "/api/v1/console/invoices/import";
pub const HEADER: &str = "number,vendor,account,amount,currency,due_date,status,amount_paid,note\n";

/// `POST` of `csv` to the import, as `console` (an admin, or not).
pub async fn import_as(console: &Console, csv: &str) -> Reply {
    send(console.authed(Method::POST, IMPORT).header("content-type", "text/csv").body(csv.to_owned())).await
}

/// Imports `rows` (after [`HEADER`]) into acme as a fresh admin; panics unless 200.
pub async fn import_rows(server: &TestServer, rows: &str) -> Value {
    let admin = add_admin(server, "acme", "ada").await;
    let r = import_as(&admin, &format!("{HEADER}{rows}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// An invoice's (paid, reserved, status) as stored.
pub async fn balance(server: &TestServer, number: &str) -> (i64, i64, String) {
    let where_ = format!("FROM invoices WHERE tenant_id = 'acme' AND number = '{number}'");
    let paid = server.scalar(&format!("SELECT paid_minor {where_}")).await;
    let reserved = server.scalar(&format!("SELECT reserved_minor {where_}")).await;
    let status: String =
        one(&format!("SELECT status {where_}")).fetch_one(&server.db().await).await.expect("the invoice");
    (paid, reserved, status)
}

/// A transfer of `amount_minor` to `destination` naming `invoice`, in a fresh run.
pub fn paying(invoice: &str, amount_minor: u64, destination: &str) -> Value {
    with(
        transfer(),
        json!({"run_id": fresh_run(), "amount_minor": amount_minor, "destination": destination, "invoice_id": invoice}),
    )
}

fn rules(r: &Reply) -> Vec<String> {
    r.detail_rules()
}

#[tokio::test]
async fn an_admin_imports_an_export_and_a_file_with_a_bad_row_imports_nothing() {
    let server = TestServer::start().await;
    let admin = add_admin(&server, "acme", "ada").await;
    let good = format!(
        "{HEADER}INV-1,Northwind Traders GmbH,{ACME_PAYEE},\"1,250.00\",USD,2026-12-01,open,,Pay by wire\n\
         INV-2,NORTHWIND TRADERS GMBH,{ACME_PAYEE},500.00,USD,2026-12-15,partially_paid,100.00,\n"
    );
    let r = import_as(&admin, &good).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((r.body["created"].as_u64(), r.body["updated"].as_u64()), (Some(2), Some(0)), "{}", r.text);
    assert!(r.body["id"].as_str().unwrap().starts_with("imp_"));
    assert_eq!(balance(&server, "INV-2").await, (10_000, 0, "open".into()), "partially paid: what was paid is kept");
    // The same file again changes nothing; the audit trail has both imports, never the rows.
    let again = import_as(&admin, &good).await;
    assert_eq!(again.body["unchanged"], 2, "{}", again.text);
    let imported = server.audit_actions_where("invoice.imported").await;
    assert_eq!(imported.len(), 2);
    assert!(!imported[0].to_string().contains("Pay by wire") && !imported[0].to_string().contains("northwind0007"));
    assert_eq!(imported[0]["data"]["sha256"].as_str().unwrap().len(), 64);

    // One good new row and two bad ones: every problem named, nothing imported.
    let bad = format!(
        "{HEADER}INV-3,Northwind Traders GmbH,{ACME_PAYEE},10.00,USD,2026-12-01,open,,\n\
         INV-4,Northwind Traders GmbH,{ACME_PAYEE},ten,USD,2026-12-01,open,,\n\
         INV-5,Someone Else Ltd,{ACME_PAYEE},10.00,USD,2026-12-01,open,,\n\
         INV-1,Northwind Traders GmbH,{ACME_PAYEE},900.00,USD,2026-12-01,open,,\n"
    );
    let r = import_as(&admin, &bad).await;
    r.assert_error(422, "validation_failed");
    let details: Vec<(u64, String)> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["line"].as_u64().unwrap(), d["column"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(details, [(3, "amount".to_owned()), (4, "vendor".to_owned())], "{}", r.text);
    assert!(r.text.contains("Nothing was imported"), "{}", r.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM invoices").await, 2, "INV-3 was not imported");
    assert_eq!(server.scalar("SELECT amount_minor FROM invoices WHERE number = 'INV-1'").await, 125_000);

    // A row that would owe less than is already paid is refused at the database read.
    let shrink = format!("{HEADER}INV-2,Northwind Traders GmbH,{ACME_PAYEE},50.00,USD,2026-12-15,open,,\n");
    let r = import_as(&admin, &shrink).await;
    r.assert_error(422, "validation_failed");
    assert!(r.text.contains("more than the new amount"), "{}", r.text);

    // An account of another tenant is no payee of this one.
    let gus = Console::sign_in(&server, "gus").await;
    let foreign = format!("{HEADER}G-1,Northwind Traders GmbH,{ACME_PAYEE},10.00,USD,2026-12-01,open,,\n");
    let r = import_as(&gus, &foreign).await;
    r.assert_error(422, "validation_failed");
    assert!(r.text.contains("not a payee of this tenant") && !r.text.contains("northwind0007"), "{}", r.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM invoices WHERE tenant_id = 'globex'").await, 0);
}

#[tokio::test]
async fn only_an_admin_with_the_csrf_token_and_a_csv_body_imports() {
    let server = TestServer::start().await;
    let admin = add_admin(&server, "acme", "ada").await;
    let file = format!("{HEADER}INV-1,Northwind Traders GmbH,{ACME_PAYEE},10.00,USD,2026-12-01,open,,\n");
    let ana = Console::sign_in(&server, "ana").await;
    import_as(&ana, &file).await.assert_error(403, "forbidden");
    let no_csrf = admin.with_origin(Method::POST, IMPORT).header("content-type", "text/csv").body(file.clone());
    send(no_csrf).await.assert_error(403, "forbidden");
    let anonymous = http_client()
        .post(server.url(IMPORT))
        .header("origin", &server.base)
        .header("content-type", "text/csv")
        .body(file.clone());
    assert_eq!(send(anonymous).await.status, 401);
    let json_body = admin.authed(Method::POST, IMPORT).json(&json!({"csv": file}));
    send(json_body).await.assert_error(415, "unsupported_media_type");
    let agent = server.post_json(IMPORT, ACME_BOT_KEY, &json!({}));
    assert_eq!(send(agent).await.status, 401, "an agent key is no console session");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM invoices").await, 0);
    assert_eq!(import_as(&admin, &file).await.status, 200);
}

#[tokio::test]
async fn the_cli_imports_a_file_and_names_each_bad_row() {
    let server = TestServer::start_process().await;
    let dir = TestDir::new();
    let good = dir.path().join("good.csv");
    std::fs::write(&good, format!("{HEADER}INV-9,Northwind Traders GmbH,{ACME_PAYEE},99.00,USD,2026-12-01,open,,\n"))
        .unwrap();
    let (code, out, err) = server.cli(&["invoices", "import", "--tenant", "acme", good.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 new, 0 updated, 0 unchanged"), "{out}");
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        format!(
            "{HEADER}INV-10,Northwind Traders GmbH,{ACME_PAYEE},1.00,USD,2026-12-01,open,,\n\
             INV-11,Northwind Traders GmbH,{ACME_PAYEE},1.00,USD,2026-02-30,open,,\n"
        ),
    )
    .unwrap();
    let (code, out, err) = server.cli(&["invoices", "import", "--tenant", "acme", bad.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("line 3, due_date: must be a date as YYYY-MM-DD"), "{err}");
    assert!(err.contains("nothing was imported"), "{err}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM invoices").await, 1);
    let (code, _, err) = server.cli(&["invoices", "import", "--tenant", "nope", good.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no such tenant"), "{err}");
}

#[tokio::test]
async fn a_proposal_naming_a_registered_invoice_must_match_it_at_intake() {
    let server = TestServer::start().await;
    import_rows(
        &server,
        &format!(
            "INV-A,Northwind Traders GmbH,{ACME_PAYEE},500.00,USD,2026-12-01,partially_paid,100.00,\n\
             INV-PAID,Northwind Traders GmbH,{ACME_PAYEE},80.00,USD,2026-12-01,paid,,\n\
             INV-VOID,Northwind Traders GmbH,{ACME_PAYEE},80.00,USD,2026-12-01,void,,\n\
             INV-EUR,Northwind Traders GmbH,{ACME_PAYEE},80.00,EUR,2026-12-01,open,,\n\
             INV-ACME,Acme Supplies Ltd,{ACME_TRUSTED_PAYEE},80.00,USD,2026-12-01,open,,\n"
        ),
    )
    .await;
    let over = server.propose_as(ACME_BOT_KEY, &paying("INV-A", 40_001, ACME_PAYEE)).await;
    over.assert_error(403, "policy_denied");
    assert_eq!(rules(&over), ["invoice_mismatch"]);
    assert!(over.text.contains("400.01 USD is more than the open balance of 400.00 USD"), "{}", over.text);
    let fits = server.propose_as(ACME_BOT_KEY, &paying("INV-A", 40_000, ACME_PAYEE)).await;
    assert_eq!(fits.status, 201, "{}", fits.text);
    for (invoice, words) in [
        ("INV-PAID", "Already paid in full"),
        ("INV-VOID", "Void"),
        ("INV-EUR", "The invoice is in EUR; the payment is in USD"),
        ("INV-ACME", "registered as owed to Acme Supplies Ltd (acct_…0001"),
    ] {
        let r = server.propose_as(ACME_BOT_KEY, &paying(invoice, 5_000, ACME_PAYEE)).await;
        r.assert_error(403, "policy_denied");
        assert_eq!(rules(&r), ["invoice_mismatch"], "{invoice}");
        assert!(r.text.contains(words), "{invoice}: {}", r.text);
        assert!(!r.text.contains("acme0000000001"), "accounts masked: {}", r.text);
    }
    // Another tenant's registry is not this one's: globex's agent naming
    // acme's invoice finds nothing registered (and is allowed by default).
    let globex =
        with(globex_transfer(), json!({"invoice_id": "INV-A", "run_id": fresh_run(), "amount_minor": 9_999_900u64}));
    let r = server.propose_as(GLOBEX_BOT_KEY, &globex).await;
    assert_eq!(r.status, 201, "{}", r.text);
    // An invoice the registry does not hold goes on by default.
    let r = server.propose_as(ACME_BOT_KEY, &paying("INV-NOT-HERE", 5_000, ACME_PAYEE)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Refused audits say why, with the rule.
    let denied = server.audit_actions_where("proposal.denied").await;
    assert!(denied.iter().any(|e| e.to_string().contains("invoice_mismatch")), "{denied:?}");
}

#[tokio::test]
async fn a_tenant_that_pays_registered_invoices_only_refuses_an_unknown_one() {
    let server = TestServer::start_with("[payables]\nunregistered_invoices = \"refuse\"\n").await;
    import_rows(&server, &format!("INV-K,Northwind Traders GmbH,{ACME_PAYEE},500.00,USD,2026-12-01,open,,\n")).await;
    let r = server.propose_as(ACME_BOT_KEY, &paying("INV-UNKNOWN", 5_000, ACME_PAYEE)).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(rules(&r), ["invoice_unregistered"]);
    assert_eq!(server.propose_as(ACME_BOT_KEY, &paying("INV-K", 5_000, ACME_PAYEE)).await.status, 201);
    let mut no_invoice = paying("x", 5_000, ACME_PAYEE);
    no_invoice.as_object_mut().unwrap().remove("invoice_id");
    assert_eq!(server.propose_as(ACME_BOT_KEY, &no_invoice).await.status, 201, "a payment naming no invoice goes on");
}

/// Approves `id` as ben and returns its approval token.
async fn approved_token(server: &TestServer, ben: &Console, id: &str) -> String {
    let r = ben.approve(id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.get_proposal(ACME_BOT_KEY, id).await.body["approval_token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_commit_reserves_the_open_balance_pays_it_and_gives_it_back_when_the_payment_fails() {
    let (server, rail) = with_rail("").await;
    import_rows(
        &server,
        &format!(
            "INV-P,Northwind Traders GmbH,{ACME_PAYEE},1000.00,USD,2026-12-01,open,,\n\
             INV-F,Northwind Traders GmbH,{ACME_PAYEE},300.00,USD,2026-12-01,open,,\n\
             INV-C,Northwind Traders GmbH,{ACME_PAYEE},300.00,USD,2026-12-01,open,,\n"
        ),
    )
    .await;
    let ben = Console::sign_in(&server, "ben").await;
    // A partial payment: paid, the rest stays open.
    let id = server.create(&paying("INV-P", 60_000, ACME_PAYEE)).await["id"].as_str().unwrap().to_owned();
    let token = approved_token(&server, &ben, &id).await;
    assert_eq!(server.commit(&id, &token).await.status, 200);
    server.wait_status(&id, "succeeded", 30).await;
    assert_eq!(balance(&server, "INV-P").await, (60_000, 0, "open".into()));
    let page = server.propose_as(ACME_BOT_KEY, &paying("INV-P", 40_001, ACME_PAYEE)).await;
    page.assert_error(403, "policy_denied");
    assert!(
        page.text.contains("open balance of 400.00 USD (of 1,000.00 USD; 600.00 USD paid or being paid)"),
        "{}",
        page.text
    );

    // A payment the rail refuses gives its reservation back.
    let id = server.create(&paying("INV-F", 30_000, ACME_PAYEE)).await["id"].as_str().unwrap().to_owned();
    let token = approved_token(&server, &ben, &id).await;
    rail.close_destination(ACME_PAYEE).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.body["status"], "failed", "{}", r.text);
    rail.reopen_destination(ACME_PAYEE).await;
    assert_eq!(balance(&server, "INV-F").await, (0, 0, "open".into()), "the reservation was given back");

    // The invoice changed after approval (the accounting system voided it):
    // the commit is refused before the rail, and audited.
    let id = server.create(&paying("INV-C", 30_000, ACME_PAYEE)).await["id"].as_str().unwrap().to_owned();
    let token = approved_token(&server, &ben, &id).await;
    let admin = Console::sign_in(&server, "ada").await;
    let void = format!("{HEADER}INV-C,Northwind Traders GmbH,{ACME_PAYEE},300.00,USD,2026-12-01,void,,\n");
    assert_eq!(import_as(&admin, &void).await.status, 200);
    let before = rail.transfers().await.len();
    let r = server.commit(&id, &token).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(rules(&r), ["invoice_mismatch"], "{}", r.text);
    assert!(r.text.contains("Void"), "{}", r.text);
    assert_eq!(rail.transfers().await.len(), before, "the rail was not called");
    let refused = server.audit_actions_where("operation.refused").await;
    assert!(refused.iter().any(|e| e["data"]["rule"] == "invoice_mismatch"), "{refused:?}");
}

/// Rail transfers made for the given proposals.
async fn transfers_for(rail: &RailSim, ids: &[&str]) -> usize {
    rail.transfers().await.iter().filter(|t| ids.iter().any(|id| t["metadata"]["proposal_id"] == *id)).count()
}

/// The open-balance race, `rounds` times: invoice `INV-OB-<round>` of
/// 500.00 USD; payment A (300.00) is proposed on `a` and approved by ana;
/// payment B (300.00) is proposed on `b` and approved by ben and cleo, who
/// each state it is not a duplicate (so B holds no claim on the invoice:
/// only the open balance stands between the two). Both are committed at
/// the same moment, A on `a` and B on `b`. Exactly one is paid every round;
/// the other is refused before the rail with `invoice_mismatch`; the
/// invoice never holds more than its amount.
pub async fn race_partial_payments(
    a: std::sync::Arc<TestServer>,
    b: std::sync::Arc<TestServer>,
    rail: &RailSim,
    rounds: u32,
) {
    let rows: String = (0..rounds)
        .map(|r| format!("INV-OB-{r},Northwind Traders GmbH,{ACME_PAYEE},500.00,USD,2026-12-01,open,,\n"))
        .collect();
    import_rows(&a, &rows).await;
    add_acme_approver(&a, "cleo", 5_000_000).await;
    let ana = Console::sign_in(&a, "ana").await;
    let (ben, cleo) = (Console::sign_in(&b, "ben").await, Console::sign_in(&b, "cleo").await);
    let statement = json!({"decision": "approve", "not_duplicate_reason": "Second part of a split delivery"});
    let mut refused = 0;
    for round in 0..rounds {
        let invoice = format!("INV-OB-{round}");
        let (body_a, body_b) = (paying(&invoice, 30_000, ACME_PAYEE), paying(&invoice, 30_000, ACME_PAYEE));
        let (pa, pb) = tokio::join!(a.propose_as(ACME_BOT_KEY, &body_a), b.propose_as(ACME_BOT_KEY, &body_b));
        assert_eq!((pa.status, pb.status), (201, 201), "{} {}", pa.text, pb.text);
        let (ida, idb) = (pa.body["id"].as_str().unwrap().to_owned(), pb.body["id"].as_str().unwrap().to_owned());
        assert_eq!(ana.approve(&ida).await.status, 200);
        let r = ben.decide(&idb, &statement).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = cleo.decide(&idb, &statement).await;
        assert_eq!(r.body["status"], "approved", "{}", r.text);
        let token = |id: String| {
            let a = a.clone();
            async move { a.get_proposal(ACME_BOT_KEY, &id).await.body["approval_token"].as_str().unwrap().to_owned() }
        };
        let (ta, tb) = (token(ida.clone()).await, token(idb.clone()).await);
        let replies = commit_all(vec![(a.clone(), ida.clone(), ta), (b.clone(), idb.clone(), tb)]).await;
        let paid = replies.iter().filter(|r| r.status == 200).count();
        assert_eq!(paid, 1, "round {round}: {:?}", replies.iter().map(|r| &r.text).collect::<Vec<_>>());
        for r in replies.iter().filter(|r| r.status != 200) {
            r.assert_error(403, "policy_denied");
            assert_eq!(r.detail_rules(), ["invoice_mismatch"], "{}", r.text);
            refused += 1;
        }
        assert_eq!(transfers_for(rail, &[&ida, &idb]).await, 1, "round {round}: one transfer");
        let (paid_minor, reserved, _) = balance(&a, &invoice).await;
        assert_eq!(paid_minor + reserved, 30_000, "round {round}: the invoice holds one payment");
    }
    assert_eq!(refused, rounds as usize);
    let audited = a.audit_actions_where("operation.refused").await;
    assert_eq!(audited.iter().filter(|e| e["data"]["rule"] == "invoice_mismatch").count(), rounds as usize);
}

#[tokio::test]
async fn two_partial_payments_committed_at_the_same_moment_never_exceed_the_open_balance() {
    let (server, rail) = with_rail("").await;
    let server = std::sync::Arc::new(server);
    race_partial_payments(server.clone(), server, &rail, 12).await;
}
