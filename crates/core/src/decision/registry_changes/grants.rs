//! What a change grants, recomputed from the database at confirmation (an
//! exact match with what the first admin saw, else the change is stale),
//! and the lines that show it.

use super::*;

/// What applying `stored` would grant, line by line, against the registry
/// as `conn` reads it now; `None` when it grants nothing (it only reduces
/// authority, or changes nothing) and so may apply at once. The one rule
/// for proposing, for the admin page, and for confirming.
pub(super) async fn grants(
    conn: &mut Conn,
    settings: &crate::config::Settings,
    tenant: &str,
    stored: &Stored,
    now: DateTime<Utc>,
) -> Result<Option<Vec<String>>, ChangeError> {
    let user_here = |user: Option<store::directory::User>| user.filter(|u| u.tenant_id == tenant);
    Ok(match stored {
        Stored::User { username, .. } => {
            let existing = user_here(store::directory::user_by_username(conn, username).await?);
            // What it grants; the payments it would strand are said beside
            // (a reduction applies at once whatever it strands).
            match user_lines(existing.as_ref(), stored) {
                None => None,
                Some(mut lines) => {
                    lines.extend(super::stranded::stranded(conn, settings, tenant, stored, now).await?);
                    Some(lines)
                }
            }
        }
        Stored::Agent { id, acts_for, source_accounts, purposes, key_holder, .. } => {
            let existing = store::directory::agent(conn, tenant, id).await?;
            let mut lines = vec![match &existing {
                None => format!("Add agent {id}, acting for {acts_for}"),
                Some(_) => format!("Change agent {id} (acting for {acts_for}) and replace its key"),
            }];
            lines.push(format!(
                "Source accounts: {}",
                source_accounts.iter().map(|a| mask_account(a)).collect::<Vec<_>>().join(", ")
            ));
            lines.push(format!("Purposes: {}", purposes.join(", ")));
            if let Some((_, name)) = key_holder {
                lines.push(format!("Its key was shown only to {name}, who may then not approve this agent's payments"));
            }
            Some(lines)
        }
        Stored::PayeeAccount { from, to, legal_name } => {
            Some(crate::payables::account_change::lines(&mut *conn, tenant, (from, to), legal_name).await?)
        }
        Stored::Payee { id, legal_name, trusted } => {
            let existing = store::directory::payee(&mut *conn, tenant, id).await?;
            let masked = mask_account_tagged(id);
            let mut lines = Vec::new();
            match &existing {
                None if !trusted => {}
                None => lines.push(format!("Add payee {legal_name} ({masked}) as trusted")),
                Some(p) => {
                    if p.legal_name != *legal_name {
                        lines.push(format!("Rename payee {masked} from {} to {legal_name}", p.legal_name));
                    }
                    if *trusted && !p.trusted {
                        lines.push(format!("Trust payee {legal_name} ({masked})"));
                    }
                }
            }
            if !lines.is_empty() && *trusted {
                lines.push("Small payments to a trusted payee can be approved by policy alone.".into());
            }
            (!lines.is_empty()).then_some(lines)
        }
        Stored::SlackLink { username, slack_user_id } => {
            let user = user_here(store::directory::user_by_username(conn, username).await?)
                .ok_or_else(|| ChangeError::Invalid(format!("there is no user {username} here")))?;
            match slack_user_id {
                None => None,
                Some(slack) if user.slack_user_id.as_ref() == Some(slack) => None,
                Some(slack) => Some(vec![format!(
                    "Link user {username} to Slack user {slack}{}: presses of that Slack account approve as {username}",
                    user.slack_user_id.as_deref().map(|old| format!(" (instead of {old})")).unwrap_or_default()
                )]),
            }
        }
        Stored::PasskeyEnrolment { username } => {
            user_here(store::directory::user_by_username(conn, username).await?)
                .ok_or_else(|| ChangeError::Invalid(format!("there is no user {username} here")))?;
            let cool_off = settings.passkeys.cool_off_secs / 3600;
            Some(vec![format!(
                "Issue a one-time code with which {username} can register a passkey without holding one; it is \
                 shown once, to the admin who confirms, and the passkey then cools off for {cool_off} h unless \
                 another admin confirms it"
            )])
        }
        Stored::Freeze { agent, frozen, .. } => {
            let scope = freeze_scope(tenant, agent.as_deref());
            match store::freezes::get(conn, &scope).await? {
                // Freezing only ever takes authority away; lifting a freeze
                // that is not there changes nothing.
                _ if *frozen => None,
                None => None,
                Some(f) => Some(vec![format!(
                    "Lift the freeze of {} (frozen by {} at {}: {})",
                    scope.describe(),
                    f.frozen_by,
                    store::ts(f.at),
                    f.reason
                )]),
            }
        }
        Stored::ScimToken { label, .. } => Some(vec![format!(
            "Issue a SCIM token for {label}: it creates, changes, deactivates and deletes the users and groups of \
             this tenant, and its groups grant the roles and approval groups the configuration maps them to"
        )]),
        // Revoking only ever takes authority away.
        Stored::RevokeScimToken { .. } => None,
        Stored::Reassign { agent, acts_for } => {
            let existing = store::directory::agent(&mut *conn, tenant, agent)
                .await?
                .ok_or_else(|| ChangeError::Invalid(format!("there is no agent {agent} here")))?;
            let user = user_here(store::directory::user_by_username(&mut *conn, acts_for).await?)
                .filter(|u| u.active)
                .ok_or_else(|| ChangeError::Invalid(format!("acts_for: there is no active user {acts_for} here")))?;
            if existing.acts_for == user.id {
                return Err(ChangeError::Invalid(format!("agent {agent} already acts for {acts_for}")));
            }
            let mut lines = vec![format!("Let agent {agent} act for {acts_for} (its key stays)")];
            if let Some((_, reason, _)) = store::people::offboarding_freeze(&mut *conn, tenant, agent).await? {
                lines.push(format!("This lifts its freeze ({reason}): it can propose and commit again"));
            }
            Some(lines)
        }
        Stored::Delegation { delegator, delegate, starts_at, ends_at, .. } => {
            delegation_lines(settings, tenant, (delegator, delegate), (starts_at, ends_at))
        }
        Stored::Policy { .. } => Some(super::policy_change::lines(settings, tenant, stored)),
        Stored::PasskeyRemoval { username, passkey_id } => {
            let Some(passkey) = store::passkeys::get_in(&mut *conn, tenant, passkey_id).await? else {
                return Err(ChangeError::Invalid("that passkey is no longer registered".into()));
            };
            let user = user_here(store::directory::user_by_id(conn, &passkey.user_id).await?)
                .filter(|u| &u.username == username)
                .ok_or_else(|| ChangeError::Invalid("that passkey is no longer registered".into()))?;
            let held = store::passkeys::of_user_in(conn, tenant, &user.id).await?;
            let print = crate::people::passkeys::registry::key_fingerprint(&passkey);
            let mut lines = vec![format!(
                "Remove {username}'s passkey “{}” ({})",
                passkey.name,
                crate::people::passkeys::registry::short(&print)
            )];
            if held <= 1 {
                lines.push(format!(
                    "It is {username}'s last passkey: approvals that need one wait until they register another"
                ));
            }
            Some(lines)
        }
    })
}

/// What a user change grants, line by line; `None` when it only reduces
/// authority (or changes nothing) and so may apply at once.
pub(super) fn user_lines(existing: Option<&store::directory::User>, stored: &Stored) -> Option<Vec<String>> {
    let Stored::User { username, password_hash, roles, limits, slack_user_id } = stored else { return None };
    let Some(old) = existing else {
        let mut lines = vec![format!("Create user {username} with roles {}", role_names(roles))];
        for (currency, limit) in limits {
            lines.push(format!("Approval limit {}", money(currency, *limit)));
        }
        if let Some(slack) = slack_user_id {
            lines.push(format!("Linked to Slack user {slack}"));
        }
        return Some(lines);
    };
    let mut lines = Vec::new();
    let added: Vec<Role> = roles.iter().filter(|r| !old.roles.contains(r)).copied().collect();
    if !added.is_empty() {
        // What goes away with it is said too: the change applies as a whole.
        let removed: Vec<Role> = old.roles.iter().filter(|r| !roles.contains(r)).copied().collect();
        let and_remove =
            if removed.is_empty() { String::new() } else { format!(" and remove {}", role_names(&removed)) };
        lines.push(format!(
            "Give {username} the role{} {}{and_remove} (now {})",
            if added.len() == 1 { "" } else { "s" },
            role_names(&added),
            role_names(&old.roles)
        ));
    }
    for (currency, limit) in limits {
        match old.approval_limits_minor.get(currency) {
            Some(before) if before >= limit => {}
            Some(before) => lines.push(format!(
                "Raise {username}'s {currency} approval limit from {} to {}",
                money(currency, *before),
                money(currency, *limit)
            )),
            None => lines.push(format!("Give {username} an approval limit of {}", money(currency, *limit))),
        }
    }
    if password_hash.is_some() {
        lines.push(format!("Set a new password for {username} (their sessions end)"));
    }
    if slack_user_id.is_some() && *slack_user_id != old.slack_user_id {
        lines.push(format!("Link {username} to Slack user {}", slack_user_id.as_deref().unwrap_or_default()));
    }
    (!lines.is_empty()).then_some(lines)
}

/// Whether the pending change `row` still does exactly what its proposer
/// was shown: its lines computed again against the registry now. `Err`
/// names what it would do now when that differs.
pub(super) async fn still_as_shown(
    conn: &mut Conn,
    settings: &crate::config::Settings,
    row: &ChangeRow,
    stored: &Stored,
    at: DateTime<Utc>,
) -> Result<Result<(), String>, ChangeError> {
    let shown = summary_lines(row);
    let now = match grants(conn, settings, &row.tenant_id, stored, at).await {
        Ok(lines) => lines.unwrap_or_default(),
        Err(ChangeError::Invalid(why)) => return Ok(Err(why)),
        Err(e) => return Err(e),
    };
    if now == shown {
        Ok(Ok(()))
    } else if now.is_empty() {
        Ok(Err("it would grant nothing now".into()))
    } else {
        Ok(Err(format!("it would now: {}", now.join("; "))))
    }
}

/// What confirming the delegation grants, line by line; `None` when it
/// grants nothing beyond the delegate's own authority.
pub fn delegation_lines(
    settings: &crate::config::Settings,
    tenant: &str,
    (delegator, delegate): (&str, &str),
    (starts_at, ends_at): (&str, &str),
) -> Option<Vec<String>> {
    let extra = crate::decision::approval_groups::beyond(settings, tenant, delegator, delegate);
    (!extra.is_empty()).then(|| {
        vec![
            format!("Let {delegate} approve for {delegator} from {starts_at} until {ends_at}"),
            format!(
                "{delegate}'s approvals for {delegator} count for {} ({delegate} is not in {})",
                extra.join(" and "),
                if extra.len() == 1 { "it" } else { "them" }
            ),
        ]
    })
}
