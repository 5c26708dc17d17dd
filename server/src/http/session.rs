//! Console sessions: sign-in with username and password, a typed session
//! stored through tower-sessions in the database, the `CurrentUser`
//! extractor, and sign-out.

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tower_sessions::Session;

use super::error::ApiError;
use crate::people::throttle::Refusal;
use crate::state::{AppState, Shared};
use crate::store::{self, directory::User};

/// Key of the console data inside the tower session.
pub const SESSION_KEY: &str = "console";

/// What a signed-in session holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsoleSession {
    pub user_id: String,
    pub tenant_id: String,
    pub csrf_token: String,
    /// Unix seconds; the absolute timeout counts from here.
    pub signed_in_at: i64,
    /// `pwd`, or `sso` (single sign-on).
    pub amr: String,
    /// Single sign-on with a roles claim: the only registry roles this
    /// session may use (the registry can still take any away; this cannot
    /// add one). `None`: the registry's roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<crate::domain::Role>>,
}

/// The signed-in user of a console request.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub session: ConsoleSession,
    pub user: User,
}

impl CurrentUser {
    /// How the audit trail names this user as an actor.
    pub fn actor(&self) -> String {
        format!("user:{}", self.user.id)
    }

    pub fn viewer(&self) -> app::views::Viewer {
        app::views::Viewer {
            user_id: self.user.id.clone(),
            username: self.user.username.clone(),
            tenant_id: self.user.tenant_id.clone(),
            roles: self.user.roles.clone(),
            csrf_token: self.session.csrf_token.clone(),
            unread_notices: 0,
            idle_timeout_secs: 0,
        }
    }

    pub fn resolver(&self) -> crate::commit::operations::Resolver {
        crate::commit::operations::Resolver {
            user_id: self.user.id.clone(),
            tenant_id: self.user.tenant_id.clone(),
            roles: self.user.roles.clone(),
        }
    }

    /// Names this user in the request's log line.
    pub fn record_in(&self, extensions: &axum::http::Extensions) {
        super::observe::record_principal(extensions, &self.user.tenant_id, || self.actor());
    }

    pub fn admin(&self) -> crate::decision::registry_changes::Admin {
        crate::decision::registry_changes::Admin {
            user_id: self.user.id.clone(),
            username: self.user.username.clone(),
            tenant_id: self.user.tenant_id.clone(),
            roles: self.user.roles.clone(),
        }
    }

    pub fn approver(&self, via: &'static str) -> crate::decision::approval::approve::Approver {
        crate::decision::approval::approve::Approver {
            user_id: self.user.id.clone(),
            tenant_id: self.user.tenant_id.clone(),
            roles: self.user.roles.clone(),
            approval_limits_minor: self.user.approval_limits_minor.clone(),
            amr: match self.session.amr.as_str() {
                // Signed in with a passkey: still not an assertion over a
                // payment, which alone makes an approval's amr `passkey`.
                super::passkey_sign_in::AMR => super::passkey_sign_in::AMR,
                "sso" => "sso",
                _ => "pwd",
            },
            via,
            step_up: None,
            not_duplicate: None,
            on_behalf_of: None,
        }
    }
}

/// What the session says about who signed in, not yet checked
/// ([`checked_user`] checks it). `None` when not signed in.
pub async fn signed_in(session: &Session) -> Result<Option<ConsoleSession>, ApiError> {
    session.get(SESSION_KEY).await.map_err(|e| ApiError::Internal(Box::new(e)))
}

/// Loads the signed-in user, enforcing the absolute timeout (the idle one is
/// the session store's expiry). `None` when not signed in.
pub async fn current_user(state: &AppState, session: &Session) -> Result<Option<CurrentUser>, ApiError> {
    match signed_in(session).await? {
        Some(data) => checked_user(state, session, data).await,
        None => Ok(None),
    }
}

/// The user `data` (the session's) names, if the session is within its
/// absolute timeout and they are still an active user of its tenant, with
/// the roles the session allows.
pub async fn checked_user(
    state: &AppState,
    session: &Session,
    data: ConsoleSession,
) -> Result<Option<CurrentUser>, ApiError> {
    let age = state.now().timestamp() - data.signed_in_at;
    if age < 0 || age as u64 > state.settings.console.absolute_timeout_secs {
        session.flush().await.map_err(|e| ApiError::Internal(Box::new(e)))?;
        return Ok(None);
    }
    let mut conn = state.db.reader().await?;
    let user = store::directory::user_by_id(&mut conn, &data.user_id)
        .await?
        .filter(|u| u.active && u.tenant_id == data.tenant_id)
        .map(|mut user| {
            if let Some(allowed) = &data.roles {
                user.roles.retain(|r| allowed.contains(r));
            }
            user
        });
    Ok(user.map(|user| CurrentUser { session: data, user }))
}

impl FromRequestParts<Shared> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Self::Rejection> {
        let session = Session::from_request_parts(parts, state).await.map_err(|_| ApiError::Unauthenticated)?;
        let user = current_user(state, &session).await?.ok_or(ApiError::Unauthenticated)?;
        user.record_in(&parts.extensions);
        Ok(user)
    }
}

impl axum::extract::OptionalFromRequestParts<Shared> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Option<Self>, Self::Rejection> {
        if let Some(user) = parts.extensions.get::<CurrentUser>() {
            return Ok(Some(user.clone()));
        }
        let session = Session::from_request_parts(parts, state).await.map_err(|_| ApiError::Unauthenticated)?;
        let user = current_user(state, &session).await?;
        if let Some(user) = &user {
            user.record_in(&parts.extensions);
        }
        Ok(user)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("wrong username or password")]
    Unauthenticated,
    #[error("too many failed sign-ins")]
    Throttled(Duration),
    /// The password was right, but the user's tenant signs in only through
    /// single sign-on (`[tenants.<id>] local_passwords = false`).
    #[error("this tenant signs in with single sign-on")]
    PasswordsDisabled,
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl From<SignInError> for ApiError {
    fn from(e: SignInError) -> Self {
        match e {
            SignInError::Unauthenticated => ApiError::Unauthenticated,
            SignInError::Throttled(wait) => ApiError::RetryAfter(wait),
            SignInError::PasswordsDisabled => {
                ApiError::ForbiddenBecause("this tenant signs in with single sign-on, not with a password")
            }
            SignInError::Api(e) => e,
        }
    }
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The client address for throttling: the TCP peer, or the client a listed
/// proxy forwarded (`console.trusted_proxies`, see `client_ip`).
pub fn client_address(state: &AppState, request: &axum::extract::Request) -> String {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    state.proxies.client(peer, request.headers())
}

/// The cookie naming a browser someone signed in from before
/// (`store::devices`): its random token, kept for 400 days.
pub const DEVICE_COOKIE: &str = "countersign_device";
const DEVICE_MAX_AGE_SECS: i64 = 400 * 24 * 3600;

/// The value of cookie `name`, if the browser sent it.
pub fn cookie_value(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_owned())
}

/// The `Set-Cookie` value remembering this browser for its user.
pub fn device_cookie(state: &AppState, token: &str) -> String {
    let secure = if state.settings.secure_cookies() { "; Secure" } else { "" };
    format!("{DEVICE_COOKIE}={token}; Path=/; Max-Age={DEVICE_MAX_AGE_SECS}; HttpOnly; SameSite=Strict{secure}")
}

fn token_sha256(token: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A successful sign-in: the user, and a new device token to set as
/// [`DEVICE_COOKIE`] when this browser was not known for them.
pub struct SignedIn {
    pub current: CurrentUser,
    pub new_device: Option<String>,
}

/// How long a sign-in from an unknown browser waits for its username's
/// turn when the username is past its failure limit.
const TURN_WAIT: Duration = Duration::from_secs(5);

/// Checks the password and starts a fresh session.
///
/// 1. A browser this user signed in from before (`device`, the
///    [`DEVICE_COOKIE`] token) is recognised; the attempt is then admitted
///    by the throttle on that browser's own failures only. Otherwise the
///    throttle counts it per (address, username), username and address,
///    *before* the password is checked (concurrent guesses cannot all get
///    through), and refuses (429) only past the pair's limit; past the
///    username's or the address's it slows instead (one check at a time, a
///    failure held a second), so guessing at someone never locks them out.
/// 2. The password is checked through the server's password gate (bounded
///    concurrency and memory, off the async executor); an unknown or inactive
///    user is checked against a dummy hash and gets the same answer.
/// 3. A user of a tenant whose local passwords are disabled is refused,
///    only now (someone who does not know the password learns nothing new),
///    and the attempt stays counted as a failure.
/// 4. On success the reserved failure is taken back, the session id is
///    cycled (a session fixed before sign-in is worthless), the sign-in is
///    audited, and an unknown browser gets a device token.
pub async fn sign_in(
    state: &AppState,
    session: &Session,
    (username, password): (&str, &str),
    address: &str,
    device: Option<&str>,
) -> Result<SignedIn, SignInError> {
    let user = {
        let mut conn = state.db.reader().await.map_err(ApiError::from)?;
        store::directory::user_by_username(&mut conn, username).await.map_err(ApiError::from)?
    };
    let known_device = match (device.map(token_sha256), &user) {
        (Some(hash), Some(u)) => {
            let owner = store::devices::owner(&state.db.read, &hash).await.map_err(ApiError::from)?;
            (owner.as_deref() == Some(u.id.as_str())).then_some(hash)
        }
        _ => None,
    };
    let admission = match state.throttle.admit(username, address, known_device.as_deref(), Instant::now()) {
        Ok(admission) => admission,
        Err(Refusal::Throttled(wait)) => {
            tracing::warn!(%address, "sign-in throttled");
            return Err(SignInError::Throttled(wait));
        }
        Err(Refusal::AddressBusy) => {
            tracing::warn!(%address, "sign-in refused: too many at once from this address");
            return Err(SignInError::Throttled(Duration::from_secs(1)));
        }
    };
    // Past the username's limit, unknown browsers take turns.
    let turn = if admission.username_over_limit {
        match state.throttle.turn(username, TURN_WAIT).await {
            Some(turn) => Some(turn),
            None => {
                tracing::warn!(%address, "sign-in refused: the username's turn did not come");
                return Err(SignInError::Throttled(Duration::from_secs(1)));
            }
        }
    } else {
        None
    };
    let hash = match &user {
        Some(u) if u.active => {
            crate::store::directory::password_hash(&state.db.read, &u.id).await.map_err(ApiError::from)?
        }
        _ => None,
    };
    let ok = match state.passwords.verify(password.to_owned(), hash).await {
        Ok(ok) => ok,
        Err(crate::people::password::Busy) => {
            tracing::warn!("sign-in refused: the password gate's queue is full");
            return Err(SignInError::Throttled(Duration::from_secs(1)));
        }
    };
    let Some(user) = user.filter(|u| ok && u.active) else {
        tracing::warn!(%address, "failed sign-in");
        if admission.address_over_limit || turn.is_some() {
            // Spraying from one place, or guessing at one person from many:
            // a failure holds the slot for a second (the right password is
            // never slowed).
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        drop(admission);
        return Err(SignInError::Unauthenticated);
    };
    drop(turn);
    if !state.settings.local_passwords(&user.tenant_id) {
        tracing::warn!(%address, "password sign-in refused: the tenant signs in with single sign-on");
        drop(admission);
        return Err(SignInError::PasswordsDisabled);
    }
    admission.succeeded();
    let new_device = match known_device {
        Some(_) => None,
        None => {
            let token = random_token();
            store::devices::insert(&state.db.write, &token_sha256(&token), &user.id, state.now())
                .await
                .map_err(ApiError::from)?;
            Some(token)
        }
    };
    let current = start_session(state, session, user, "pwd", None, serde_json::json!({"amr": "pwd"})).await?;
    Ok(SignedIn { current, new_device })
}

/// Starts `user`'s session after a successful sign-in of any kind: the
/// session id is cycled (a session fixed before sign-in is worthless), a
/// fresh CSRF token made, and `session.signed_in` audited with `audit`.
pub async fn start_session(
    state: &AppState,
    session: &Session,
    mut user: User,
    amr: &str,
    roles: Option<Vec<crate::domain::Role>>,
    audit: serde_json::Value,
) -> Result<CurrentUser, ApiError> {
    let internal = |e: tower_sessions::session::Error| ApiError::Internal(Box::new(e));
    session.cycle_id().await.map_err(internal)?;
    let data = ConsoleSession {
        user_id: user.id.clone(),
        tenant_id: user.tenant_id.clone(),
        csrf_token: random_token(),
        signed_in_at: state.now().timestamp(),
        amr: amr.into(),
        roles,
    };
    session.insert(SESSION_KEY, &data).await.map_err(internal)?;
    audit_session(state, &user, "session.signed_in", audit).await?;
    if let Some(allowed) = &data.roles {
        user.roles.retain(|r| allowed.contains(r));
    }
    Ok(CurrentUser { session: data, user })
}

async fn audit_session(state: &AppState, user: &User, action: &str, data: serde_json::Value) -> Result<(), ApiError> {
    let entry = store::audit::AuditEntry {
        tenant_id: Some(user.tenant_id.clone()),
        actor: format!("user:{}", user.id),
        action: action.into(),
        proposal_id: None,
        request_hash: None,
        data,
    };
    Ok(store::audit::append_alone(&state.db.write, &entry).await?)
}

/// Ends the session: its record is deleted (and, since the store never
/// re-inserts a record, stays deleted whatever request is still in flight
/// with it) and the cookie cleared. Audited when someone was signed in.
pub async fn sign_out(state: &AppState, session: &Session) -> Result<(), ApiError> {
    let signed_in = current_user(state, session).await.ok().flatten();
    session.flush().await.map_err(|e| ApiError::Internal(Box::new(e)))?;
    if let Some(current) = signed_in {
        audit_session(state, &current.user, "session.signed_out", serde_json::json!({})).await?;
    }
    Ok(())
}

/// Whether the request carries a session cookie. For a request nobody is
/// signed in by, the session it named has ended (signed out everywhere,
/// deactivated, expired).
pub fn cookie_sent(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(axum::http::header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|cookies| {
        cookies
            .split(';')
            .any(|c| c.trim_start().strip_prefix(super::SESSION_COOKIE).is_some_and(|v| v.starts_with('=')))
    })
}
