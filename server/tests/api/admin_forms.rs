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

/// The outside review's finding: removing an approver waited for a second
/// admin whenever a waiting payment only they could approve existed, and
/// their approvals kept counting meanwhile. A reduction of authority takes
/// effect at once, whatever is pending; what it strands is said and audited.
#[tokio::test]
async fn a_reduction_that_strands_a_waiting_payment_applies_at_once_and_says_so() {
    let server = TestServer::start().await;
    let ada = add_admin(&server, "acme", "ada").await;
    // 6,000.00 USD: one approval, and only ben's limit covers it.
    let id = pending_for(&server, 600_000).await;
    let before = usd_limit(&server, "ben").await;
    assert!(before.is_some_and(|l| l >= 600_000), "{before:?}");
    let ben = Console::sign_in(&server, "ben").await;

    // Saving ben with his limits left blank: applied now.
    let r = ada.form("/admin/users", &[("username", "ben"), ("role_approver", "on")]).await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    let flash = ada.admin_flash().await;
    assert!(flash.contains("User ben saved"), "{flash}");
    assert!(flash.contains("Leaves 1 waiting payment without the approvers it needs"), "{flash}");
    assert!(flash.contains(&format!("6,000.00 USD to Northwind Traders GmbH ({id})")), "{flash}");
    assert!(pending_change_ids(&server).await.is_empty(), "nothing waits for a second admin");
    assert_eq!(usd_limit(&server, "ben").await, None);

    // His next approval is refused at once; the payment still waits.
    let refused = ben.approve(&id).await;
    refused.assert_error(403, "policy_denied");
    assert_eq!(refused.detail_rules(), ["approver_limit"], "{}", refused.text);
    assert_still_pending(&server, &id).await;
    let entries = server.audit_actions_where("registry.change.stranding").await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["actor"], format!("user:{}", ada.user_id()));
    assert!(entries[0]["data"]["strands"][0].as_str().unwrap().contains(&id), "{}", entries[0]);

    // A reduction that strands nothing applies at once and says nothing more.
    let r = ada.form("/admin/users", &[("username", "ana"), ("role_approver", "on"), ("limit_USD", "1,000.00")]).await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    let flash = ada.admin_flash().await;
    assert!(flash.contains("saved") && !flash.contains("Leaves"), "{flash}");
    assert_eq!(usd_limit(&server, "ana").await, Some(100_000));

    // A change that grants still waits for a second admin.
    let r = ada.form("/admin/users", &[("username", "ana"), ("role_viewer", "on"), ("role_admin", "on")]).await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    assert!(ada.admin_flash().await.contains("Another admin must confirm"), "{}", ada.admin_flash().await);
}
