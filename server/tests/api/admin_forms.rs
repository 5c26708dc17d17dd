//! The admin page's forms change the registry in the admin's own tenant, and
//! the audit trail names the admin (not the CLI) as the actor.

use crate::console_client::*;
use crate::helpers::*;

#[tokio::test]
async fn registry_changes_from_the_admin_page_name_the_admins_in_the_audit_trail() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let gia = add_admin(&server, "globex", "gia").await;

    let r = gus.form("/admin/payees", &[("id", "acct_globexnew0001"), ("legal_name", "New Payee GmbH")]).await;
    assert!(r.status == 303 || r.status == 302, "{} {}", r.status, r.text);
    let r = gus.form("/admin/users", &[("username", "gina"), ("password", PASSWORD), ("role_viewer", "on")]).await;
    assert!(r.status == 303 || r.status == 302, "{} {}", r.status, r.text);
    let change = pending_change_ids(&server).await.pop().expect("the new user waits for a second admin");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;

    let db = server.db().await;
    let actor_of = |action: &'static str| {
        let db = db.clone();
        async move {
            one::<String>("SELECT actor FROM audit_log WHERE action = ? ORDER BY seq DESC")
                .bind(action)
                .fetch_one(&db)
                .await
                .unwrap_or_else(|e| panic!("{action} audited: {e}"))
        }
    };
    assert_eq!(actor_of("registry.payee.created").await, format!("user:{}", gus.user_id()));
    assert_eq!(actor_of("registry.change.proposed").await, format!("user:{}", gus.user_id()));
    assert_eq!(actor_of("registry.user.created").await, format!("user:{}", gia.user_id()));
    // The CLI still records itself.
    let (code, _, stderr) = server
        .cli(&["payee", "add", "--tenant", "globex", "--id", "acct_globexnew0002", "--legal-name", "Other"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(actor_of("registry.payee.created").await, "cli");
}

#[tokio::test]
async fn a_change_that_strands_a_waiting_payment_waits_for_a_second_admin() {
    let server = TestServer::start().await;
    let (ada, abe) = (add_admin(&server, "acme", "ada").await, add_admin(&server, "acme", "abe").await);
    // 6,000.00 USD: one approval, and only ben's limit covers it.
    let id = pending_for(&server, 600_000).await;
    let before = usd_limit(&server, "ben").await;
    assert!(before.is_some_and(|l| l >= 600_000), "{before:?}");

    // Saving ben with his limits left blank: a reduction, which would apply
    // at once, but it strands the payment: it waits for another admin.
    let r = ada.form("/admin/users", &[("username", "ben"), ("role_approver", "on")]).await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    assert!(ada.admin_flash().await.contains("Another admin must confirm"), "{}", ada.admin_flash().await);
    assert_eq!(usd_limit(&server, "ben").await, before, "nothing applied yet");
    let summary: String = one("SELECT summary FROM registry_changes WHERE status = 'pending'")
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert!(summary.contains("Leaves 1 waiting payment without the approvers it needs"), "{summary}");
    assert!(summary.contains(&format!("6,000.00 USD to Northwind Traders GmbH ({id})")), "{summary}");
    let ben = Console::sign_in(&server, "ben").await;
    assert_eq!(ben.approve(&pending_for(&server, 610_000).await).await.status, 200, "ben still approves");

    // A reduction that strands nothing applies at once (ben can still approve).
    let r = ada.form("/admin/users", &[("username", "ana"), ("role_approver", "on"), ("limit_USD", "1,000.00")]).await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    assert!(ada.admin_flash().await.contains("saved"), "{}", ada.admin_flash().await);
    assert_eq!(usd_limit(&server, "ana").await, Some(100_000));

    // The second admin sees what it strands and confirms: applied.
    let change = pending_change_ids(&server).await.pop().expect("pending");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(abe.admin_flash().await.contains("confirmed"), "{}", abe.admin_flash().await);
    assert_eq!(usd_limit(&server, "ben").await, None);
    let refused = ben.approve(&id).await;
    refused.assert_error(403, "policy_denied");
    assert_still_pending(&server, &id).await;
}
