//! Web Push: a message encrypted for one browser (RFC 8291, the `ece`
//! crate's aes128gcm, RFC 8188), posted to its push service (RFC 8030) with
//! a VAPID authorization (RFC 8292: an ES256 JWT naming the push service's
//! origin, signed by this deployment's VAPID key, and that key). The push
//! service sees only ciphertext; the endpoint URL must name an allowed
//! host, checked when the browser subscribes and again before each post.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::decision::approval::keys::KeyStore;
use crate::notify::outbound::{Allowlist, Post, Poster};
use crate::store::reach::Subscription;

/// How long a VAPID JWT is valid (RFC 8292 allows at most 24 hours).
const VAPID_LIFETIME_SECS: i64 = 12 * 3600;

/// The refusal of an endpoint whose host is not allowed.
const NOT_ALLOWED: &str = "names a host that is not in notifications.push.allowed_hosts";

/// The push services subscriptions may name.
pub fn allowlist(hosts: &[String]) -> Allowlist {
    Allowlist::named(hosts, NOT_ALLOWED)
}

/// Why a browser's subscription is refused. Never repeats the endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSubscription {
    #[error("endpoint {0}")]
    Endpoint(&'static str),
    #[error("keys.p256dh must be an uncompressed P-256 public key, base64url")]
    Key,
    #[error("keys.auth must be 16 bytes, base64url")]
    Auth,
}

/// Checks what a browser gave when subscribing.
pub fn check_subscription(allow: &Allowlist, endpoint: &str, p256dh: &str, auth: &str) -> Result<(), BadSubscription> {
    if endpoint.len() > 2048 {
        return Err(BadSubscription::Endpoint("is longer than 2048 characters"));
    }
    allow.check(endpoint).map_err(BadSubscription::Endpoint)?;
    let key = URL_SAFE_NO_PAD.decode(p256dh.trim_end_matches('=')).map_err(|_| BadSubscription::Key)?;
    if key.len() != 65 || p256::PublicKey::from_sec1_bytes(&key).is_err() {
        return Err(BadSubscription::Key);
    }
    let secret = URL_SAFE_NO_PAD.decode(auth.trim_end_matches('=')).map_err(|_| BadSubscription::Auth)?;
    if secret.len() != 16 {
        return Err(BadSubscription::Auth);
    }
    Ok(())
}

/// What became of a post.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// 404 or 410: the subscription has expired or was withdrawn; remove it.
    #[error("the push service says the subscription is gone (HTTP {0})")]
    Gone(u16),
    /// Will not get better by retrying (bad request, refused key, redirect,
    /// a host no longer allowed, keys that do not encrypt).
    #[error("{0}")]
    Permanent(String),
    /// Worth another attempt (timeouts, 429, 5xx).
    #[error("{0}")]
    Transient(String),
}

#[derive(Serialize)]
struct VapidClaims<'a> {
    aud: &'a str,
    exp: i64,
    sub: &'a str,
}

/// The `Authorization` header of a post to `endpoint`: `vapid t=<JWT>,
/// k=<public key>`.
pub fn vapid_authorization(
    keys: &KeyStore,
    endpoint: &url::Url,
    subject: &str,
    now: DateTime<Utc>,
) -> Result<String, PushError> {
    let aud = endpoint.origin().ascii_serialization();
    let claims = VapidClaims { aud: &aud, exp: now.timestamp() + VAPID_LIFETIME_SECS, sub: subject };
    let jwt =
        keys.sign_jwt_without_kid(&claims).map_err(|e| PushError::Permanent(format!("VAPID signing failed: {e}")))?;
    // No space after the comma: both are RFC 8292 (an auth-param list), and
    // the stricter parsers (py_vapid's) want none.
    Ok(format!("vapid t={jwt},k={}", keys.active_public_sec1()))
}

/// VAPID headers already signed, by push service origin: a JWT is good for
/// [`VAPID_LIFETIME_SECS`], so one is reused until an hour before it ends
/// (signing one per message would cost an ECDSA signature each).
#[derive(Default)]
pub struct VapidTokens(std::sync::Mutex<std::collections::HashMap<String, (String, DateTime<Utc>)>>);

impl VapidTokens {
    /// The header for `endpoint`, signed again when the kept one is near its end.
    pub fn header(
        &self,
        keys: &KeyStore,
        endpoint: &url::Url,
        subject: &str,
        now: DateTime<Utc>,
    ) -> Result<String, PushError> {
        let origin = endpoint.origin().ascii_serialization();
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((header, until)) = kept.get(&origin) {
            if *until > now {
                return Ok(header.clone());
            }
        }
        let header = vapid_authorization(keys, endpoint, subject, now)?;
        let until = now + chrono::Duration::seconds(VAPID_LIFETIME_SECS - 3600);
        kept.insert(origin, (header.clone(), until));
        Ok(header)
    }
}

/// One post of `payload` to `sub`'s push service.
pub struct Delivery<'a> {
    pub allow: &'a Allowlist,
    pub keys: &'a KeyStore,
    pub vapid: &'a VapidTokens,
    pub subject: &'a str,
    pub timeout: std::time::Duration,
    /// Seconds the push service may hold it for an offline device.
    pub ttl_secs: i64,
    pub now: DateTime<Utc>,
}

impl Delivery<'_> {
    pub async fn send(&self, poster: &dyn Poster, sub: &Subscription, payload: &[u8]) -> Result<(), PushError> {
        let url = self.allow.check(&sub.endpoint).map_err(|why| PushError::Permanent(format!("the endpoint {why}")))?;
        let key = URL_SAFE_NO_PAD
            .decode(sub.p256dh.trim_end_matches('='))
            .map_err(|_| PushError::Permanent("bad p256dh".into()))?;
        let auth = URL_SAFE_NO_PAD
            .decode(sub.auth.trim_end_matches('='))
            .map_err(|_| PushError::Permanent("bad auth".into()))?;
        let body =
            ece::encrypt(&key, &auth, payload).map_err(|e| PushError::Permanent(format!("encryption failed: {e}")))?;
        let headers = [
            ("Authorization", self.vapid.header(self.keys, &url, self.subject, self.now)?),
            ("Content-Encoding", "aes128gcm".to_owned()),
            ("TTL", self.ttl_secs.max(0).to_string()),
            ("Urgency", "high".to_owned()),
        ];
        let post = Post {
            url: &url,
            content_type: "application/octet-stream",
            headers: &headers,
            body,
            timeout: self.timeout,
        };
        match poster.post(post).await {
            Ok(200..=299) => Ok(()),
            Ok(code @ (404 | 410)) => Err(PushError::Gone(code)),
            Ok(code @ (408 | 429 | 500..=599)) => Err(PushError::Transient(format!("HTTP {code}"))),
            Ok(code) => Err(PushError::Permanent(format!("HTTP {code}"))),
            Err(e) => Err(PushError::Transient(e.describe().to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> Allowlist {
        allowlist(&["fcm.googleapis.com".into(), ".push.apple.com".into(), "127.0.0.1".into()])
    }

    const KEY: &str = "BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U";

    #[test]
    fn a_subscription_names_an_allowed_push_service_and_real_keys() {
        let ok = |endpoint: &str| check_subscription(&allow(), endpoint, KEY, "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(ok("https://fcm.googleapis.com/fcm/send/abc"), Ok(()));
        assert_eq!(ok("https://web.push.apple.com/QGuQ"), Ok(()));
        assert_eq!(ok("http://127.0.0.1:9/push/1"), Ok(()));
        for bad in [
            "https://push.apple.com/x",
            "https://evilpush.apple.com.example/x",
            "https://169.254.169.254/latest",
            "http://fcm.googleapis.com/x",
            "https://user:pw@fcm.googleapis.com/x",
        ] {
            assert!(matches!(ok(bad), Err(BadSubscription::Endpoint(_))), "{bad}");
        }
        let short = check_subscription(&allow(), "https://fcm.googleapis.com/x", &KEY[..40], "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(short, Err(BadSubscription::Key));
        let auth = check_subscription(&allow(), "https://fcm.googleapis.com/x", KEY, "AAAA");
        assert_eq!(auth, Err(BadSubscription::Auth));
        let why =
            check_subscription(&allow(), "https://evil.example/SECRET", KEY, "AAAAAAAAAAAAAAAAAAAAAA").unwrap_err();
        assert!(!why.to_string().contains("SECRET") && !why.to_string().contains("evil"), "{why}");
    }
}
