//! Finding and acting in bulk: the queue searched by
//! payee, currency and amount range, agent, invoice id and dates, sorted by
//! amount and expiry, through `GET /api/v1/queue` and the console page's own
//! data endpoint (same parser); bulk decisions through `POST /bulk/decision`,
//! each proposal still decided on its own.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;

async fn propose(server: &TestServer, key: &str, changes: Value) -> String {
    let run = changes["run_id"].as_str().unwrap_or("run").to_owned();
    let r = server.propose_as(key, &with(with(transfer(), json!({"invoice_id": run})), changes)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().unwrap().to_owned()
}

fn ids(page: &Reply) -> Vec<String> {
    assert_eq!(page.status, 200, "{}", page.text);
    page.body["data"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_queue_is_searched_and_sorted_the_same_way_by_the_api_and_the_page() {
    let server = TestServer::start().await;
    let small = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 12_000, "run_id": "s"})).await;
    let big = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 900_000, "run_id": "b"})).await;
    let euro = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 50_000, "currency": "EUR", "run_id": "e"})).await;
    let other = propose(&server, ACME_OTHER_KEY, json!({"amount_minor": 40_000, "run_id": "o"})).await;
    let trusted = propose(
        &server,
        ACME_BOT_KEY,
        json!({"amount_minor": 700_000, "destination": ACME_TRUSTED_PAYEE, "run_id": "t"}),
    )
    .await;
    let ben = Console::sign_in(&server, "ben").await;

    // Amount range in a currency, sorted by amount.
    let page = ben.queue("currency=usd&min=100.00&max=8000&order=amount_desc").await;
    assert_eq!(ids(&page), [trusted.as_str(), other.as_str(), small.as_str()]);
    assert_eq!(
        ids(&ben.queue("currency=USD&order=amount_asc").await),
        [small.as_str(), other.as_str(), trusted.as_str(), big.as_str()]
    );
    // Payee by part of its name (any case), or by its id.
    assert_eq!(ids(&ben.queue("payee=acme%20supp").await), [trusted.as_str()]);
    assert_eq!(ids(&ben.queue(&format!("payee={ACME_TRUSTED_PAYEE}")).await), [trusted.as_str()]);
    assert!(ids(&ben.queue("payee=%25").await).is_empty(), "a LIKE wildcard is literal text");
    // Agent, invoice id, currency alone.
    assert_eq!(ids(&ben.queue("agent=other-bot").await), [other.as_str()]);
    // The agent by part of its id, any case; a LIKE wildcard is literal.
    assert_eq!(ids(&ben.queue("agent=OTHER").await), [other.as_str()]);
    assert_eq!(ids(&ben.queue("agent=-bot").await).len(), 5);
    assert!(ids(&ben.queue("agent=%25").await).is_empty(), "a LIKE wildcard is literal text");
    assert_eq!(ids(&ben.queue("invoice_id=b").await), [big.as_str()]);
    assert_eq!(ids(&ben.queue("currency=EUR").await), [euro.as_str()]);
    // Dates (UTC days, inclusive).
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(ids(&ben.queue(&format!("from={today}&to={today}")).await).len(), 5);
    assert!(ids(&ben.queue("to=2020-01-01").await).is_empty());
    // Expiry order with paging: every page continues where the last stopped.
    let mut seen = Vec::new();
    let mut q = "order=expires_soonest&limit=2".to_owned();
    loop {
        let page = ben.queue(&q).await;
        seen.extend(ids(&page));
        match page.body["next_cursor"].as_str() {
            Some(c) => q = format!("order=expires_soonest&limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, [small.as_str(), big.as_str(), euro.as_str(), other.as_str(), trusted.as_str()], "creation order");

    // Bad searches are typed errors naming the field.
    for (query, field) in
        [("min=10", "min"), ("currency=XXX", "currency"), ("from=yesterday", "from"), ("order=random", "order")]
    {
        let r = ben.queue(query).await;
        r.assert_error(422, "validation_failed");
        assert!(r.text.contains(field), "{query}: {}", r.text);
    }

    // The page reads the same query string; a bad one is shown, not a 404.
    let page =
        send(ben.bare(Method::GET, "/console/queue?query=currency%3DUSD%26order%3Damount_desc%26limit%3D2")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let listed: Vec<&str> = page.body["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [big.as_str(), trusted.as_str()]);
    assert_eq!(page.body["search"]["currency"], "USD");
    let next = page.body["next_query"].as_str().unwrap();
    assert!(next.contains("currency=USD") && next.contains("order=amount_desc") && next.contains("cursor="), "{next}");
    let bad = send(ben.bare(Method::GET, "/console/queue?query=min%3D5%26colour%3Dred")).await;
    assert_eq!(bad.status, 200, "{}", bad.text);
    assert_eq!(bad.body["errors"], json!(["colour: is not a search field"]));
    let bad = send(ben.bare(Method::GET, "/console/queue?query=min%3D5")).await;
    assert!(bad.body["errors"][0].as_str().unwrap().starts_with("min:"), "{}", bad.text);
}

/// The bulk page's data for `ids` (and outcomes), as the page reads it.
async fn bulk_page(viewer: &Console, query: &str) -> Value {
    let encoded: String = url_escape(query);
    let r = send(viewer.bare(Method::GET, &format!("/console/bulk?query={encoded}"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn a_bulk_approval_lists_every_payment_and_decides_each_on_its_own() {
    let server = TestServer::start().await;
    let ok = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 100_000, "run_id": "ok"})).await;
    let ok_too = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 200_000, "run_id": "ok2"})).await;
    // Above ana's 5,000.00 USD limit.
    let over = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 900_000, "run_id": "over"})).await;
    let theirs = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await.body["id"].as_str().unwrap().to_owned();
    let ana = Console::sign_in(&server, "ana").await;

    let listed = format!("id={ok}&id={ok_too}&id={over}&id={theirs}");
    let page = bulk_page(&ana, &listed).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 3, "another tenant's proposal is not listed: {page}");
    assert_eq!(page["unknown"], 1);
    assert_eq!(page["approvable_totals"], json!(["3,000.00 USD"]), "the total of what ana may approve");
    let over_item = page["items"].as_array().unwrap().iter().find(|i| i["id"] == over.as_str()).unwrap();
    assert_eq!(over_item["can_approve"], false);
    assert!(over_item["approve_blocker"].as_str().unwrap().contains("above your approval limit"));

    // Approve all four at once: each is decided on its own.
    let fields: Vec<(&str, &str)> =
        vec![("decision", "approve"), ("id", &ok), ("id", &ok_too), ("id", &over), ("id", &theirs), ("id", &ok)];
    let r = ana.form("/bulk/decision", &fields).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let location = r.header("location").unwrap().to_owned();
    assert!(location.starts_with("/bulk?"), "{location}");
    for (id, code) in [(&ok, "approved"), (&ok_too, "approved"), (&over, "approver_limit"), (&theirs, "not_found")] {
        assert!(location.contains(&format!("outcome={id}%3A{code}")), "{id} {code}: {location}");
    }
    assert_eq!(status_of(&server, &ok).await, "approved");
    assert_eq!(status_of(&server, &ok_too).await, "approved");
    assert_eq!(status_of(&server, &over).await, "pending_approval");
    let approvals = server.scalar(&format!("SELECT COUNT(*) FROM approvals WHERE proposal_id = '{ok}'")).await;
    assert_eq!(approvals, 1, "listed twice, decided once");
    let results = bulk_page(&ana, location.trim_start_matches("/bulk?")).await;
    assert_eq!(results["done"], true);
    let outcome =
        |id: &str| results["items"].as_array().unwrap().iter().find(|i| i["id"] == id).unwrap()["outcome"].clone();
    assert_eq!((outcome(&ok), outcome(&over)), (json!("approved"), json!("approver_limit")));
}

#[tokio::test]
async fn a_bulk_rejection_needs_a_reason_and_a_csrf_token() {
    let server = TestServer::start().await;
    let a = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 10_000, "run_id": "a"})).await;
    let b = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 20_000, "run_id": "b"})).await;
    let ben = Console::sign_in(&server, "ben").await;
    let r = ben.form("/bulk/decision", &[("decision", "reject"), ("id", &a), ("id", &b), ("reason", "  ")]).await;
    assert_eq!(r.status, 303);
    assert!(r.header("location").unwrap().contains("error=reason_required"), "{:?}", r.header("location"));
    assert_eq!(status_of(&server, &a).await, "pending_approval");

    // Without the session's CSRF token nothing is decided.
    let forged = send(ben.with_origin(Method::POST, "/bulk/decision").form(&[
        ("decision", "reject"),
        ("id", a.as_str()),
        ("reason", "forged"),
    ]))
    .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert_eq!(status_of(&server, &a).await, "pending_approval");

    let r = ben
        .form("/bulk/decision", &[("decision", "reject"), ("id", &a), ("id", &b), ("reason", "duplicate batch")])
        .await;
    assert!(r.header("location").unwrap().contains(&format!("outcome={a}%3Arejected")));
    assert_eq!(status_of(&server, &a).await, "rejected");
    assert_eq!(status_of(&server, &b).await, "rejected");
    // A viewer decides nothing in bulk either.
    let vic = Console::sign_in(&server, "vic").await;
    let c = propose(&server, ACME_BOT_KEY, json!({"amount_minor": 30_000, "run_id": "c"})).await;
    let r = vic.form("/bulk/decision", &[("decision", "approve"), ("id", &c)]).await;
    assert!(r.header("location").unwrap().contains(&format!("outcome={c}%3Aforbidden")));
    assert_eq!(status_of(&server, &c).await, "pending_approval");
}
