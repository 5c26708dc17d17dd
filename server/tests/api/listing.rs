//! `GET /api/v1/proposals?status=&limit=&cursor=` (SPEC §9): the agent's
//! own proposals, newest first, cursor-paginated.

use serde_json::{json, Value};
use std::collections::BTreeSet;

use crate::helpers::*;

fn ids(page: &Value) -> Vec<String> {
    page["data"].as_array().expect("data").iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect()
}

/// Creates `n` distinct proposals (told apart by `tag`) as the acme bot; returns their ids in creation order.
async fn create_n(server: &TestServer, tag: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let body =
            with(transfer(), json!({"reference": format!("Invoice {tag}{i}"), "invoice_id": format!("{tag}{i}")}));
        let p = server.create(&body).await;
        out.push(p["id"].as_str().unwrap().to_owned());
    }
    out
}

#[track_caller]
fn assert_newest_first(items: &[Value]) {
    for pair in items.windows(2) {
        let (a, b) = (rfc3339(&pair[0]["created_at"]), rfc3339(&pair[1]["created_at"]));
        assert!(a >= b, "newest first: {} before {}", pair[0]["created_at"], pair[1]["created_at"]);
    }
}

#[tokio::test]
async fn listing_shows_only_the_agents_own_proposals_newest_first() {
    let server = TestServer::start().await;
    let mine = create_n(&server, "a", 3).await;
    let r = server.propose_as(ACME_OTHER_KEY, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);

    let page = server.list(ACME_BOT_KEY, "").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(page.body["next_cursor"], json!(null));
    let items = page.body["data"].as_array().unwrap();
    assert_newest_first(items);
    let mut expected = mine.clone();
    expected.reverse();
    assert_eq!(ids(&page.body), expected, "newest first");
    for item in items {
        assert_eq!(item["canonical_request"]["agent_id"], "payout-bot");
        let one = server.get_proposal(ACME_BOT_KEY, item["id"].as_str().unwrap()).await;
        assert_eq!(&one.body, item, "listing items are the proposal objects");
    }

    assert_eq!(server.all_ids(ACME_OTHER_KEY).await.len(), 1);
    assert_eq!(server.all_ids(GLOBEX_BOT_KEY).await.len(), 1);
}

#[tokio::test]
async fn cursor_pagination_walks_every_proposal_once() {
    let server = TestServer::start().await;
    let created = create_n(&server, "a", 7).await;

    let mut seen: Vec<String> = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    let mut pages = 0;
    let mut query = "limit=3".to_owned();
    loop {
        let page = server.list(ACME_BOT_KEY, &query).await;
        assert_eq!(page.status, 200, "{}", page.text);
        pages += 1;
        let data = page.body["data"].as_array().unwrap();
        assert!(data.len() <= 3, "the limit holds");
        seen.extend(ids(&page.body));
        items.extend(data.iter().cloned());
        match page.body["next_cursor"].as_str() {
            Some(cursor) => {
                assert_eq!(data.len(), 3, "only the last page is short");
                query = format!("limit=3&cursor={cursor}");
            }
            None => break,
        }
        assert!(pages < 10, "pagination terminates");
    }
    assert_eq!(pages, 3, "7 proposals in pages of 3");
    let unique: BTreeSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates: {seen:?}");
    assert_eq!(unique, created.iter().collect::<BTreeSet<_>>(), "no gaps");
    assert_newest_first(&items);

    // A new proposal arriving mid-walk does not disturb the pages after the cursor.
    let first = server.list(ACME_BOT_KEY, "limit=3").await;
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    create_n(&server, "late", 1).await;
    let second = server.list(ACME_BOT_KEY, &format!("limit=3&cursor={cursor}")).await;
    assert_eq!(ids(&second.body), seen[3..6].to_vec());
}

#[tokio::test]
async fn status_filter_lists_only_that_status() {
    let server = TestServer::start().await;
    let pending = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let approved =
        server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 500}))).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
    let cancelled =
        server.create(&with(transfer(), json!({"reference": "to cancel"}))).await["id"].as_str().unwrap().to_owned();
    assert_eq!(server.cancel(ACME_BOT_KEY, &cancelled).await.status, 200);

    for (status, expected) in [("pending_approval", &pending), ("approved", &approved), ("cancelled", &cancelled)] {
        let page = server.list(ACME_BOT_KEY, &format!("status={status}")).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert_eq!(ids(&page.body), std::slice::from_ref(expected), "status={status}");
        assert!(page.body["data"].as_array().unwrap().iter().all(|p| p["status"] == status));
    }
    let page = server.list(ACME_BOT_KEY, "status=expired").await;
    assert_eq!(page.body["data"], json!([]));
    assert_eq!(server.list(ACME_BOT_KEY, "").await.body["data"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn unknown_status_filter_is_422() {
    let server = TestServer::start().await;
    let r = server.list(ACME_BOT_KEY, "status=done").await;
    r.assert_error(422, "validation_failed");
    assert!(r.detail_fields().contains("status"), "{}", r.text);
    let r = server.list(ACME_BOT_KEY, "status=PENDING_APPROVAL").await;
    r.assert_error(422, "validation_failed");
}
