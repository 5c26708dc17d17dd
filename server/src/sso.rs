//! Single sign-on with OpenID Connect: the console as a relying party of the
//! identity providers in `[oidc.providers]` (docs/DECISIONS.md, "Single
//! sign-on"; threats and tests in docs/SECURITY.md).
//!
//! Two steps, each one call:
//!
//! 1. [`start`]: the provider's discovery document (cached, see
//!    [`METADATA_TTL`]), a fresh `state`, `nonce` and PKCE verifier (S256)
//!    remembered server-side under the SHA-256 of a random value that goes
//!    to the browser in a short-lived cookie, and the authorization URL to
//!    send the browser to.
//! 2. [`finish`], when the provider sends the browser back: the remembered
//!    sign-in is *taken* (deleted) by the cookie, so it serves one callback;
//!    the `state` must match it, and an `iss` in the answer (RFC 9207) must
//!    be the provider's issuer; the code is exchanged with the PKCE
//!    verifier; the ID token is verified by the `openidconnect` crate
//!    (signature against the provider's JWKS, `iss` the configured issuer,
//!    `aud` this client, `exp`, `nonce` the remembered one); then the user
//!    is the one linked to exactly (`iss`, `sub`): never found by e-mail,
//!    never created. A tenant claim, when configured, must name that user's
//!    tenant; a roles claim, when configured, only narrows the registry's
//!    roles.
//!
//! Refusals are typed ([`Refusal`]); no token, code or claim value is ever
//! logged or kept: the subject appears only as a SHA-256.

use chrono::Duration;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata, CoreRevocableToken,
    CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse,
};
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Instant;
use subtle::ConstantTimeEq;

use crate::config::{OidcProvider, Settings};
use crate::domain::{ReturnPath, Role};
use crate::platform::deps::{Clock, Config, Store};
use crate::store::{self, directory::User, oidc::PendingLogin, StoreError};

/// How long a browser has to come back from the provider.
pub const LOGIN_TTL_SECS: i64 = 600;
/// How long a provider's discovery document (and its keys) is reused.
pub const METADATA_TTL: std::time::Duration = std::time::Duration::from_secs(300);
/// The pre-sign-in cookie: a random value whose SHA-256 finds the sign-in.
pub const LOGIN_COOKIE: &str = "countersign_oidc";

/// Every claim of the ID token besides the standard ones, kept as JSON so
/// that the configured tenant and roles claims can be read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    claims: BTreeMap<String, Value>,
}

impl AdditionalClaims for OtherClaims {}

type TokenResponse = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

/// The crate's client with [`OtherClaims`], as discovery configures it.
type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// What single sign-on needs: the database, the clock, the settings, and
/// the providers' client and cached discovery ([`Sso`], the server's).
pub trait SingleSignOn: Store + Clock + Config {
    fn sso(&self) -> &Sso;
}

/// The providers and what is cached of them; one per server.
pub struct Sso {
    http: reqwest::Client,
    metadata: tokio::sync::Mutex<BTreeMap<String, (Instant, CoreProviderMetadata)>>,
}

impl Default for Sso {
    fn default() -> Self {
        // No redirects (the crate's advice against SSRF), short timeouts.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(5))
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .expect("a reqwest client with rustls");
        Sso { http, metadata: Default::default() }
    }
}

/// Why a single sign-on was refused. The page says a sentence per
/// [`Refusal::code`]; the log and (once the provider vouched for someone)
/// the audit trail say [`Refusal::reason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such provider")]
    UnknownProvider,
    /// Discovery failed: unreachable, unreadable, or its issuer is not the
    /// configured one.
    #[error("the provider is unavailable or misconfigured")]
    Unavailable,
    /// No pre-sign-in cookie, or no (unexpired) sign-in behind it: too
    /// late, already used (a replayed callback), or never started here.
    #[error("no sign-in in progress for this browser")]
    NoSignIn,
    #[error("the state does not match")]
    StateMismatch,
    /// The answer's `iss` (RFC 9207) is not the provider's issuer.
    #[error("the answer comes from another issuer")]
    IssuerMismatch,
    /// The provider answered with an error (the person cancelled, …).
    #[error("the provider refused: {0}")]
    ProviderError(String),
    /// The token endpoint refused the code (used, expired, PKCE mismatch).
    #[error("the code was refused")]
    CodeRefused,
    /// The ID token failed verification; the reason names the check.
    #[error("the ID token is invalid: {0}")]
    InvalidIdToken(&'static str),
    /// Nobody is linked to this issuer and subject (or they are inactive).
    #[error("no active user is linked to this identity")]
    NotLinked,
    /// The linked user's tenant may not sign in through this provider, or
    /// the tenant claim names another tenant.
    #[error("wrong tenant")]
    WrongTenant,
    /// The roles claim leaves the user no role.
    #[error("no role")]
    NoRole,
    #[error("storage: {0}")]
    Store(String),
}

impl Refusal {
    /// The sign-in page's `error` code.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::UnknownProvider | Refusal::Unavailable | Refusal::Store(_) => "sso_unavailable",
            Refusal::NoSignIn => "sso_expired",
            Refusal::ProviderError(_) => "sso_cancelled",
            Refusal::NotLinked => "sso_not_linked",
            Refusal::WrongTenant | Refusal::NoRole => "sso_denied",
            Refusal::StateMismatch | Refusal::IssuerMismatch | Refusal::CodeRefused | Refusal::InvalidIdToken(_) => {
                "sso_failed"
            }
        }
    }

    /// A fixed word for the log and the audit trail.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::UnknownProvider => "unknown_provider",
            Refusal::Unavailable => "provider_unavailable",
            Refusal::NoSignIn => "no_sign_in_in_progress",
            Refusal::StateMismatch => "state_mismatch",
            Refusal::IssuerMismatch => "issuer_mismatch",
            Refusal::ProviderError(_) => "provider_error",
            Refusal::CodeRefused => "code_refused",
            Refusal::InvalidIdToken(why) => why,
            Refusal::NotLinked => "not_linked",
            Refusal::WrongTenant => "wrong_tenant",
            Refusal::NoRole => "no_role",
            Refusal::Store(_) => "storage",
        }
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Store(e.to_string())
    }
}

/// A provider as the sign-in page lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub name: String,
}

/// The configured providers, by id.
pub fn providers(settings: &Settings) -> Vec<Listed> {
    settings.oidc.providers.iter().map(|(id, p)| Listed { id: id.clone(), name: p.name.clone() }).collect()
}

/// Where to send the browser, and the value of its pre-sign-in cookie.
#[derive(Debug)]
pub struct Started {
    pub authorize_url: String,
    pub cookie: String,
}

/// Starts a sign-in through provider `id`; `next` is where to land after.
pub async fn start(state: &impl SingleSignOn, id: &str, next: Option<&ReturnPath>) -> Result<Started, Refusal> {
    let provider = state.settings().oidc.providers.get(id).ok_or(Refusal::UnknownProvider)?;
    let client = client(state, id, provider).await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
        .set_pkce_challenge(challenge);
    for scope in &provider.scopes {
        if scope != "openid" {
            request = request.add_scope(Scope::new(scope.clone()));
        }
    }
    let (url, csrf, nonce) = request.url();
    let cookie = random_hex();
    let now = state.now();
    let login = PendingLogin {
        provider: id.to_owned(),
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        return_to: next.map(|n| n.as_str().to_owned()),
        expires_at: now + Duration::seconds(LOGIN_TTL_SECS),
    };
    store::oidc::insert(&state.db().write, &sha256_hex(&cookie), &login, now).await?;
    Ok(Started { authorize_url: url.to_string(), cookie })
}

/// What the provider sent the browser back with (the callback's query).
#[derive(Debug, Default, Clone, Deserialize)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    /// RFC 9207: the issuer of this answer, when the provider says it.
    pub iss: Option<String>,
    pub error: Option<String>,
}

/// Someone the provider vouched for and the registry knows.
#[derive(Debug)]
pub struct SignedIn {
    pub user: User,
    /// The roles of this session: the registry's, narrowed by the roles
    /// claim when one is configured.
    pub roles: Vec<Role>,
    pub provider: String,
    pub issuer: String,
    /// SHA-256 (hex) of the subject: what the audit trail keeps.
    pub subject_sha256: String,
    /// A checked `ReturnPath`, or `None` for the queue.
    pub return_to: Option<String>,
}

/// A refusal after the provider vouched for someone: audited with who.
#[derive(Debug)]
pub struct Refused {
    pub refusal: Refusal,
    /// Provider, issuer and subject hash, once the ID token was verified.
    pub identity: Option<(String, String, String)>,
    /// The linked user's tenant, if one was found.
    pub tenant: Option<String>,
}

impl From<Refusal> for Refused {
    fn from(refusal: Refusal) -> Self {
        Refused { refusal, identity: None, tenant: None }
    }
}

/// Finishes the sign-in of the browser holding pre-sign-in cookie `cookie`.
pub async fn finish(state: &impl SingleSignOn, cookie: Option<&str>, answer: Callback) -> Result<SignedIn, Refused> {
    let cookie = cookie.filter(|c| !c.is_empty()).ok_or(Refusal::NoSignIn)?;
    // Taken whatever happens next: one callback per sign-in.
    let login = store::oidc::take(&state.db().write, &sha256_hex(cookie), state.now())
        .await
        .map_err(Refusal::from)?
        .ok_or(Refusal::NoSignIn)?;
    let presented = answer.state.as_deref().unwrap_or_default();
    if !bool::from(presented.as_bytes().ct_eq(login.state.as_bytes())) {
        return Err(Refusal::StateMismatch.into());
    }
    let id = login.provider.as_str();
    let provider = state.settings().oidc.providers.get(id).ok_or(Refusal::UnknownProvider)?;
    if answer.iss.as_deref().is_some_and(|iss| iss != provider.issuer) {
        return Err(Refusal::IssuerMismatch.into());
    }
    if let Some(error) = answer.error {
        return Err(Refusal::ProviderError(error.chars().filter(|c| c.is_ascii_graphic()).take(64).collect()).into());
    }
    let code = answer.code.filter(|c| !c.is_empty()).ok_or(Refusal::CodeRefused)?;
    let client = client(state, id, provider).await?;
    let exchange = client.exchange_code(AuthorizationCode::new(code)).map_err(|_| Refusal::Unavailable)?;
    let tokens = exchange
        .set_pkce_verifier(PkceCodeVerifier::new(login.pkce_verifier.clone()))
        .request_async(&state.sso().http)
        .await
        .map_err(|e| {
            tracing::warn!(provider = id, error = exchange_error(&e), "single sign-on: the token endpoint refused");
            Refusal::CodeRefused
        })?;
    let id_token = tokens.extra_fields().id_token().ok_or(Refusal::InvalidIdToken("no_id_token"))?;
    let verifier = client.id_token_verifier();
    let claims = id_token.claims(&verifier, &Nonce::new(login.nonce.clone())).map_err(|e| claims_error(&e))?;
    // The crate compared `iss` with the discovered issuer, which discovery
    // compared with the configured one; say it here once more, exactly.
    if claims.issuer().as_str() != provider.issuer {
        return Err(Refusal::InvalidIdToken("issuer_mismatch").into());
    }
    let subject = claims.subject().as_str();
    let identity = (id.to_owned(), provider.issuer.clone(), sha256_hex(subject));
    let refused = |refusal, tenant: Option<&str>| Refused {
        refusal,
        identity: Some(identity.clone()),
        tenant: tenant.map(str::to_owned),
    };

    let user = {
        let mut conn = state.db().reader().await.map_err(Refusal::from)?;
        store::directory::user_by_oidc(&mut conn, &provider.issuer, subject).await.map_err(Refusal::from)?
    };
    let Some(user) = user.filter(|u| u.active) else { return Err(refused(Refusal::NotLinked, None)) };
    let extra = &claims.additional_claims().claims;
    if !provider.tenants.contains(&user.tenant_id) || !tenant_claim_allows(provider, extra, &user.tenant_id) {
        return Err(refused(Refusal::WrongTenant, Some(user.tenant_id.as_str())));
    }
    let user = match &provider.groups_claim {
        Some(name) => record_groups(state, id, &user, &group_names(claim(extra, name)))
            .await
            .map_err(|refusal| refused(refusal, Some(user.tenant_id.as_str())))?,
        None => user,
    };
    let tenant = Some(user.tenant_id.as_str());
    let roles = narrowed_roles(provider, extra, &user.roles);
    if roles.is_empty() {
        return Err(refused(Refusal::NoRole, tenant));
    }
    let (_, issuer, subject_sha256) = identity;
    Ok(SignedIn {
        user,
        roles,
        provider: id.to_owned(),
        issuer,
        subject_sha256,
        return_to: login.return_to.filter(|r| ReturnPath::parse(r).is_some()),
    })
}

/// The audit entry of a refusal after the provider vouched for someone.
pub async fn audit_refusal(state: &impl SingleSignOn, refused: &Refused) -> Result<(), StoreError> {
    let Some((provider, issuer, subject_sha256)) = &refused.identity else { return Ok(()) };
    let entry = store::audit::AuditEntry {
        tenant_id: refused.tenant.clone(),
        actor: "system:sso".into(),
        action: "session.sso_refused".into(),
        proposal_id: None,
        request_hash: None,
        data: json!({
            "provider": provider,
            "issuer": issuer,
            "subject_sha256": subject_sha256,
            "reason": refused.refusal.reason(),
        }),
    };
    store::audit::append_alone(&state.db().write, &entry).await
}

/// The client for `provider`, from its (cached) discovery document.
async fn client(state: &impl SingleSignOn, id: &str, provider: &OidcProvider) -> Result<OidcClient, Refusal> {
    let metadata = metadata(state, id, provider).await?;
    let secret = provider.client_secret.as_ref().map(|s| ClientSecret::new(s.expose_secret().to_owned()));
    let redirect = RedirectUrl::new(provider.redirect_url(&state.settings().public_url)).map_err(|_| {
        tracing::warn!(provider = id, "single sign-on: the redirect URL does not parse");
        Refusal::Unavailable
    })?;
    Ok(OidcClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.clone()), secret)
        .set_redirect_uri(redirect))
}

/// The provider's discovery document, fetched at most every
/// [`METADATA_TTL`]. The crate refuses one whose `issuer` is not exactly the
/// configured issuer.
async fn metadata(
    state: &impl SingleSignOn,
    id: &str,
    provider: &OidcProvider,
) -> Result<CoreProviderMetadata, Refusal> {
    let mut cache = state.sso().metadata.lock().await;
    if let Some((at, metadata)) = cache.get(id) {
        if at.elapsed() < METADATA_TTL {
            return Ok(metadata.clone());
        }
    }
    let issuer = IssuerUrl::new(provider.issuer.clone()).map_err(|_| Refusal::Unavailable)?;
    let metadata = CoreProviderMetadata::discover_async(issuer, &state.sso().http).await.map_err(|e| {
        let why = match &e {
            openidconnect::DiscoveryError::Validation(_) => "its discovery document is invalid or names another issuer",
            openidconnect::DiscoveryError::Request(_) => "it cannot be reached",
            openidconnect::DiscoveryError::Response(..) => "it answered with an error",
            openidconnect::DiscoveryError::Parse(_) => "its answer cannot be read",
            _ => "discovery failed",
        };
        tracing::warn!(provider = id, reason = why, "single sign-on: the provider is unavailable");
        Refusal::Unavailable
    })?;
    cache.insert(id.to_owned(), (Instant::now(), metadata.clone()));
    Ok(metadata)
}

/// The token endpoint's refusal in a word (its `error` code), never its text.
fn exchange_error<RE: std::error::Error + 'static>(
    e: &openidconnect::RequestTokenError<RE, StandardErrorResponse<CoreErrorResponseType>>,
) -> String {
    match e {
        openidconnect::RequestTokenError::ServerResponse(r) => r.error().to_string(),
        openidconnect::RequestTokenError::Request(_) => "unreachable".into(),
        openidconnect::RequestTokenError::Parse(..) => "unreadable answer".into(),
        openidconnect::RequestTokenError::Other(_) => "other".into(),
    }
}

/// Which check of the ID token failed (never the values compared).
fn claims_error(e: &openidconnect::ClaimsVerificationError) -> Refusal {
    use openidconnect::ClaimsVerificationError as E;
    Refusal::InvalidIdToken(match e {
        E::Expired(_) => "expired",
        E::InvalidAudience(_) => "audience_mismatch",
        E::InvalidIssuer(_) => "issuer_mismatch",
        E::InvalidNonce(_) => "nonce_mismatch",
        E::InvalidSubject(_) => "bad_subject",
        E::SignatureVerification(_) => "bad_signature",
        _ => "invalid",
    })
}

/// A claim by name; a name with dots that is not itself a claim is a path
/// into nested objects (Keycloak's `realm_access.roles`).
fn claim<'a>(claims: &'a BTreeMap<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(name) {
        return Some(v);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value)
}

/// A claim's strings: a string, or an array of strings (others ignored).
fn strings(value: Option<&Value>) -> Vec<&str> {
    match value {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether the tenant claim (if the provider has one) names `tenant`.
/// The groups claim's names: at most [`MAX_GROUPS`], each 1–256
/// characters (others are ignored, as an unknown group is).
fn group_names(value: Option<&Value>) -> Vec<String> {
    let mut names: Vec<String> =
        strings(value).into_iter().filter(|n| (1..=256).contains(&n.chars().count())).map(str::to_owned).collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_GROUPS);
    names
}

/// The most groups a sign-in records (a provider that names more sends
/// an overage claim instead, which is not read).
pub const MAX_GROUPS: usize = 256;

/// Records the groups the provider named for `user` at this sign-in and
/// recomputes what they grant (audited as `user.idp_grants` when that
/// changed), in one transaction; the user as they now are.
async fn record_groups(state: &impl SingleSignOn, id: &str, user: &User, names: &[String]) -> Result<User, Refusal> {
    let mut tx = state.db().begin().await?;
    store::people::set_oidc_groups(&mut tx, &user.id, names).await?;
    let actor = format!("sso:{id}");
    crate::people::groups::sync(&mut tx, state.settings(), &user.tenant_id, &user.id, &actor).await?;
    tx.commit().await?;
    let mut conn = state.db().reader().await?;
    store::directory::user_by_id(&mut conn, &user.id).await?.filter(|u| u.active).ok_or(Refusal::NotLinked)
}

fn tenant_claim_allows(provider: &OidcProvider, claims: &BTreeMap<String, Value>, tenant: &str) -> bool {
    let Some(name) = &provider.tenant_claim else { return true };
    let values = strings(claim(claims, name));
    values.len() == 1 && provider.tenant_values.get(values[0]).map_or(values[0], String::as_str) == tenant
}

/// The registry's `roles` that the roles claim (if the provider has one)
/// also lists: the provider can take roles away, never add one.
fn narrowed_roles(provider: &OidcProvider, claims: &BTreeMap<String, Value>, roles: &[Role]) -> Vec<Role> {
    let Some(name) = &provider.roles_claim else { return roles.to_vec() };
    let granted: Vec<Role> = strings(claim(claims, name))
        .into_iter()
        .filter_map(|v| provider.role_values.get(v).map_or(Role::parse(v), |mapped| Role::parse(mapped)))
        .collect();
    roles.iter().copied().filter(|r| granted.contains(r)).collect()
}

fn random_hex() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub use crate::platform::digest::sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(tenant_claim: Option<&str>, roles_claim: Option<&str>) -> OidcProvider {
        OidcProvider {
            name: "IdP".into(),
            issuer: "https://idp.example".into(),
            client_id: "countersign".into(),
            client_secret: None,
            client_secret_file: None,
            redirect_url: None,
            scopes: vec![],
            tenants: vec!["acme".into()],
            tenant_claim: tenant_claim.map(str::to_owned),
            tenant_values: BTreeMap::from([("org-42".to_owned(), "acme".to_owned())]),
            roles_claim: roles_claim.map(str::to_owned),
            role_values: BTreeMap::from([("cs-approvers".to_owned(), "approver".to_owned())]),
            groups_claim: None,
        }
    }

    #[test]
    fn group_names_are_strings_of_a_sane_length_once_each() {
        let c = claims(json!({"groups": ["b", "a", "b", "", 7], "one": "solo", "nested": {"g": ["x"]}}));
        assert_eq!(group_names(claim(&c, "groups")), ["a", "b"]);
        assert_eq!(group_names(claim(&c, "one")), ["solo"]);
        assert_eq!(group_names(claim(&c, "nested.g")), ["x"]);
        assert!(group_names(claim(&c, "missing")).is_empty());
        let long = claims(json!({"groups": ["x".repeat(257)]}));
        assert!(group_names(claim(&long, "groups")).is_empty());
        let many: Vec<String> = (0..400).map(|i| format!("g{i:03}")).collect();
        assert_eq!(group_names(claim(&claims(json!({ "groups": many })), "groups")).len(), MAX_GROUPS);
    }

    fn claims(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn roles_are_only_ever_narrowed() {
        let p = provider(None, Some("roles"));
        let registry = [Role::Approver, Role::Admin];
        assert_eq!(narrowed_roles(&p, &claims(json!({"roles": ["approver"]})), &registry), [Role::Approver]);
        assert_eq!(narrowed_roles(&p, &claims(json!({"roles": "cs-approvers"})), &registry), [Role::Approver]);
        // A role the registry does not give is never granted.
        assert_eq!(narrowed_roles(&p, &claims(json!({"roles": ["admin", "viewer"]})), &[Role::Approver]), []);
        assert_eq!(narrowed_roles(&p, &claims(json!({})), &registry), []);
        assert_eq!(narrowed_roles(&p, &claims(json!({"roles": 7})), &registry), []);
        // Without a roles claim configured, the registry's roles stand.
        assert_eq!(narrowed_roles(&provider(None, None), &claims(json!({"roles": []})), &registry), registry);
        // Nested claims (Keycloak).
        let keycloak = provider(None, Some("realm_access.roles"));
        let nested = claims(json!({"realm_access": {"roles": ["admin"]}}));
        assert_eq!(narrowed_roles(&keycloak, &nested, &registry), [Role::Admin]);
    }

    #[test]
    fn the_tenant_claim_must_name_the_users_tenant() {
        let p = provider(Some("org"), None);
        assert!(tenant_claim_allows(&p, &claims(json!({"org": "acme"})), "acme"));
        assert!(tenant_claim_allows(&p, &claims(json!({"org": "org-42"})), "acme"));
        assert!(!tenant_claim_allows(&p, &claims(json!({"org": "globex"})), "acme"));
        assert!(!tenant_claim_allows(&p, &claims(json!({})), "acme"), "a missing claim is refused");
        assert!(!tenant_claim_allows(&p, &claims(json!({"org": ["acme", "globex"]})), "acme"), "one tenant only");
        assert!(tenant_claim_allows(&provider(None, None), &claims(json!({})), "acme"));
    }

    #[test]
    fn refusal_codes_and_reasons_carry_no_values() {
        let r = Refusal::ProviderError("access_denied".into());
        assert_eq!((r.code(), r.reason()), ("sso_cancelled", "provider_error"));
        assert_eq!(Refusal::InvalidIdToken("nonce_mismatch").reason(), "nonce_mismatch");
        assert_eq!(Refusal::NoSignIn.code(), "sso_expired");
    }
}
