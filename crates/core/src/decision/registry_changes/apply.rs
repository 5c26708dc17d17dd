//! Applying a confirmed (or immediately applicable) change in the write
//! transaction that records it.

use super::*;

/// A request that grants nothing (it only reduces authority, or changes
/// nothing): applied now, and every change still pending for the same
/// subject is withdrawn (`superseded`): it was proposed against a state
/// that no longer holds. `strands` says which waiting payments it leaves
/// without the approvers they need (`stranded`): a reduction of authority
/// takes effect at once all the same, and the admin and the audit trail
/// are told (`registry.change.stranding`).
pub(super) async fn apply_at_once(
    state: &(impl Store + Config),
    admin: &Admin,
    stored: &Stored,
    strands: &[String],
    now: DateTime<Utc>,
) -> Result<Submitted, ChangeError> {
    let mut tx = state.db().begin().await?;
    apply(&mut tx, state, admin, stored, now).await?;
    if !strands.is_empty() {
        append(
            &mut tx,
            admin,
            "registry.change.stranding",
            json!({"kind": stored.kind(), "subject": shown_subject(stored.kind(), stored.subject()), "strands": strands}),
        )
        .await?;
    }
    let withdrawn = store::registry_changes::supersede_subject(
        &mut tx,
        &admin.tenant_id,
        (stored.family(), stored.subject()),
        &format!(
            "withdrawn: a change reducing {}'s authority applied since",
            shown_subject(stored.kind(), stored.subject())
        ),
        now,
    )
    .await?;
    if !withdrawn.is_empty() {
        append(
            &mut tx,
            admin,
            "registry.change.superseded",
            json!({"changes": withdrawn, "kind": stored.kind(), "subject": shown_subject(stored.kind(), stored.subject()),
                   "why": "authority reduced"}),
        )
        .await?;
    }
    tx.commit().await?;
    let message = match stored {
        Stored::User { username, .. } => format!("User {username} saved."),
        Stored::Payee { legal_name, .. } => format!("Payee {legal_name} saved."),
        Stored::SlackLink { username, .. } => format!("User {username} unlinked from Slack."),
        Stored::Freeze { agent, frozen: true, .. } => format!(
            "Frozen: {}. Each is refused before the rail is called, on every instance, until another admin \
             confirms lifting the freeze.",
            freeze_scope(&admin.tenant_id, agent.as_deref()).describe()
        ),
        Stored::Freeze { agent, frozen: false, .. } => {
            format!("{} was not frozen.", freeze_scope(&admin.tenant_id, agent.as_deref()).describe())
        }
        other => format!("{} saved.", other.kind()),
    };
    let mut message = if withdrawn.is_empty() {
        message
    } else {
        format!("{message} {} pending change(s) to the same subject were withdrawn.", withdrawn.len())
    };
    for line in strands {
        message.push_str(&format!(" {line}: give another approver the authority they need."));
    }
    Ok(Submitted::Applied { message })
}

/// Applies a stored change as `admin`, in the caller's transaction; a
/// secret to show the admin once, if the change makes one.
pub(super) async fn apply(
    conn: &mut Conn,
    state: &impl Config,
    admin: &Admin,
    stored: &Stored,
    now: DateTime<Utc>,
) -> Result<Option<OneTimeSecret>, ChangeError> {
    let (settings, tenant, actor) = (&state.settings(), admin.tenant_id.as_str(), admin.actor());
    match stored.clone() {
        Stored::User { username, password_hash, roles, limits, slack_user_id } => {
            let sets_password = password_hash.is_some();
            let user = NewUser {
                tenant: tenant.to_owned(),
                username,
                credential: password_hash.map_or(NewCredential::Keep, NewCredential::Hash),
                roles: roles.iter().map(|r| r.as_str().to_owned()).collect(),
                limits,
                slack_user_id,
            };
            let user_id = provision::add_user_in(&mut *conn, settings, user, &actor).await?;
            if sets_password {
                // Whoever is signed in with the old password is signed out.
                store::sessions::delete_of_user(conn, &user_id).await?;
            }
        }
        Stored::Agent { id, acts_for, source_accounts, purposes, key_sha256, key_holder } => {
            let agent = NewAgent { tenant: tenant.to_owned(), id: id.clone(), acts_for, source_accounts, purposes };
            provision::add_agent_in(conn, agent, key_sha256, &actor).await?;
            if let Some((holder, _)) = key_holder {
                store::directory::set_key_holder(conn, tenant, &id, &holder).await?;
            }
        }
        Stored::ScimToken { id, label, token_sha256, proposed_by } => {
            let row = store::people::NewScimToken {
                id: &id,
                tenant_id: tenant,
                token_sha256: &token_sha256,
                label: &label,
                created_by: &proposed_by,
                confirmed_by: Some(&admin.user_id),
                now,
            };
            store::people::insert_token(conn, &row).await?;
            append(conn, admin, "scim.token.issued", json!({"token_id": id, "label": label})).await?;
        }
        Stored::RevokeScimToken { id } => {
            if store::people::revoke_token(conn, tenant, &id, now).await? {
                append(conn, admin, "scim.token.revoked", json!({"token_id": id})).await?;
            }
        }
        Stored::Reassign { agent, acts_for } => {
            let user = store::directory::user_by_username(conn, &acts_for)
                .await?
                .filter(|u| u.tenant_id == tenant && u.active)
                .ok_or_else(|| ChangeError::Invalid(format!("acts_for: there is no active user {acts_for} here")))?;
            if !store::people::set_acts_for(conn, tenant, &agent, &user.id).await? {
                return Err(ChangeError::Invalid(format!("there is no agent {agent} here")));
            }
            append(conn, admin, "registry.agent.reassigned", json!({"agent_id": agent, "acts_for": user.id})).await?;
            crate::intake::freeze::thaw_if_reassigned(conn, tenant, &agent, &actor, Some(&admin.user_id)).await?;
        }
        Stored::Payee { id, legal_name, trusted } => {
            provision::add_payee_in(conn, tenant, &id, &legal_name, trusted, &actor).await?;
        }
        Stored::SlackLink { username, slack_user_id } => {
            provision::link_slack_in(conn, tenant, &username, slack_user_id.as_deref(), &actor)
                .await
                .map_err(ChangeError::Invalid)?;
        }
        Stored::PasskeyEnrolment { username } => {
            let user = store::directory::user_by_username(conn, &username)
                .await?
                .filter(|u| u.tenant_id == tenant)
                .ok_or_else(|| ChangeError::Invalid(format!("there is no user {username} here")))?;
            let issuer = crate::people::passkeys::admin::Issuer::Admins { confirmed_by: admin };
            let code =
                crate::people::passkeys::admin::issue_code(conn, settings, (tenant, &user.id), issuer, now).await?;
            return Ok(Some(OneTimeSecret {
                title: format!("Passkey enrolment code for {username}"),
                explanation: format!(
                    "Give this code to {username} yourself (in person or on a call), never through the channel a \
                     thief of their session could read. With it they can register one passkey on their account \
                     page, within {} h. It is shown only this once. As you saw it, another admin must confirm \
                     the passkey it enrols if it is to approve before its cool-off ends.",
                    settings.passkeys.enrolment_code_ttl_secs / 3600
                ),
                value: code,
            }));
        }
        Stored::Freeze { agent, frozen, reason } => {
            let scope = freeze_scope(tenant, agent.as_deref());
            crate::intake::freeze::set(conn, &scope, frozen, &actor, &reason, Some(&admin.user_id), now).await?;
        }
        Stored::Delegation { id, delegator, delegate, starts_at, ends_at } => {
            let (pending, active) = (store::delegations::PENDING, store::delegations::ACTIVE);
            if !store::delegations::set_status(conn, &id, &[pending], active, now).await? {
                return Err(ChangeError::Invalid("the delegation was withdrawn".into()));
            }
            let data = json!({"delegation_id": id, "delegator": delegator, "delegate": delegate,
                              "starts_at": starts_at, "ends_at": ends_at, "four_eyes": admin.user_id});
            let entry = AuditEntry {
                tenant_id: Some(tenant.to_owned()),
                actor,
                action: "delegation.confirmed".into(),
                proposal_id: None,
                request_hash: None,
                data,
            };
            store::audit::append(conn, &entry).await?;
        }
        // Applied with its call-back by `confirm_account_change` only.
        Stored::PayeeAccount { .. } => {
            return Err(ChangeError::Invalid("a change of bank account needs the call-back that verified it".into()));
        }
        Stored::Policy { .. } => {
            // Stored by `confirm` with the change's id (`policy_change::apply`).
        }
        Stored::PasskeyRemoval { passkey_id, .. } => {
            let passkey = store::passkeys::get_in(&mut *conn, tenant, &passkey_id)
                .await?
                .ok_or_else(|| ChangeError::Invalid("that passkey is no longer registered".into()))?;
            let removed = store::passkeys::remove(conn, tenant, &passkey.user_id, &passkey_id)
                .await?
                .ok_or_else(|| ChangeError::Invalid("that passkey is no longer registered".into()))?;
            crate::people::passkeys::registry::removed_in(
                conn,
                &removed,
                &actor,
                json!({"four_eyes": admin.user_id}),
                now,
            )
            .await?;
        }
    }
    Ok(None)
}
