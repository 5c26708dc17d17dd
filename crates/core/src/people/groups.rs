//! What the identity provider's groups grant (docs/PEOPLE.md): each
//! group's `displayName` is looked up in the tenant's `idp_groups` setting,
//! which names the roles and the approval groups its members get. Never an
//! approval limit: limits stay a four-eyes change inside Countersign.
//!
//! The grants are stored on the user (`users.idp_roles`,
//! `idp_approval_groups`) whenever a membership or a group's name changes,
//! and recomputed for everyone at start (the setting may have changed), so
//! every reader of a user — sessions, eligibility, commit's recheck, Slack —
//! sees them without knowing where they come from.

use serde_json::json;

use crate::config::Settings;
use crate::domain::Role;
use crate::store::{self, audit::AuditEntry, Conn};

/// The roles and approval groups membership of `names` grants in `tenant`.
pub fn grants(settings: &Settings, tenant: &str, names: &[String]) -> (Vec<Role>, Vec<String>) {
    let (mut roles, mut groups) = (Vec::new(), Vec::new());
    let Some(mapping) = settings.tenants.get(tenant).map(|t| &t.idp_groups) else { return (roles, groups) };
    for name in names {
        let Some(grant) = mapping.get(name) else { continue };
        for role in &grant.roles {
            if !roles.contains(role) {
                roles.push(*role);
            }
        }
        for group in &grant.approval_groups {
            if !groups.contains(group) {
                groups.push(group.clone());
            }
        }
    }
    roles.sort();
    groups.sort();
    (roles, groups)
}

/// Recomputes what the user's groups grant them, in the caller's
/// transaction; audited (`user.idp_grants`, by `actor`) when it changed.
pub async fn sync(conn: &mut Conn, settings: &Settings, tenant: &str, user: &str, actor: &str) -> store::Result<bool> {
    let names = store::people::group_names_of(&mut *conn, user).await?;
    let (roles, groups) = grants(settings, tenant, &names);
    let changed = store::people::set_idp_grants(&mut *conn, user, &roles, &groups).await?;
    if changed {
        let entry = AuditEntry {
            tenant_id: Some(tenant.to_owned()),
            actor: actor.to_owned(),
            action: "user.idp_grants".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"user_id": user, "idp_groups": names, "roles": roles, "approval_groups": groups}),
        };
        store::audit::append(conn, &entry).await?;
    }
    Ok(changed)
}

/// At start: recomputes everyone's grants under the settings now in force.
pub async fn refresh_all(db: &store::Db, settings: &Settings) -> store::Result<usize> {
    let users = store::people::users_in_groups(&db.read).await?;
    if users.is_empty() {
        return Ok(0);
    }
    let mut tx = db.begin().await?;
    let mut changed = 0;
    for (tenant, user) in users {
        changed += usize::from(sync(&mut tx, settings, &tenant, &user, "system:idp_groups").await?);
    }
    tx.commit().await?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_grants_what_the_setting_says_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[tenants.acme.approval_groups]\ntreasury = []\n\
             [tenants.acme.idp_groups.\"Finance Approvers\"]\nroles = [\"approver\"]\napproval_groups = [\"treasury\"]\n\
             [tenants.acme.idp_groups.Admins]\nroles = [\"admin\", \"viewer\"]\n",
        )
        .unwrap();
        let settings = Settings::load(Some(&path), &Default::default()).unwrap();
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            grants(&settings, "acme", &names(&["Finance Approvers", "Admins", "Unmapped"])),
            (vec![Role::Viewer, Role::Approver, Role::Admin], vec!["treasury".to_owned()])
        );
        assert_eq!(grants(&settings, "acme", &names(&["finance approvers"])), (vec![], vec![]), "names are exact");
        assert_eq!(grants(&settings, "other", &names(&["Admins"])), (vec![], vec![]));
    }
}
