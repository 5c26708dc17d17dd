//! The Bot Framework adapter of Teams approvals (`countersign_core::notify::teams`):
//!
//! - **Inbound keys.** The OpenID metadata document (`teams.openid_metadata_url`)
//!   names the JWKS (`jwks_uri`); both are read on the first activity and
//!   kept for a day, and read again (at most once a minute) when a token
//!   names a key the set does not hold, so a rotation at Microsoft is
//!   followed without letting forged `kid`s make us fetch on every request.
//! - **The check** itself is the core's (`teams::token::verify`).
//! - **Outbound.** The bot's own token comes from Entra ID with the client
//!   credentials grant (`teams.app_id`, `teams.app_password`,
//!   `teams.token_scope`) and is kept until a minute before it expires;
//!   cards are POSTed or PUT to the Bot Connector with it, never following
//!   a redirect. Nothing here logs a token, a secret or a body.

use std::time::{Duration, Instant};

use secrecy::ExposeSecret;
use serde::Deserialize;
use tokio::sync::Mutex;

use countersign_core::config::TeamsSettings;
use countersign_core::notify::outbound::PostError;
use countersign_core::notify::teams::token::{self, Expect, KeySet, Refusal, Verified};
use countersign_core::notify::teams::{Connector, Method, Outgoing, SendError};

/// How long the key set is trusted before it is read again.
const KEYS_FOR: Duration = Duration::from_secs(24 * 3600);
/// At most one fetch for an unknown `kid` in this long.
const UNKNOWN_KID_REFETCH: Duration = Duration::from_secs(60);
/// One fetch of the metadata or the keys.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

struct CachedKeys {
    keys: KeySet,
    fetched: Instant,
}

struct CachedToken {
    token: secrecy::SecretString,
    until: Instant,
}

/// The server's side of the Bot Framework: its HTTP client, the keys
/// inbound tokens are checked against, and the bot's own token.
pub struct BotFramework {
    client: reqwest::Client,
    settings: TeamsSettings,
    keys: Mutex<Option<CachedKeys>>,
    token: Mutex<Option<CachedToken>>,
}

impl BotFramework {
    pub fn new(settings: &TeamsSettings) -> anyhow::Result<BotFramework> {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(BotFramework { client, settings: settings.clone(), keys: Mutex::new(None), token: Mutex::new(None) })
    }

    /// Checks an `Authorization` header's bearer token at `now` (unix seconds).
    pub async fn verify(&self, authorization: Option<&str>, now: i64) -> Result<Verified, Refusal> {
        let Some(app_id) = self.settings.app_id.as_deref() else {
            return Err(Refusal::NotConfigured);
        };
        let bearer = authorization
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(Refusal::MissingToken)?;
        let keys = self.keys_for(token::kid_of(bearer).as_deref()).await?;
        token::verify(bearer, &keys, Expect { issuer: &self.settings.issuer, audience: app_id }, now)
    }

    /// The key set, read again when it is old or lacks `kid` (rate-limited).
    async fn keys_for(&self, kid: Option<&str>) -> Result<KeySet, Refusal> {
        let mut cached = self.keys.lock().await;
        let fresh = cached.as_ref().is_some_and(|c| c.fetched.elapsed() < KEYS_FOR);
        let knows = |c: &CachedKeys| kid.is_none_or(|kid| c.keys.get(kid).is_some());
        let may_refetch = cached.as_ref().is_none_or(|c| c.fetched.elapsed() >= UNKNOWN_KID_REFETCH);
        let stale = !fresh || (!cached.as_ref().is_some_and(knows) && may_refetch);
        if stale {
            match self.fetch_keys().await {
                Ok(keys) => *cached = Some(CachedKeys { keys, fetched: Instant::now() }),
                Err(why) => {
                    tracing::warn!(why, "teams: the Bot Framework's keys cannot be read");
                    if cached.is_none() {
                        return Err(Refusal::KeysUnavailable);
                    }
                }
            }
        }
        Ok(cached.as_ref().map(|c| c.keys.clone()).unwrap_or_default())
    }

    async fn fetch_keys(&self) -> Result<KeySet, &'static str> {
        #[derive(Deserialize)]
        struct Metadata {
            jwks_uri: String,
        }
        let metadata: Metadata = self
            .client
            .get(&self.settings.openid_metadata_url)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|_| "the metadata document cannot be fetched")?
            .error_for_status()
            .map_err(|_| "the metadata document's answer is an error")?
            .json()
            .await
            .map_err(|_| "the metadata document is not the expected JSON")?;
        let jwks_uri = reqwest::Url::parse(&metadata.jwks_uri).map_err(|_| "jwks_uri is not a URL")?;
        let loopback = jwks_uri.host_str().is_some_and(|h| h == "127.0.0.1" || h == "localhost");
        if jwks_uri.scheme() != "https" && !(jwks_uri.scheme() == "http" && loopback) {
            return Err("jwks_uri is not https");
        }
        let body = self
            .client
            .get(jwks_uri)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|_| "the key set cannot be fetched")?
            .error_for_status()
            .map_err(|_| "the key set's answer is an error")?
            .bytes()
            .await
            .map_err(|_| "the key set cannot be read")?;
        KeySet::parse(&body).map_err(|_| "the key set is not a JWKS")
    }

    /// The bot's own token for the Bot Connector, from the cache or Entra ID.
    async fn bot_token(&self) -> Result<secrecy::SecretString, SendError> {
        let mut cached = self.token.lock().await;
        if let Some(t) = cached.as_ref().filter(|t| Instant::now() < t.until) {
            return Ok(t.token.clone());
        }
        let (Some(app_id), Some(password)) = (&self.settings.app_id, &self.settings.app_password) else {
            return Err(SendError::Token("teams.app_id and teams.app_password are needed"));
        };
        #[derive(Deserialize)]
        struct Granted {
            access_token: String,
            expires_in: Option<u64>,
        }
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", app_id.as_str()),
            ("client_secret", password.expose_secret()),
            ("scope", self.settings.token_scope.as_str()),
        ];
        let answer = self
            .client
            .post(&self.settings.token_url)
            .timeout(FETCH_TIMEOUT)
            .form(&form)
            .send()
            .await
            .map_err(|_| SendError::Token("no answer from the token endpoint"))?;
        if !answer.status().is_success() {
            return Err(SendError::Token("the token endpoint refused the bot's credentials"));
        }
        let granted: Granted = answer.json().await.map_err(|_| SendError::Token("the token answer is not JSON"))?;
        let lifetime = Duration::from_secs(granted.expires_in.unwrap_or(3600).saturating_sub(60));
        let token = secrecy::SecretString::from(granted.access_token);
        *cached = Some(CachedToken { token: token.clone(), until: Instant::now() + lifetime });
        Ok(token)
    }
}

#[async_trait::async_trait]
impl Connector for BotFramework {
    async fn send(&self, out: Outgoing<'_>) -> Result<(), SendError> {
        let token = self.bot_token().await?;
        let request = match out.method {
            Method::Post => self.client.post(out.url.clone()),
            Method::Put => self.client.put(out.url.clone()),
        };
        let answer = request
            .timeout(out.timeout)
            .bearer_auth(token.expose_secret())
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(out.body.to_vec())
            .send()
            .await;
        match answer {
            Ok(a) if a.status().is_success() => Ok(()),
            Ok(a) => {
                if a.status() == reqwest::StatusCode::UNAUTHORIZED {
                    // A token Entra ID revoked early: get a new one next time.
                    *self.token.lock().await = None;
                }
                Err(SendError::Status(a.status().as_u16()))
            }
            Err(e) if e.is_timeout() => Err(SendError::Transport(PostError::Timeout)),
            Err(e) if e.is_connect() => Err(SendError::Transport(PostError::Connect)),
            Err(_) => Err(SendError::Transport(PostError::Transport)),
        }
    }
}
