//! The Bot Framework's bearer token on every inbound activity, checked as
//! Microsoft specifies ("Authenticate requests from the Bot Connector
//! service to your bot"): a JWT in `Authorization: Bearer …`, signed RS256
//! (nothing else: no `none`, no HMAC with a public key as its secret) by a
//! key of the JWKS that the Bot Framework's OpenID metadata document names
//! (`jwks_uri`), found by `kid`; `iss` is the Bot Framework's
//! (`https://api.botframework.com`), `aud` is this bot's Microsoft App ID,
//! `exp` and `nbf` hold on the server's clock within 5 minutes of skew, the
//! `serviceUrl` claim equals the activity's `serviceUrl`, and the signing
//! key is endorsed for the activity's channel (`msteams`).
//!
//! The keys are fetched by the server (`server::teams`); this module is the
//! check itself, over a [`KeySet`] and an injected clock, so every way it
//! can fail is a unit test.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

/// The clock skew tolerated on `exp` and `nbf` (Microsoft: five minutes).
pub const LEEWAY_SECS: i64 = 5 * 60;

/// The only channel this bot serves.
pub const CHANNEL: &str = "msteams";

/// Why an inbound request was refused; [`Refusal::reason`] is the
/// machine-readable form the 401 carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Teams is not configured (no teams.app_id)")]
    NotConfigured,
    #[error("no bearer token")]
    MissingToken,
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token is not signed with RS256")]
    Algorithm,
    #[error("the token's key is not in the Bot Framework's key set")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token's issuer is not the Bot Framework")]
    Issuer,
    #[error("the token is not for this bot")]
    Audience,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token's serviceUrl is not the activity's")]
    ServiceUrl,
    #[error("the activity is not from Microsoft Teams")]
    Channel,
    #[error("the signing key is not endorsed for the activity's channel")]
    Endorsement,
    #[error("the activity was seen before")]
    Replayed,
    #[error("the Bot Framework's keys cannot be read")]
    KeysUnavailable,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::NotConfigured => "not_configured",
            Refusal::MissingToken => "missing_token",
            Refusal::Malformed => "malformed_token",
            Refusal::Algorithm => "bad_algorithm",
            Refusal::UnknownKey => "unknown_key",
            Refusal::BadSignature => "bad_signature",
            Refusal::Issuer => "bad_issuer",
            Refusal::Audience => "bad_audience",
            Refusal::Expired => "expired",
            Refusal::NotYetValid => "not_yet_valid",
            Refusal::ServiceUrl => "service_url_mismatch",
            Refusal::Channel => "bad_channel",
            Refusal::Endorsement => "not_endorsed",
            Refusal::Replayed => "replayed",
            Refusal::KeysUnavailable => "keys_unavailable",
        }
    }
}

/// One RSA signing key of the Bot Framework's JWKS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKey {
    pub kid: String,
    /// Modulus and exponent, base64url as the JWKS gives them.
    pub n: String,
    pub e: String,
    /// The channels the key may sign for (`endorsements`).
    pub endorsements: Vec<String>,
}

/// The key set read from `jwks_uri`: its RSA signature keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySet {
    pub keys: Vec<SigningKey>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<RawJwk>,
}

#[derive(Deserialize)]
struct RawJwk {
    kty: String,
    kid: Option<String>,
    #[serde(rename = "use")]
    usage: Option<String>,
    n: Option<String>,
    e: Option<String>,
    #[serde(default)]
    endorsements: Vec<String>,
}

impl KeySet {
    /// Reads a JWKS document; keys that are not RSA signature keys with a
    /// `kid` are left out.
    pub fn parse(jwks: &[u8]) -> Result<KeySet, serde_json::Error> {
        let raw: RawJwks = serde_json::from_slice(jwks)?;
        let keys = raw
            .keys
            .into_iter()
            .filter(|k| k.kty == "RSA" && k.usage.as_deref().is_none_or(|u| u == "sig"))
            .filter_map(|k| Some(SigningKey { kid: k.kid?, n: k.n?, e: k.e?, endorsements: k.endorsements }))
            .collect();
        Ok(KeySet { keys })
    }

    pub fn get(&self, kid: &str) -> Option<&SigningKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

/// What a token must say.
#[derive(Debug, Clone, Copy)]
pub struct Expect<'a> {
    /// `teams.issuer` (the Bot Framework's, `https://api.botframework.com`).
    pub issuer: &'a str,
    /// `teams.app_id`: the bot's Microsoft App ID.
    pub audience: &'a str,
}

/// A token whose signature and claims held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The `serviceUrl` claim (to be compared with the activity's).
    pub service_url: Option<String>,
    /// `exp`: until when the same request could verify again.
    pub expires_at: i64,
    /// The signing key's endorsements.
    pub endorsements: Vec<String>,
}

/// The `kid` a token names in its header, if it is well formed enough to
/// say (the server fetches the keys again for a `kid` it does not know).
pub fn kid_of(token: &str) -> Option<String> {
    header(token).ok().and_then(|h| h.get("kid").and_then(Value::as_str).map(str::to_owned))
}

fn header(token: &str) -> Result<Value, Refusal> {
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(Refusal::Malformed);
    };
    let bytes = URL_SAFE_NO_PAD.decode(head).map_err(|_| Refusal::Malformed)?;
    serde_json::from_slice::<Value>(&bytes).ok().filter(Value::is_object).ok_or(Refusal::Malformed)
}

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    aud: Option<Value>,
    exp: Option<i64>,
    nbf: Option<i64>,
    #[serde(rename = "serviceUrl", alias = "serviceurl")]
    service_url: Option<String>,
}

/// Checks the token's header, signature and claims at `now` (unix seconds).
pub fn verify(token: &str, keys: &KeySet, expect: Expect<'_>, now: i64) -> Result<Verified, Refusal> {
    let head = header(token)?;
    // Exactly RS256, read from the header before any key is chosen: `none`,
    // HS256 (a public key used as an HMAC secret) and every other algorithm
    // stop here.
    if head.get("alg").and_then(Value::as_str) != Some("RS256") {
        return Err(Refusal::Algorithm);
    }
    let kid = head.get("kid").and_then(Value::as_str).ok_or(Refusal::UnknownKey)?;
    let key = keys.get(kid).ok_or(Refusal::UnknownKey)?;
    let decoding = jsonwebtoken::DecodingKey::from_rsa_components(&key.n, &key.e).map_err(|_| Refusal::UnknownKey)?;
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    // Time, issuer and audience are checked below, on the server's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = match jsonwebtoken::decode::<Claims>(token, &decoding, &validation) {
        Ok(data) => data.claims,
        Err(e) => {
            return Err(match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => Refusal::BadSignature,
                jsonwebtoken::errors::ErrorKind::InvalidAlgorithm => Refusal::Algorithm,
                _ => Refusal::Malformed,
            })
        }
    };
    if claims.iss.as_deref() != Some(expect.issuer) {
        return Err(Refusal::Issuer);
    }
    let audience_ok = match &claims.aud {
        Some(Value::String(aud)) => aud == expect.audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(expect.audience)),
        _ => false,
    };
    if !audience_ok || expect.audience.is_empty() {
        return Err(Refusal::Audience);
    }
    let exp = claims.exp.ok_or(Refusal::Expired)?;
    if now > exp + LEEWAY_SECS {
        return Err(Refusal::Expired);
    }
    if claims.nbf.is_some_and(|nbf| now + LEEWAY_SECS < nbf) {
        return Err(Refusal::NotYetValid);
    }
    Ok(Verified { service_url: claims.service_url, expires_at: exp, endorsements: key.endorsements.clone() })
}

/// Checks a verified token against the activity it carried: the same
/// `serviceUrl` (so a token issued for one service cannot speak for
/// another), a Teams activity, and a key endorsed for Teams.
pub fn check_activity(verified: &Verified, service_url: &str, channel_id: &str) -> Result<(), Refusal> {
    let same = |a: &str, b: &str| a.trim_end_matches('/').eq_ignore_ascii_case(b.trim_end_matches('/'));
    if !verified.service_url.as_deref().is_some_and(|claimed| same(claimed, service_url)) {
        return Err(Refusal::ServiceUrl);
    }
    if channel_id != CHANNEL {
        return Err(Refusal::Channel);
    }
    if !verified.endorsements.iter().any(|e| e == channel_id) {
        return Err(Refusal::Endorsement);
    }
    Ok(())
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
