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
