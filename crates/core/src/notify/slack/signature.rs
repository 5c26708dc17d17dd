//! The inbound request check: `X-Slack-Signature: v0=HEX` where HEX is
//! HMAC-SHA256 over `v0:{X-Slack-Request-Timestamp}:{raw body}` keyed with
//! a signing secret. It runs over the raw bytes before anything is parsed,
//! compares in constant time (`Mac::verify_slice`), accepts any configured
//! secret (rotation), and never computes a value it could leak: the
//! expected MAC is never formatted, logged or returned.
//!
//! Replays (the same timestamp and signature twice) are refused by the
//! caller, which remembers verified requests in the database.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

/// How far a request's timestamp may be from the server's clock, either way.
pub const WINDOW_SECS: i64 = 5 * 60;

/// Why a request was refused; `reason()` is the machine-readable form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no signing secret is configured")]
    NotConfigured,
    #[error("the X-Slack-Request-Timestamp header is missing")]
    MissingTimestamp,
    #[error("the X-Slack-Signature header is missing")]
    MissingSignature,
    #[error("the timestamp is not a number of seconds")]
    MalformedTimestamp,
    #[error("the timestamp is more than 5 minutes old")]
    StaleTimestamp,
    #[error("the timestamp is more than 5 minutes in the future")]
    FutureTimestamp,
    #[error("the signature does not match")]
    BadSignature,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::NotConfigured => "not_configured",
            Refusal::MissingTimestamp => "missing_timestamp",
            Refusal::MissingSignature => "missing_signature",
            Refusal::MalformedTimestamp => "malformed_timestamp",
            Refusal::StaleTimestamp => "stale_timestamp",
            Refusal::FutureTimestamp => "future_timestamp",
            Refusal::BadSignature => "bad_signature",
        }
    }
}

/// Checks one request. `now_unix` is the server's clock in seconds.
pub fn verify(
    secrets: &[SecretString],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_unix: i64,
) -> Result<(), Refusal> {
    if secrets.is_empty() {
        return Err(Refusal::NotConfigured);
    }
    let timestamp = timestamp.ok_or(Refusal::MissingTimestamp)?;
    let signature = signature.ok_or(Refusal::MissingSignature)?;
    // Digits only (no sign, no spaces), so the signed text is exactly what we parsed.
    if timestamp.is_empty() || timestamp.len() > 12 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::MalformedTimestamp);
    }
    let at: i64 = timestamp.parse().map_err(|_| Refusal::MalformedTimestamp)?;
    if at < now_unix - WINDOW_SECS {
        return Err(Refusal::StaleTimestamp);
    }
    if at > now_unix + WINDOW_SECS {
        return Err(Refusal::FutureTimestamp);
    }
    // Lowercase hex only, as Slack sends it: the replay guard remembers the
    // signature as sent, so a second spelling of the same MAC (`…aB…` for
    // `…ab…`) must not verify, or a captured request could be replayed.
    let given = signature
        .strip_prefix("v0=")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .and_then(|h| hex::decode(h).ok())
        .ok_or(Refusal::BadSignature)?;
    // Each comparison is constant time; stopping at the first match reveals
    // at most that a secret matched, which the answer tells anyway.
    let matched = secrets.iter().any(|secret| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes()).expect("HMAC takes any key");
        mac.update(b"v0:");
        mac.update(timestamp.as_bytes());
        mac.update(b":");
        mac.update(body);
        mac.verify_slice(&given).is_ok()
    });
    if matched {
        Ok(())
    } else {
        Err(Refusal::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    /// Signs a request the way Slack does.
    fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        format!("v0={}", hex::encode(mac.finalize().into_bytes()))
    }

    fn secrets(list: &[&str]) -> Vec<SecretString> {
        list.iter().map(|s| SecretString::from(s.to_string())).collect()
    }

    fn check(secret_list: &[&str], ts: &str, sig: &str, body: &[u8]) -> Result<(), Refusal> {
        verify(&secrets(secret_list), Some(ts), Some(sig), body, NOW)
    }

    #[test]
    fn accepts_any_configured_secret() {
        let body = b"payload=%7B%7D";
        let ts = NOW.to_string();
        assert_eq!(check(&["old", "new"], &ts, &sign("old", &ts, body), body), Ok(()));
        assert_eq!(check(&["old", "new"], &ts, &sign("new", &ts, body), body), Ok(()));
        assert_eq!(check(&["old", "new"], &ts, &sign("other", &ts, body), body), Err(Refusal::BadSignature));
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/slack_interaction.rs`): hex
    /// decoding accepts either case, so `v0=` + the MAC with some digits
    /// upper-cased verified too, and the replay guard, which remembers the
    /// signature as sent, saw a new request.
    #[test]
    fn a_signature_has_one_spelling_upper_case_hex_is_refused() {
        let body = b"payload=%7B%7D";
        let ts = NOW.to_string();
        let good = sign("s", &ts, body);
        assert_eq!(check(&["s"], &ts, &good, body), Ok(()));
        let hex = &good[3..];
        let letter = hex.find(|c: char| c.is_ascii_alphabetic()).expect("this MAC has a digit a-f");
        let one_upper = format!("v0={}{}{}", &hex[..letter], hex[letter..=letter].to_uppercase(), &hex[letter + 1..]);
        let all_upper = format!("v0={}", hex.to_uppercase());
        for respelled in [one_upper, all_upper] {
            assert_ne!(respelled, good);
            assert_eq!(check(&["s"], &ts, &respelled, body), Err(Refusal::BadSignature), "{respelled}");
        }
    }

    #[test]
    fn each_failure_has_its_reason() {
        let body = b"payload=x";
        let ts = NOW.to_string();
        let good = sign("s", &ts, body);
        let all = secrets(&["s"]);
        assert_eq!(verify(&[], Some(&ts), Some(&good), body, NOW), Err(Refusal::NotConfigured));
        assert_eq!(verify(&all, None, Some(&good), body, NOW), Err(Refusal::MissingTimestamp));
        assert_eq!(verify(&all, Some(&ts), None, body, NOW), Err(Refusal::MissingSignature));
        for bad_ts in ["", "-5", "+1800000000", " 1800000000", "1.8e9", "9999999999999"] {
            assert_eq!(check(&["s"], bad_ts, &good, body), Err(Refusal::MalformedTimestamp), "{bad_ts:?}");
        }
        let old = (NOW - WINDOW_SECS - 1).to_string();
        assert_eq!(check(&["s"], &old, &sign("s", &old, body), body), Err(Refusal::StaleTimestamp));
        let future = (NOW + WINDOW_SECS + 1).to_string();
        assert_eq!(check(&["s"], &future, &sign("s", &future, body), body), Err(Refusal::FutureTimestamp));
        let edge = (NOW - WINDOW_SECS).to_string();
        assert_eq!(check(&["s"], &edge, &sign("s", &edge, body), body), Ok(()));
        assert_eq!(check(&["s"], &ts, &good, b"payload=y"), Err(Refusal::BadSignature), "body altered");
        let other_ts = (NOW + 1).to_string();
        assert_eq!(check(&["s"], &other_ts, &good, body), Err(Refusal::BadSignature), "timestamp altered");
        for malformed in ["", "v0=", "v1=00", &good[3..], &good.to_uppercase(), &format!("{good}00"), "v0=zz"] {
            assert_eq!(check(&["s"], &ts, malformed, body), Err(Refusal::BadSignature), "{malformed:?}");
        }
    }
}
