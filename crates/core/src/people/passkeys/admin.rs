//! What admins do about someone else's passkeys.
//!
//! - **Confirm** a new passkey before its cool-off ends, so it can approve
//!   at once: one admin, never its holder, and never the admin who was shown
//!   the enrolment code it was registered with (who, with a stolen session,
//!   could otherwise enrol and confirm a passkey alone).
//! - **Enrolment codes** and **removals** are registry changes two admins
//!   agree on (`registry_changes`, kinds `passkey_enrolment` and
//!   `passkey_removal`); [`issue_code`] and the removal are applied from
//!   there. The operator's CLI issues codes too (`countersign user
//!   enrolment-code`): it has the server's files, and with them everything.

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde_json::json;

use super::registry::{enrolment_sha256, key_fingerprint, notify, short};
use crate::domain::Role;
use crate::people::actors::Admin;
use crate::store::audit::{self, AuditEntry};
use crate::store::passkeys::{self as store_passkeys, NewEnrolment, PasskeyRow};
use crate::store::Store;
use crate::store::{new_id, Conn, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AdminPasskeyError {
    #[error("only admins can confirm passkeys")]
    NotAnAdmin,
    #[error("no such passkey")]
    NotFound,
    #[error("this is your own passkey: another admin must confirm it")]
    OwnPasskey,
    #[error("you were shown the enrolment code this passkey was registered with: another admin must confirm it")]
    SawTheCode,
    #[error("this passkey can approve already")]
    AlreadyUsable,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why `admin` may not confirm `passkey` now, if they may not: the one rule
/// for [`confirm`] and the admin page's Confirm buttons.
pub fn cannot_confirm(
    admin: &Admin,
    passkey: &PasskeyRow,
    code_shown_to: Option<&str>,
    now: DateTime<Utc>,
) -> Option<AdminPasskeyError> {
    if !admin.roles.contains(&Role::Admin) {
        Some(AdminPasskeyError::NotAnAdmin)
    } else if passkey.user_id == admin.user_id {
        Some(AdminPasskeyError::OwnPasskey)
    } else if passkey.usable_at(now) {
        Some(AdminPasskeyError::AlreadyUsable)
    } else if code_shown_to == Some(admin.user_id.as_str()) {
        Some(AdminPasskeyError::SawTheCode)
    } else {
        None
    }
}

/// The admin the enrolment code of `passkey` was shown to, if it was
/// registered with one.
pub async fn code_shown_to(state: &impl Store, passkey: &PasskeyRow) -> Result<Option<String>, StoreError> {
    let Some(enrolment) = &passkey.enrolment_id else { return Ok(None) };
    Ok(store_passkeys::enrolment(&state.db().read, enrolment).await?.and_then(|e| e.revealed_to))
}

/// An admin confirms a passkey in its cool-off: it can approve from now.
/// Audited `passkey.confirmed`; its holder is told.
pub async fn confirm(
    state: &impl Store,
    admin: &Admin,
    id: &str,
    now: DateTime<Utc>,
) -> Result<PasskeyRow, AdminPasskeyError> {
    if !admin.roles.contains(&Role::Admin) {
        return Err(AdminPasskeyError::NotAnAdmin);
    }
    let passkey =
        store_passkeys::get(&state.db().read, &admin.tenant_id, id).await?.ok_or(AdminPasskeyError::NotFound)?;
    let shown_to = code_shown_to(state, &passkey).await?;
    if let Some(refusal) = cannot_confirm(admin, &passkey, shown_to.as_deref(), now) {
        return Err(refusal);
    }
    let mut tx = state.db().begin().await?;
    let confirmed = store_passkeys::confirm(&mut tx, &admin.tenant_id, id, &admin.user_id, now)
        .await?
        .ok_or(AdminPasskeyError::AlreadyUsable)?;
    let print = key_fingerprint(&confirmed);
    audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(admin.tenant_id.clone()),
            actor: format!("user:{}", admin.user_id),
            action: "passkey.confirmed".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"passkey_id": confirmed.id, "holder": confirmed.user_id, "fingerprint": print}),
        },
    )
    .await?;
    let message = format!(
        "Your passkey “{}” ({}) was confirmed by {} and can approve payments now.",
        confirmed.name,
        short(&print),
        admin.username
    );
    notify(&mut tx, &admin.tenant_id, &confirmed.user_id, "passkey.confirmed", &message, now).await?;
    tx.commit().await?;
    Ok(confirmed)
}

/// A fresh one-time enrolment code: 160 random bits as 32 Crockford base32
/// characters, in groups of four (easy to read out and type).
pub fn new_code() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let chars: Vec<char> = bytes.iter().map(|b| crate::domain::ids::crockford_char(b & 0x1f)).collect();
    chars.chunks(4).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("-")
}

/// Who issues an enrolment code.
pub enum Issuer<'a> {
    /// Two admins agreed (a registry change): the code is shown to the one
    /// who confirmed.
    Admins { confirmed_by: &'a Admin },
    /// The operator, with the server's files (the CLI).
    Operator,
}

/// Issues a one-time enrolment code for `user` of `tenant`, in the caller's
/// transaction: only its digest is kept; audited `passkey.enrolment_issued`,
/// the user told. The code, to be shown once.
pub async fn issue_code(
    conn: &mut Conn,
    settings: &crate::config::Settings,
    (tenant, user): (&str, &str),
    issuer: Issuer<'_>,
    now: DateTime<Utc>,
) -> Result<String, StoreError> {
    let code = new_code();
    let id = new_id("pke", now);
    let ttl = Duration::seconds(i64::try_from(settings.passkeys.enrolment_code_ttl_secs).unwrap_or(i64::MAX / 2));
    let (issued_by, revealed_to, who) = match &issuer {
        Issuer::Admins { confirmed_by } => {
            (format!("user:{}", confirmed_by.user_id), Some(confirmed_by.user_id.as_str()), "your admins")
        }
        Issuer::Operator => ("operator".to_owned(), None, "the operator"),
    };
    let sha = enrolment_sha256(&code);
    store_passkeys::insert_enrolment(
        conn,
        &NewEnrolment {
            id: &id,
            tenant,
            user,
            code_sha256: &sha,
            issued_by: &issued_by,
            revealed_to,
            now,
            expires_at: now + ttl,
        },
    )
    .await?;
    audit::append(
        conn,
        &AuditEntry {
            tenant_id: Some(tenant.to_owned()),
            actor: issued_by.clone(),
            action: "passkey.enrolment_issued".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"enrolment_id": id, "holder": user, "revealed_to": revealed_to,
                         "expires_at": crate::store::ts(now + ttl)}),
        },
    )
    .await?;
    let message = format!(
        "A one-time code to register a passkey was issued for you by {who}; it expires {}. If you did not \
         ask for one, tell your admins now.",
        crate::store::ts(now + ttl)
    );
    notify(conn, tenant, user, "passkey.enrolment_issued", &message, now).await?;
    Ok(code)
}

/// A passkey of the tenant as the admin page lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub passkey: PasskeyRow,
    /// Why this admin cannot confirm it, if they cannot (`None`: they can).
    pub blocker: Option<String>,
}

/// The tenant's passkeys, with whether `admin` may confirm each.
pub async fn list(state: &impl Store, admin: &Admin, now: DateTime<Utc>) -> Result<Vec<Listed>, StoreError> {
    let rows = store_passkeys::of_tenant(&state.db().read, &admin.tenant_id).await?;
    let mut listed = Vec::with_capacity(rows.len());
    for passkey in rows {
        let shown_to = if passkey.usable_at(now) { None } else { code_shown_to(state, &passkey).await? };
        let blocker = cannot_confirm(admin, &passkey, shown_to.as_deref(), now).map(|e| e.to_string());
        listed.push(Listed { passkey, blocker });
    }
    Ok(listed)
}
