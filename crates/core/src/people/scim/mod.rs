//! SCIM 2.0 provisioning (RFC 7643, RFC 7644) of a tenant's Users and
//! Groups, as use cases: the server's `http/scim.rs` authenticates the
//! tenant's token, calls one of these and maps a [`ScimError`] to SCIM's
//! error envelope in one place.
//!
//! Every write is one transaction: it is checked whole before anything is
//! written (a PATCH is applied to the resource's JSON, then parsed like a
//! PUT), so a refused request changes nothing. A token sees only its
//! tenant: another tenant's user or group is "not found", and a filter
//! runs over the tenant's own resources only.
//!
//! `active: false` is the offboarding of `people::lifecycle`, in the same
//! transaction as the rest of the request; `DELETE` deactivates, then
//! removes the user from SCIM's view and frees the username (the row
//! stays, for the approvals and the audit trail that name it). Group
//! memberships recompute what the groups grant (`people::groups`).

pub mod filter;
pub mod patch;
pub mod resource;

use serde_json::{json, Value};
use std::collections::HashMap;

use super::lifecycle::{self, By, LifecycleError, Via};
use crate::config::Config;
use crate::notify::outbound::Outbound;
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::store::audit::AuditEntry;
use crate::store::people::{GroupRow, NewScimUser, ScimUserRow};
use crate::store::{self, Conn, Store, StoreError};
use resource::{GroupInput, UserInput};

/// The most resources one page lists (`count` above it is lowered).
pub const MAX_COUNT: usize = 200;

/// Why a SCIM request was refused; `http/scim.rs` writes each as SCIM's
/// error envelope (`scimType` and `detail`).
#[derive(Debug, thiserror::Error)]
pub enum ScimError {
    /// 400, with RFC 7644's `scimType` (`invalidFilter`, `invalidSyntax`,
    /// `invalidPath`, `invalidValue`, `noTarget`, `mutability`, `tooMany`).
    #[error("{detail}")]
    BadRequest { scim_type: Option<&'static str>, detail: String },
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409 `uniqueness`.
    #[error("{0}")]
    Uniqueness(String),
    /// 412: `If-Match` names another version.
    #[error("the resource changed since that version was read")]
    PreconditionFailed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<LifecycleError> for ScimError {
    fn from(e: LifecycleError) -> Self {
        match e {
            LifecycleError::Store(e) => ScimError::Store(e),
            LifecycleError::NotFound => ScimError::NotFound("no such User".into()),
            other => ScimError::BadRequest { scim_type: Some("invalidValue"), detail: other.to_string() },
        }
    }
}

/// The tenant a SCIM token provisions, and the token (the audit trail's
/// actor is `scim:<token id>`).
#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant_id: String,
    pub token_id: String,
}

impl Caller {
    pub fn actor(&self) -> String {
        format!("scim:{}", self.token_id)
    }

    fn by(&self) -> By {
        By { actor: self.actor(), via: Via::Scim }
    }
}

/// The tenant and token behind a bearer token, if it is one (unrevoked).
pub async fn authenticate(state: &(impl Store + Clock), token: &str) -> Result<Option<Caller>, StoreError> {
    let digest = crate::domain::key_sha256(token).into_string();
    let Some(found) = store::people::token_by_hash(&state.db().read, &digest).await? else { return Ok(None) };
    store::people::token_used(&state.db().write, &found.id, state.now()).await?;
    Ok(Some(Caller { tenant_id: found.tenant_id, token_id: found.id }))
}

/// A new SCIM token: `cs_scim_` and 43 base62 characters (256 bits).
pub fn generate_token() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rngs::OsRng;
    let body: String = (0..43).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect();
    format!("cs_scim_{body}")
}

/// A list request's parameters, as given.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub filter: Option<String>,
    pub start_index: Option<i64>,
    pub count: Option<i64>,
    pub attributes: Vec<String>,
    pub excluded: Vec<String>,
}

fn parse_filter(text: Option<&str>, known: &[&str]) -> Result<Option<filter::Filter>, ScimError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    let f =
        filter::parse(text).map_err(|why| ScimError::BadRequest { scim_type: Some("invalidFilter"), detail: why })?;
    if let Some(unknown) = f.paths().into_iter().find(|p| !known.contains(&p.as_str())) {
        return Err(ScimError::BadRequest {
            scim_type: Some("invalidFilter"),
            detail: format!("`{unknown}` is not an attribute that can be filtered on"),
        });
    }
    Ok(Some(f))
}

/// One page of `all` that match `q`'s filter.
fn page(all: Vec<Value>, q: &ListQuery, known: &[&str]) -> Result<Value, ScimError> {
    let f = parse_filter(q.filter.as_deref(), known)?;
    let exact = |p: &str| resource::case_exact(p);
    let matching: Vec<Value> = all.into_iter().filter(|r| f.as_ref().is_none_or(|f| f.matches(r, &exact))).collect();
    let start = q.start_index.unwrap_or(1).max(1) as usize;
    let count = q.count.unwrap_or(100).clamp(0, MAX_COUNT as i64) as usize;
    let total = matching.len();
    let items: Vec<Value> = matching
        .into_iter()
        .skip(start - 1)
        .take(count)
        .map(|r| resource::project(r, &q.attributes, &q.excluded))
        .collect();
    Ok(resource::list(items, total, start))
}

/// What rendering the tenant's users and groups needs, read once.
struct Directory {
    users: Vec<ScimUserRow>,
    groups: Vec<GroupRow>,
    memberships: Vec<(String, String)>,
}

impl Directory {
    async fn load(conn: &mut Conn, tenant: &str) -> Result<Directory, StoreError> {
        Ok(Directory {
            users: store::people::scim_users(&mut *conn, tenant).await?,
            groups: store::people::groups(&mut *conn, tenant).await?,
            memberships: store::people::memberships(&mut *conn, tenant).await?,
        })
    }

    fn user(&self, row: &ScimUserRow, base: &str) -> (Value, String) {
        let names: HashMap<&str, &str> = self.groups.iter().map(|g| (g.id.as_str(), g.display_name.as_str())).collect();
        let groups: Vec<(String, String)> = self
            .memberships
            .iter()
            .filter(|(_, u)| *u == row.id)
            .filter_map(|(g, _)| names.get(g.as_str()).map(|n| (g.clone(), (*n).to_owned())))
            .collect();
        resource::user_json(row, &groups, base)
    }

    fn group(&self, row: &GroupRow, base: &str) -> (Value, String) {
        let names: HashMap<&str, &str> = self.users.iter().map(|u| (u.id.as_str(), u.username.as_str())).collect();
        let members: Vec<(String, String)> = self
            .memberships
            .iter()
            .filter(|(g, _)| *g == row.id)
            .filter_map(|(_, u)| names.get(u.as_str()).map(|n| (u.clone(), (*n).to_owned())))
            .collect();
        resource::group_json(row, &members, base)
    }
}

fn check_version(current: &str, if_match: Option<&str>) -> Result<(), ScimError> {
    match if_match.map(str::trim) {
        None | Some("*") => Ok(()),
        Some(wanted) if wanted.split(',').any(|t| t.trim() == current) => Ok(()),
        Some(_) => Err(ScimError::PreconditionFailed),
    }
}

fn no_user() -> ScimError {
    ScimError::NotFound("no such User".into())
}

fn no_group() -> ScimError {
    ScimError::NotFound("no such Group".into())
}

async fn audit(conn: &mut Conn, caller: &Caller, action: &str, data: Value) -> Result<(), StoreError> {
    store::audit::append(
        conn,
        &AuditEntry {
            tenant_id: Some(caller.tenant_id.clone()),
            actor: caller.actor(),
            action: action.into(),
            proposal_id: None,
            request_hash: None,
            data,
        },
    )
    .await
}

/// `GET /Users`.
pub async fn list_users(state: &impl Store, caller: &Caller, q: &ListQuery, base: &str) -> Result<Value, ScimError> {
    let mut conn = state.db().reader().await?;
    let dir = Directory::load(&mut conn, &caller.tenant_id).await?;
    let all = dir.users.iter().map(|u| dir.user(u, base).0).collect();
    page(all, q, resource::USER_FILTERABLE)
}

/// `GET /Users/{id}`: the user and its ETag.
pub async fn get_user(state: &impl Store, caller: &Caller, id: &str, base: &str) -> Result<(Value, String), ScimError> {
    let mut conn = state.db().reader().await?;
    let dir = Directory::load(&mut conn, &caller.tenant_id).await?;
    let row = dir.users.iter().find(|u| u.id == id).ok_or_else(no_user)?;
    Ok(dir.user(row, base))
}

/// The userName `username` may be taken by `id` in `tenant`: not held by
/// anyone else (any tenant: usernames are what people sign in with), and,
/// for a rename, not named in the tenant's configured approval groups (an
/// identity provider alone could otherwise move someone into one).
async fn check_username(
    conn: &mut Conn,
    settings: &crate::config::Settings,
    (tenant, id): (&str, Option<&str>),
    username: &str,
    renaming: bool,
) -> Result<(), ScimError> {
    if let Some((holder, _)) = store::people::username_holder(&mut *conn, username).await? {
        if Some(holder.as_str()) != id {
            return Err(ScimError::Uniqueness(format!("userName {username} is already taken")));
        }
    }
    let configured = settings.tenants.get(tenant).is_some_and(|t| {
        t.approval_groups.values().any(|members| members.iter().any(|m| m.eq_ignore_ascii_case(username)))
    });
    if renaming && configured {
        return Err(ScimError::BadRequest {
            scim_type: Some("mutability"),
            detail: format!(
                "{username} is named in this tenant's approval groups: only the operator's configuration may give \
                 that name to someone"
            ),
        });
    }
    Ok(())
}

async fn check_external_id(
    conn: &mut Conn,
    tenant: &str,
    id: Option<&str>,
    external: Option<&str>,
) -> Result<(), ScimError> {
    let Some(external) = external else { return Ok(()) };
    match store::people::external_id_holder(conn, tenant, external).await? {
        Some(holder) if Some(holder.as_str()) != id => {
            Err(ScimError::Uniqueness(format!("externalId {external} is already another User's")))
        }
        _ => Ok(()),
    }
}

fn conflict(e: StoreError) -> ScimError {
    match e {
        StoreError::Conflict(_) => ScimError::Uniqueness("userName or externalId is already taken".into()),
        other => ScimError::Store(other),
    }
}

/// `POST /Users`: the new user and its ETag.
pub async fn create_user(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    body: &Value,
    base: &str,
) -> Result<(Value, String), ScimError> {
    let input = resource::parse_user(body)?;
    let now = state.now();
    let tenant = caller.tenant_id.as_str();
    let mut tx = state.db().begin().await?;
    check_username(&mut tx, state.settings(), (tenant, None), &input.username, false).await?;
    check_external_id(&mut tx, tenant, None, input.external_id.as_deref()).await?;
    let id = store::new_id("usr", now);
    let profile = serde_json::to_string(&input.profile).expect("a JSON object serializes");
    store::people::insert_scim_user(
        &mut tx,
        &NewScimUser {
            id: &id,
            tenant_id: tenant,
            username: &input.username,
            external_id: input.external_id.as_deref(),
            profile: &profile,
            active: input.active,
            now,
        },
    )
    .await
    .map_err(conflict)?;
    audit(
        &mut tx,
        caller,
        "scim.user.created",
        json!({"user_id": id, "username": input.username, "active": input.active}),
    )
    .await?;
    tx.commit().await?;
    get_user(state, caller, &id, base).await
}

/// `PUT /Users/{id}`.
pub async fn replace_user(
    state: &(impl Store + Clock + Config + Notifier + Outbound + crate::notify::Reaching),
    caller: &Caller,
    (id, body, if_match): (&str, &Value, Option<&str>),
    base: &str,
) -> Result<(Value, String), ScimError> {
    let input = resource::parse_user(body)?;
    write_user(state, caller, (id, if_match), |_| Ok(input), base).await
}

/// `PATCH /Users/{id}`.
pub async fn patch_user(
    state: &(impl Store + Clock + Config + Notifier + Outbound + crate::notify::Reaching),
    caller: &Caller,
    (id, body, if_match): (&str, &Value, Option<&str>),
    base: &str,
) -> Result<(Value, String), ScimError> {
    write_user(state, caller, (id, if_match), |current| patched(current, body, resource::parse_user), base).await
}

/// A resource's JSON as it stands (`meta` apart) with a PATCH request's
/// operations applied, parsed as the resource again.
fn patched<T>(
    current: &Value,
    body: &Value,
    parse: impl FnOnce(&Value) -> Result<T, ScimError>,
) -> Result<T, ScimError> {
    let mut json = current.clone();
    if let Some(o) = json.as_object_mut() {
        o.remove("meta");
    }
    patch::apply(&mut json, body)?;
    parse(&json)
}

/// Reads the user, checks the version, makes the new state from the
/// current JSON (`make`), and writes what changed, in one transaction.
async fn write_user(
    state: &(impl Store + Clock + Config + Notifier + Outbound + crate::notify::Reaching),
    caller: &Caller,
    (id, if_match): (&str, Option<&str>),
    make: impl FnOnce(&Value) -> Result<UserInput, ScimError>,
    base: &str,
) -> Result<(Value, String), ScimError> {
    let now = state.now();
    let tenant = caller.tenant_id.as_str();
    let mut tx = state.db().begin().await?;
    let dir = Directory::load(&mut tx, tenant).await?;
    let row = dir.users.iter().find(|u| u.id == id).ok_or_else(no_user)?.clone();
    let (current, version) = dir.user(&row, base);
    check_version(&version, if_match)?;
    let input = make(&current)?;
    let mut changed = Vec::new();
    let renamed = input.username != row.username;
    if renamed {
        check_username(&mut tx, state.settings(), (tenant, Some(id)), &input.username, true).await?;
        changed.push("userName");
    }
    if input.external_id != row.external_id {
        check_external_id(&mut tx, tenant, Some(id), input.external_id.as_deref()).await?;
        changed.push("externalId");
    }
    let before: serde_json::Map<String, Value> =
        row.profile.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
    if before != input.profile {
        changed.push("profile");
    }
    if !changed.is_empty() {
        let profile = serde_json::to_string(&input.profile).expect("a JSON object serializes");
        store::people::update_scim_user(
            &mut tx,
            tenant,
            id,
            (&input.username, input.external_id.as_deref(), &profile),
            now,
        )
        .await
        .map_err(conflict)?;
        if renamed {
            // Changes proposed about either name were proposed about someone else.
            let family: &[&str] = &["user", "slack_link", "passkey_enrolment", "passkey_removal"];
            for name in [&row.username, &input.username] {
                let note = format!("withdrawn: the identity provider renamed {} to {}", row.username, input.username);
                store::registry_changes::supersede_subject(&mut tx, tenant, (family, name), &note, now).await?;
            }
        }
        audit(
            &mut tx,
            caller,
            "scim.user.replaced",
            json!({"user_id": id, "username": input.username, "changed": changed}),
        )
        .await?;
    }
    let mut offboarded = None;
    match (row.active, input.active) {
        (true, false) => {
            offboarded = Some(lifecycle::deactivate_in(state, &mut tx, tenant, id, &caller.by(), now).await?);
        }
        (false, true) => {
            lifecycle::reactivate_in(&mut tx, tenant, id, &caller.by(), now).await?;
        }
        _ => {}
    }
    tx.commit().await?;
    if let Some(done) = &offboarded {
        lifecycle::after(state, done);
    }
    get_user(state, caller, id, base).await
}

/// `DELETE /Users/{id}`: deactivated (if active), then gone from SCIM.
pub async fn delete_user(
    state: &(impl Store + Clock + Config + Notifier + Outbound + crate::notify::Reaching),
    caller: &Caller,
    id: &str,
    if_match: Option<&str>,
    base: &str,
) -> Result<(), ScimError> {
    let now = state.now();
    let tenant = caller.tenant_id.as_str();
    let mut tx = state.db().begin().await?;
    let dir = Directory::load(&mut tx, tenant).await?;
    let row = dir.users.iter().find(|u| u.id == id).ok_or_else(no_user)?.clone();
    check_version(&dir.user(&row, base).1, if_match)?;
    let offboarded = match row.active {
        true => Some(lifecycle::deactivate_in(state, &mut tx, tenant, id, &caller.by(), now).await?),
        false => None,
    };
    store::people::tombstone(&mut tx, tenant, id, now).await?;
    store::people::set_idp_grants(&mut tx, id, &[], &[]).await?;
    audit(&mut tx, caller, "scim.user.deleted", json!({"user_id": id, "username": row.username})).await?;
    tx.commit().await?;
    if let Some(done) = &offboarded {
        lifecycle::after(state, done);
    }
    Ok(())
}

/// `GET /Groups`.
pub async fn list_groups(state: &impl Store, caller: &Caller, q: &ListQuery, base: &str) -> Result<Value, ScimError> {
    let mut conn = state.db().reader().await?;
    let dir = Directory::load(&mut conn, &caller.tenant_id).await?;
    let all = dir.groups.iter().map(|g| dir.group(g, base).0).collect();
    page(all, q, resource::GROUP_FILTERABLE)
}

/// `GET /Groups/{id}`.
pub async fn get_group(
    state: &impl Store,
    caller: &Caller,
    id: &str,
    base: &str,
) -> Result<(Value, String), ScimError> {
    let mut conn = state.db().reader().await?;
    let dir = Directory::load(&mut conn, &caller.tenant_id).await?;
    let row = dir.groups.iter().find(|g| g.id == id).ok_or_else(no_group)?;
    Ok(dir.group(row, base))
}

/// `POST /Groups`.
pub async fn create_group(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    body: &Value,
    base: &str,
) -> Result<(Value, String), ScimError> {
    let input = resource::parse_group(body)?;
    let now = state.now();
    let id = store::new_id("grp", now);
    let row = GroupRow {
        id: id.clone(),
        tenant_id: caller.tenant_id.clone(),
        display_name: input.display_name.clone(),
        external_id: input.external_id.clone(),
        created_at: now,
        updated_at: now,
    };
    let mut tx = state.db().begin().await?;
    store_group(&mut tx, state.settings(), caller, (&row, &input), None).await?;
    audit(
        &mut tx,
        caller,
        "scim.group.created",
        json!({"group_id": id, "display_name": input.display_name,
        "members": input.members}),
    )
    .await?;
    tx.commit().await?;
    get_group(state, caller, &id, base).await
}

/// Writes a group and its members, after checking them; recomputes what
/// the groups grant everyone whose membership (or group's name) changed.
async fn store_group(
    tx: &mut Conn,
    settings: &crate::config::Settings,
    caller: &Caller,
    (row, input): (&GroupRow, &GroupInput),
    before: Option<&GroupRow>,
) -> Result<(), ScimError> {
    let tenant = caller.tenant_id.as_str();
    if let Some(holder) = store::people::group_named(&mut *tx, tenant, &row.display_name).await? {
        if holder != row.id {
            return Err(ScimError::Uniqueness(format!("a Group is already named {}", row.display_name)));
        }
    }
    let users = store::people::scim_users(&mut *tx, tenant).await?;
    if let Some(unknown) = input.members.iter().find(|m| !users.iter().any(|u| &u.id == *m)) {
        return Err(ScimError::BadRequest {
            scim_type: Some("invalidValue"),
            detail: format!("member {unknown} is not a User of this tenant"),
        });
    }
    store::people::put_group(&mut *tx, row).await.map_err(|e| match e {
        StoreError::Conflict(_) => ScimError::Uniqueness(format!("a Group is already named {}", row.display_name)),
        other => ScimError::Store(other),
    })?;
    let mut touched = store::people::set_members(&mut *tx, &row.id, &input.members).await?;
    if before.is_some_and(|b| b.display_name != row.display_name) {
        touched.extend(input.members.iter().cloned());
    }
    touched.sort();
    touched.dedup();
    for user in touched {
        super::groups::sync(&mut *tx, settings, tenant, &user, &caller.actor()).await?;
    }
    Ok(())
}

/// `PUT /Groups/{id}`.
pub async fn replace_group(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    (id, body, if_match): (&str, &Value, Option<&str>),
    base: &str,
) -> Result<(Value, String), ScimError> {
    let input = resource::parse_group(body)?;
    write_group(state, caller, (id, if_match), |_| Ok(input), base).await
}

/// `PATCH /Groups/{id}` (Entra adds and removes members this way).
pub async fn patch_group(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    (id, body, if_match): (&str, &Value, Option<&str>),
    base: &str,
) -> Result<(Value, String), ScimError> {
    write_group(state, caller, (id, if_match), |current| patched(current, body, resource::parse_group), base).await
}

async fn write_group(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    (id, if_match): (&str, Option<&str>),
    make: impl FnOnce(&Value) -> Result<GroupInput, ScimError>,
    base: &str,
) -> Result<(Value, String), ScimError> {
    let now = state.now();
    let mut tx = state.db().begin().await?;
    let dir = Directory::load(&mut tx, &caller.tenant_id).await?;
    let before = dir.groups.iter().find(|g| g.id == id).ok_or_else(no_group)?.clone();
    let (current, version) = dir.group(&before, base);
    check_version(&version, if_match)?;
    let input = make(&current)?;
    let row = GroupRow {
        display_name: input.display_name.clone(),
        external_id: input.external_id.clone(),
        updated_at: now,
        ..before.clone()
    };
    store_group(&mut tx, state.settings(), caller, (&row, &input), Some(&before)).await?;
    audit(
        &mut tx,
        caller,
        "scim.group.replaced",
        json!({"group_id": id, "display_name": input.display_name,
        "members": input.members}),
    )
    .await?;
    tx.commit().await?;
    get_group(state, caller, id, base).await
}

/// `DELETE /Groups/{id}`: its former members lose what it granted.
pub async fn delete_group(
    state: &(impl Store + Clock + Config),
    caller: &Caller,
    id: &str,
    if_match: Option<&str>,
    base: &str,
) -> Result<(), ScimError> {
    let mut tx = state.db().begin().await?;
    let dir = Directory::load(&mut tx, &caller.tenant_id).await?;
    let row = dir.groups.iter().find(|g| g.id == id).ok_or_else(no_group)?;
    check_version(&dir.group(row, base).1, if_match)?;
    let members = store::people::delete_group(&mut tx, &caller.tenant_id, id).await?.ok_or_else(no_group)?;
    for user in &members {
        super::groups::sync(&mut tx, state.settings(), &caller.tenant_id, user, &caller.actor()).await?;
    }
    audit(&mut tx, caller, "scim.group.deleted", json!({"group_id": id, "display_name": row.display_name})).await?;
    tx.commit().await?;
    Ok(())
}
