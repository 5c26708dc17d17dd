//! The reviewer's flow through the console: after a decision the form goes
//! on to the next proposal waiting for this reviewer (or the queue, "queue
//! clear"), with a notice naming what was done to which payment; a deep
//! link opened signed out comes back after sign-in (`next`, same-origin
//! paths only: every refused form has its own test); a failed sign-in keeps
//! the username; page titles carry the count of proposals waiting; the
//! favicon.

use reqwest::Method;

use crate::console_client::*;
use crate::helpers::*;

/// A form post to `/proposals/{id}/decision`; returns its `Location`.
async fn decide_form(console: &Console, id: &str, fields: &[(&str, &str)]) -> String {
    let r = console.form(&format!("/proposals/{id}/decision"), fields).await;
    assert_eq!(r.status, 303, "the decision form redirects: {}", r.text);
    r.header("location").expect("location").to_owned()
}

/// What `done` says after `who` decided: approved outright or one approval of several.
async fn done_after_approval(server: &TestServer, id: &str) -> &'static str {
    if status_of(server, id).await == "approved" {
        "approved"
    } else {
        "approval_recorded"
    }
}

/// A page's HTML as `console` sees it.
async fn page(console: &Console, path: &str) -> String {
    let r = send(console.bare(Method::GET, path)).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text);
    r.text
}

/// The `<title>` of a page.
fn title(html: &str) -> &str {
    let start = html.find("<title>").map(|i| i + "<title>".len()).unwrap_or_else(|| panic!("no <title>: {html}"));
    &html[start..start + html[start..].find("</title>").expect("</title>")]
}

#[tokio::test]
async fn after_approving_the_form_goes_to_the_oldest_other_proposal_waiting() {
    let server = TestServer::start().await;
    let (first, second, third) = (pending(&server).await, pending(&server).await, pending(&server).await);
    let ana = Console::sign_in(&server, "ana").await;

    // The middle one first: next is the oldest other one.
    let to = decide_form(&ana, &second, &[("decision", "approve")]).await;
    let done = done_after_approval(&server, &second).await;
    assert_eq!(to, format!("/proposals/{first}?done={done}&decided={second}"));

    let to = decide_form(&ana, &first, &[("decision", "approve")]).await;
    let done = done_after_approval(&server, &first).await;
    assert_eq!(to, format!("/proposals/{third}?done={done}&decided={first}"));

    // The last one: nothing left for ana, so the queue, with the notice.
    let to = decide_form(&ana, &third, &[("decision", "approve")]).await;
    let done = done_after_approval(&server, &third).await;
    assert_eq!(to, format!("/?done={done}&decided={third}"));
}

#[tokio::test]
async fn a_rejection_goes_on_too_and_a_refusal_stays_on_the_proposal() {
    let server = TestServer::start().await;
    let (first, second) = (pending(&server).await, pending(&server).await);
    let ben = Console::sign_in(&server, "ben").await;

    // No reason: refused, back to the same proposal with the error, as before.
    let to = decide_form(&ben, &first, &[("decision", "reject"), ("reason", " ")]).await;
    assert_eq!(to, format!("/proposals/{first}?error=reason_required"));
    assert_still_pending(&server, &first).await;

    let to = decide_form(&ben, &first, &[("decision", "reject"), ("reason", "Paid already")]).await;
    assert_eq!(to, format!("/proposals/{second}?done=rejected&decided={first}"));
    assert_eq!(status_of(&server, &first).await, "rejected");

    // Deciding again on a decided one is an error on that proposal.
    let to = decide_form(&ben, &first, &[("decision", "approve")]).await;
    assert_eq!(to, format!("/proposals/{first}?error=invalid_state"));
}

#[tokio::test]
async fn the_next_proposal_is_one_this_reviewer_may_approve() {
    let server = TestServer::start().await;
    // Oldest first: one above ana's 5,000.00 USD limit, one of another
    // tenant, then the one she decides, then one she may approve.
    let too_big = pending_for(&server, 600_000).await;
    let globex = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    assert_eq!(globex.status, 201, "{}", globex.text);
    let decided = pending(&server).await;
    let hers = pending(&server).await;
    let ana = Console::sign_in(&server, "ana").await;

    let to = decide_form(&ana, &decided, &[("decision", "reject"), ("reason", "Not ours")]).await;
    assert_eq!(to, format!("/proposals/{hers}?done=rejected&decided={decided}"), "skips {too_big}");

    // maya is who the agent acts for: nothing waits for her, ever.
    let maya = Console::sign_in(&server, "maya").await;
    let to = decide_form(&maya, &hers, &[("decision", "reject"), ("reason", "Not mine to judge")]).await;
    assert_eq!(to, format!("/?done=rejected&decided={hers}"), "maya may approve neither {too_big} nor others");
}

#[tokio::test]
async fn the_notice_names_the_decided_payment_and_links_back() {
    let server = TestServer::start().await;
    let (decided, next) = (pending_for(&server, 12_345).await, pending(&server).await);
    let ben = Console::sign_in(&server, "ben").await;
    let to = decide_form(&ben, &decided, &[("decision", "reject"), ("reason", "Duplicate")]).await;
    assert_eq!(to, format!("/proposals/{next}?done=rejected&decided={decided}"));

    let html = page(&ben, &to).await;
    assert!(html.contains("id=\"decided-notice\""), "{html}");
    assert!(html.contains("You rejected this payment:"), "{html}");
    assert!(html.contains(&format!("href=\"/proposals/{decided}\"")), "a link back: {html}");
    assert!(html.contains("123.45 USD"), "the decided payment in words: {html}");
    assert!(html.contains("Next: the oldest proposal still waiting for you."), "{html}");

    // The queue when nothing is left.
    let html = page(&ben, &format!("/?done=approved&decided={decided}")).await;
    assert!(html.contains("Queue clear"), "{html}");
    assert!(html.contains(&format!("href=\"/proposals/{decided}\"")), "{html}");
}

#[tokio::test]
async fn the_notice_reflects_nothing_from_the_address() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let ben = Console::sign_in(&server, "ben").await;
    for query in [
        "done=%3Cscript%3Ealert(1)%3C%2Fscript%3E&decided=prop_x",
        "done=approved&decided=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "done=approved&decided=javascript%3Aalert(1)",
        "done=approved&decided=prop_%2F..%2F..%2Fadmin",
    ] {
        let html = page(&ben, &format!("/proposals/{id}?{query}")).await;
        assert!(!html.contains("decided-notice"), "{query}: no notice for what is not ours: {html}");
        assert!(!html.contains("<script>alert") && !html.contains("javascript:"), "{query}: {html}");
    }
}

// --- After sign-in, the deep link -------------------------------------------

#[tokio::test]
async fn a_signed_out_deep_link_goes_to_sign_in_and_back() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let c = http_client();
    for (path, login) in [
        (format!("/proposals/{id}"), format!("/login?next=/proposals/{id}")),
        (format!("/proposals/{id}/approve"), format!("/login?next=/proposals/{id}/approve")),
        ("/operations".to_owned(), "/login?next=/operations".to_owned()),
        ("/admin".to_owned(), "/login?next=/admin".to_owned()),
    ] {
        let r = send(c.get(server.url(&path))).await;
        assert_eq!(r.status, 303, "{path}: {}", r.text);
        assert_eq!(r.header("location"), Some(login.as_str()), "{path}");
    }
    // The queue's address shows a welcome instead; sign-in stays public.
    assert_eq!(send(c.get(server.url("/"))).await.status, 200);
    assert_eq!(send(c.get(server.url("/login"))).await.status, 200);

    // The sign-in page carries `next` in its form…
    let html = send(c.get(server.url(&format!("/login?next=/proposals/{id}")))).await.text;
    assert!(html.contains(&format!("name=\"next\" value=\"/proposals/{id}\"")), "{html}");
    // …and signing in lands there.
    let next = format!("/proposals/{id}");
    let r = sign_in_form(&server, &[("username", "ana"), ("password", PASSWORD), ("next", &next)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location"), Some(next.as_str()));
    assert!(session_set_cookie(&r.headers).is_some_and(|c| !c.is_removal()), "signed in: {:?}", r.headers);
    // Without `next`, the queue.
    let r = sign_in_form(&server, &[("username", "ana"), ("password", PASSWORD)]).await;
    assert_eq!(r.header("location"), Some("/"));
    // A query string survives the trip.
    let next = "/?status=rejected&order=oldest";
    let r = send(c.get(server.url(next))).await;
    assert_eq!(r.status, 200, "the queue shows a welcome when signed out");
    let r = sign_in_form(&server, &[("username", "ana"), ("password", PASSWORD), ("next", next)]).await;
    assert_eq!(r.header("location"), Some(next));
}

/// `POST /login` as the page's form sends it (same-origin browser).
async fn sign_in_form(server: &TestServer, fields: &[(&str, &str)]) -> Reply {
    send(
        http_client()
            .post(server.url("/login"))
            .header("origin", &server.base)
            .header("sec-fetch-site", "same-origin")
            .form(fields),
    )
    .await
}

/// Signs in with `next`: the password is right, so only `next` is judged;
/// it must be ignored (the queue, `/`), and the sign-in page must not carry it.
async fn refuses_next(next: &str) {
    let server = TestServer::start().await;
    let r = sign_in_form(&server, &[("username", "ana"), ("password", PASSWORD), ("next", next)]).await;
    assert_eq!(r.status, 303, "{next:?}: {}", r.text);
    assert_eq!(r.header("location"), Some("/"), "{next:?} is not followed");
    assert!(session_set_cookie(&r.headers).is_some_and(|c| !c.is_removal()), "still signed in: {:?}", r.headers);

    // Nor kept after a failed attempt…
    let r = sign_in_form(&server, &[("username", "ana"), ("password", "wrong"), ("next", next)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.header("location").expect("location");
    assert_eq!(to, "/login?error=invalid&username=ana", "{next:?}");
    // …nor put in the sign-in page's form.
    let encoded = serde_urlencoded::to_string([("next", next)]).unwrap();
    let html = send(http_client().get(server.url(&format!("/login?{encoded}")))).await.text;
    assert!(!html.contains("name=\"next\""), "{next:?}: {html}");
}

#[tokio::test]
async fn next_refuses_a_protocol_relative_url() {
    refuses_next("//evil.example/proposals/x").await;
}

#[tokio::test]
async fn next_refuses_a_slash_backslash() {
    refuses_next("/\\evil.example").await;
}

#[tokio::test]
async fn next_refuses_a_backslash_anywhere() {
    refuses_next("/proposals\\..\\..\\evil.example").await;
}

#[tokio::test]
async fn next_refuses_an_absolute_url() {
    refuses_next("https://evil.example/proposals/x").await;
}

#[tokio::test]
async fn next_refuses_a_scheme_without_slashes() {
    refuses_next("javascript:alert(1)").await;
}

#[tokio::test]
async fn next_refuses_a_relative_path() {
    refuses_next("proposals/x").await;
}

#[tokio::test]
async fn next_refuses_a_tab_browsers_would_strip() {
    // `/<tab>/evil.example` becomes `//evil.example` in a browser.
    refuses_next("/\t/evil.example").await;
}

#[tokio::test]
async fn next_refuses_a_newline() {
    refuses_next("/\r\n/evil.example").await;
}

#[tokio::test]
async fn next_refuses_other_control_characters() {
    refuses_next("/proposals/\u{0}x").await;
}

#[tokio::test]
async fn next_refuses_spaces_and_non_ascii() {
    refuses_next(" /proposals/x").await;
}

#[tokio::test]
async fn next_refuses_an_overlong_path() {
    refuses_next(&format!("/{}", "a".repeat(600))).await;
}

// --- Failed sign-in: the username stays, the focus moves --------------------

#[tokio::test]
async fn a_failed_sign_in_keeps_the_username_and_focuses_the_password() {
    let server = TestServer::start().await;
    let r = sign_in_form(&server, &[("username", "ana"), ("password", "not it"), ("next", "/proposals/prop_1")]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.header("location").expect("location").to_owned();
    assert_eq!(to, "/login?error=invalid&username=ana&next=%2Fproposals%2Fprop_1");

    let html = send(http_client().get(server.url(&to))).await.text;
    assert!(html.contains("Wrong username or password."), "{html}");
    let username = input(&html, "username");
    assert!(username.contains("value=\"ana\""), "{username}");
    assert!(!username.contains("autofocus"), "{username}");
    let password = input(&html, "password");
    assert!(password.contains("autofocus"), "the password has the focus: {password}");
    assert!(!password.contains("value="), "never the password: {password}");
    assert!(!html.contains("not it"), "{html}");
    assert!(html.contains("name=\"next\" value=\"/proposals/prop_1\""), "{html}");

    // A first visit: the username has the focus, nothing filled in.
    let html = send(http_client().get(server.url("/login"))).await.text;
    assert!(input(&html, "username").contains("autofocus"), "{html}");
    assert!(!input(&html, "username").contains("value="), "{html}");
    assert!(!input(&html, "password").contains("autofocus"), "{html}");
    // Without an error nothing is filled in, whatever the address says.
    let html = send(http_client().get(server.url("/login?username=ana"))).await.text;
    assert!(!input(&html, "username").contains("value="), "{html}");
}

#[tokio::test]
async fn only_what_could_be_a_username_is_kept_and_never_unescaped() {
    let server = TestServer::start().await;
    let evil = "\"><script>alert(1)</script>";
    let long = "a".repeat(129);
    for typed in [evil, long.as_str(), "ana smith"] {
        let r = sign_in_form(&server, &[("username", typed), ("password", "wrong")]).await;
        assert_eq!(r.header("location"), Some("/login?error=invalid"), "{typed:?} is not kept");
    }
    // Crafted addresses: not a username, so not shown; never unescaped.
    for query in
        ["error=invalid&username=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E", &format!("error=invalid&username={long}")]
    {
        let html = send(http_client().get(server.url(&format!("/login?{query}")))).await.text;
        assert!(!html.contains("<script>alert"), "{query}: {html}");
        assert!(!input(&html, "username").contains("value="), "{query}: {html}");
    }
}

/// The `<input name="{name}" …>` tag of a page.
fn input<'a>(html: &'a str, name: &str) -> &'a str {
    let start = html.find(&format!("<input name=\"{name}\"")).unwrap_or_else(|| panic!("no {name} input: {html}"));
    &html[start..start + html[start..].find('>').expect("tag end")]
}

// --- Titles and the favicon -------------------------------------------------

#[tokio::test]
async fn titles_carry_how_many_proposals_wait_for_the_reader() {
    let server = TestServer::start().await;
    let (first, _second) = (pending(&server).await, pending(&server).await);
    let _too_big_for_ana = pending_for(&server, 600_000).await;

    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(title(&page(&ana, "/").await), "(2) Approval queue · Countersign");
    assert_eq!(
        title(&page(&ana, &format!("/proposals/{first}")).await),
        "(2) 250.00 USD · Northwind Traders GmbH · Countersign"
    );
    assert_eq!(title(&page(&ana, "/operations").await), "(2) Operations · Countersign");
    let ben = Console::sign_in(&server, "ben").await;
    assert_eq!(title(&page(&ben, "/").await), "(3) Approval queue · Countersign");

    // A decision takes one off.
    let to = decide_form(&ana, &first, &[("decision", "reject"), ("reason", "No")]).await;
    assert_eq!(title(&page(&ana, &to).await), "(1) 250.00 USD · Northwind Traders GmbH · Countersign");

    // No count for whoever cannot approve any: a viewer; the person the agent acts for.
    let vic = Console::sign_in(&server, "vic").await;
    assert_eq!(title(&page(&vic, "/").await), "Approval queue · Countersign");
    let maya = Console::sign_in(&server, "maya").await;
    assert_eq!(title(&page(&maya, "/").await), "Approval queue · Countersign");
    // Signed out: plain titles.
    let c = http_client();
    assert_eq!(title(&send(c.get(server.url("/login"))).await.text), "Sign in · Countersign");
    assert_eq!(title(&send(c.get(server.url("/"))).await.text), "Countersign");
}

#[tokio::test]
async fn the_favicon_is_served_and_linked() {
    let server = TestServer::start().await;
    let c = http_client();
    let r = send(c.get(server.url("/favicon.svg"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("image/svg+xml"));
    assert!(r.text.trim_start().starts_with("<svg") && r.text.contains("</svg>"), "{}", r.text);
    assert!(!r.text.contains("<script"), "a plain picture: {}", r.text);

    let r = send(c.get(server.url("/favicon.ico"))).await;
    assert!([301, 308].contains(&r.status), "{} {}", r.status, r.text);
    assert_eq!(r.header("location"), Some("/favicon.svg"));

    let html = send(c.get(server.url("/login"))).await.text;
    assert!(html.contains(r#"<link rel="icon" type="image/svg+xml" href="/favicon.svg""#), "{html}");
}

#[tokio::test]
async fn a_missing_proposal_is_a_404_page_and_a_signed_out_long_poll_a_401() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let missing = send(ana.bare(reqwest::Method::GET, "/proposals/prop_0nosuchproposal0")).await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    assert!(missing.text.contains("No such proposal."), "{}", missing.text);
    // The console's long-poll for changes, from a browser whose session
    // ended: 401 (it was a 500), so the page can send its reader to sign in.
    let signed_out = send(server.client.get(server.url("/console/changes?seen=0"))).await;
    assert_eq!(signed_out.status, 401, "{}", signed_out.text);
    pending(&server).await; // a change, so the signed-in poll answers at once
    let signed_in = send(ana.bare(reqwest::Method::GET, "/console/changes?seen=0")).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
}

#[tokio::test]
async fn a_filtered_queue_opened_signed_out_keeps_its_filters_through_sign_in() {
    let server = TestServer::start().await;
    let welcome = send(server.client.get(server.url("/?status=rejected&order=oldest"))).await;
    assert_eq!(welcome.status, 200);
    let href = "/login?next=/%3Fstatus%3Drejected%26order%3Doldest";
    assert!(welcome.text.contains(&format!("id=\"home-sign-in\" href=\"{href}\"")), "{}", welcome.text);
    let plain = send(server.client.get(server.url("/"))).await.text;
    assert!(plain.contains("id=\"home-sign-in\" href=\"/login\""), "{plain}");
    // Signing in from that link lands on the filtered queue.
    let r = sign_in_form(
        &server,
        &[("username", "ana"), ("password", PASSWORD), ("next", "/?status=rejected&order=oldest")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/?status=rejected&order=oldest"));
}

#[tokio::test]
async fn each_proposal_tab_names_its_payment_and_the_bulk_page_has_a_title() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let ana = Console::sign_in(&server, "ana").await;
    let detail = page(&ana, &format!("/proposals/{id}")).await;
    let shown = title(&detail);
    assert!(shown.contains("250.00") && shown.contains("Northwind"), "the tab says which payment: {shown}");
    assert!(!shown.starts_with("Proposal"), "{shown}");
    let bulk = page(&ana, &format!("/bulk?id={id}")).await;
    assert!(title(&bulk).contains("Decide on several payments"), "{}", title(&bulk));
}

/// What the expiry sweep does to an approved proposal whose token lapsed
/// unredeemed (`expiry::expire_approvals`): `approval_expired`, and a new
/// round of approvals.
async fn lapse(server: &TestServer, id: &str) {
    let changed = query(
        "UPDATE proposals SET status = 'approval_expired', approval_round = approval_round + 1, \
         version = version + 1 WHERE id = ? AND status = 'approved'",
    )
    .bind(id)
    .execute(&server.db().await)
    .await
    .unwrap();
    assert_eq!(changed.rows_affected(), 1, "{id} was approved");
}

#[tokio::test]
async fn a_lapsed_approval_comes_first_in_the_queue_the_count_and_next_and_one_tap_approves_it_again() {
    let server = TestServer::start().await;
    let older = pending(&server).await;
    let lapsed = pending(&server).await;
    let newer = pending(&server).await;
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&lapsed).await.status, 200);
    // The agent did not commit in time.
    lapse(&server, &lapsed).await;

    // The default queue lists it first, before older pending ones, with its
    // one-tap re-approval; a chosen status lists only that status.
    let queue = page(&ana, "/").await;
    let at = |id: &str| queue.find(&format!("data-proposal=\"{id}\"")).unwrap_or_else(|| panic!("{id} listed"));
    assert!(at(&lapsed) < at(&older) && at(&lapsed) < at(&newer), "lapsed first");
    assert!(queue.contains(&format!("form=\"again-{lapsed}\"")), "an Approve again button");
    assert!(queue.contains(&format!("id=\"again-{lapsed}\"")), "its form");
    assert!(!queue.contains(&format!("form=\"again-{older}\"")), "only lapsed ones get it");
    let pending_only = page(&ana, "/?status=pending_approval").await;
    assert!(!pending_only.contains(&format!("data-proposal=\"{lapsed}\"")));
    // The title counts it; after deciding another, it is the next one.
    assert_eq!(title(&queue), "(3) Approval queue · Countersign");
    let to = decide_form(&ana, &newer, &[("decision", "reject"), ("reason", "Not ours")]).await;
    assert!(to.starts_with(&format!("/proposals/{lapsed}?")), "{to}");

    // One tap: the row's form approves it again, in the new round.
    let to = decide_form(&ana, &lapsed, &[("decision", "approve")]).await;
    assert!(to.contains(&format!("decided={lapsed}")), "{to}");
    let view = server.get_proposal(ACME_BOT_KEY, &lapsed).await;
    assert_eq!(view.body["status"], "approved", "{}", view.text);
    assert!(view.body["approval_token"].is_string(), "a new token for the agent");
}
