//! The registry's values: tenant and agent ids, usernames, names shown to
//! people, Slack user ids, agent keys and their hashes. Each is a type that
//! only holds a valid value; provisioning, the console's admin forms and
//! the agent credential check parse into them once, at the edge.

use sha2::{Digest, Sha256};
use std::fmt;

use crate::fields::{is_unsafe_in_text, plain_id, FieldRule};

plain_id!(
    /// A tenant or agent id: `^[a-z0-9][a-z0-9_-]{0,63}$`.
    RegistryId,
    |s| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            && s.len() <= 64
    },
    "must match ^[a-z0-9][a-z0-9_-]{0,63}$"
);

plain_id!(
    /// What a person signs in with: `^[A-Za-z0-9_.@+-]{1,128}$` (global: one
    /// username names one user of one tenant). An e-mail address is one, as
    /// identity providers send it (SCIM `userName`).
    Username,
    |s| (1..=128).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.@+-".contains(c)),
    "must match ^[A-Za-z0-9_.@+-]{1,128}$"
);

plain_id!(
    /// A name shown to reviewers (a tenant's name, a payee's legal name):
    /// 1–200 characters, not blank, no control or bidirectional formatting
    /// characters (they can make a name read differently from what it is).
    DisplayText,
    |s| !s.trim().is_empty() && s.chars().count() <= 200 && !s.chars().any(is_unsafe_in_text),
    "must be 1-200 characters, not blank, without control or bidirectional formatting characters"
);

plain_id!(
    /// A Slack-style user id: 1–64 ASCII letters and digits (`U0ANA`).
    SlackUserId,
    |s| (1..=64).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric()),
    "must be 1-64 ASCII letters and digits"
);

plain_id!(
    /// The SHA-256 of an agent key as 64 lowercase hex digits: the only form
    /// in which keys are stored.
    KeySha256,
    |s| s.len() == 64 && s.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
    "must be the SHA-256 of the key as 64 lowercase hex digits"
);

/// An agent's bearer key: `cs_live_` or `cs_test_` and base62 characters.
/// It never prints: `Debug` and `Display` show only its kind.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentKey(String);

impl AgentKey {
    pub const LIVE: &'static str = "cs_live_";
    pub const TEST: &'static str = "cs_test_";

    /// A key from 32 base62 characters the caller drew from a secure source.
    pub fn from_random(live: bool, body: &str) -> Result<AgentKey, FieldRule> {
        let prefix = if live { Self::LIVE } else { Self::TEST };
        AgentKey::parse(&format!("{prefix}{body}"))
    }

    /// Any well-formed key: a known prefix and 16–128 ASCII letters and digits.
    pub fn parse(s: &str) -> Result<AgentKey, FieldRule> {
        let body = s.strip_prefix(Self::LIVE).or_else(|| s.strip_prefix(Self::TEST));
        match body {
            Some(b) if (16..=128).contains(&b.len()) && b.chars().all(|c| c.is_ascii_alphanumeric()) => {
                Ok(AgentKey(s.to_owned()))
            }
            _ => Err(FieldRule("must be cs_live_ or cs_test_ followed by 16-128 ASCII letters and digits")),
        }
    }

    /// A development key written in a file: only `cs_test_…` (a live key
    /// belongs in a file as its hash, never in plain).
    pub fn parse_test_key(s: &str) -> Result<AgentKey, FieldRule> {
        if !s.starts_with(Self::TEST) {
            return Err(FieldRule(
                "must be a test key (cs_test_…); a live key belongs in `key_sha256`, never in a file",
            ));
        }
        AgentKey::parse(s).map_err(|_| FieldRule("must be cs_test_ followed by 16-128 ASCII letters and digits"))
    }

    pub fn is_live(&self) -> bool {
        self.0.starts_with(Self::LIVE)
    }

    /// Its SHA-256, as stored and looked up.
    pub fn sha256(&self) -> KeySha256 {
        key_sha256(&self.0)
    }

    /// The key itself, to show its owner once. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// The SHA-256 of a presented bearer value, well-formed or not (the agent
/// credential check hashes whatever it was given and looks the hash up).
pub fn key_sha256(presented: &str) -> KeySha256 {
    // Into a buffer: every agent request hashes its key, and `hex::encode`
    // builds its string one char at a time (docs/BENCHMARKS.md).
    let mut text = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(presented.as_bytes()), &mut text).expect("64 hex digits fit");
    KeySha256(String::from_utf8(text.to_vec()).expect("hex digits are ASCII"))
}

impl fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_live() { "AgentKey(cs_live_…)" } else { "AgentKey(cs_test_…)" })
    }
}

impl fmt::Display for AgentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn registry_ids_and_usernames() {
        for ok in ["acme", "a", "payout-bot", "t_1", &"a".repeat(64)] {
            assert!(RegistryId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Acme", "-acme", "_x", "a b", "a/b", &"a".repeat(65)] {
            assert!(RegistryId::parse(bad).is_err(), "{bad}");
        }
        for ok in ["ana", "Ana.B", "a_b-c", "ana+ops@example.com", &"x".repeat(128)] {
            assert!(Username::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "ana<x>", "é", "a/b", &"x".repeat(129)] {
            assert!(Username::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display_text_refuses_what_could_mislead_a_reader() {
        assert!(DisplayText::parse("Acme Supplies Ltd").is_ok());
        assert!(DisplayText::parse(&"é".repeat(200)).is_ok());
        for bad in ["", "   ", "a\nb", "a\u{202E}b", "a\u{200B}b", &"é".repeat(201)] {
            assert!(DisplayText::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn slack_ids_and_key_hashes() {
        assert!(SlackUserId::parse("U0ANA").is_ok());
        for bad in ["", "U0/../x", "U 1", &"U".repeat(65)] {
            assert!(SlackUserId::parse(bad).is_err(), "{bad}");
        }
        let hash = key_sha256("cs_test_abc");
        assert_eq!(hash.as_str().len(), 64);
        // FIPS 180-2's example: SHA-256("abc"), lowercase hex.
        assert_eq!(key_sha256("abc").as_str(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(KeySha256::parse(hash.as_str()).is_ok());
        assert!(KeySha256::parse(&hash.as_str().to_uppercase()).is_err());
        assert!(KeySha256::parse("abc").is_err());
    }

    #[test]
    fn agent_keys_never_print_and_hash_like_the_credential_check() {
        let key = AgentKey::from_random(true, "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6").unwrap();
        assert!(key.is_live());
        assert_eq!(format!("{key:?}"), "AgentKey(cs_live_…)");
        assert!(!format!("{key}").contains("A1b2"));
        assert_eq!(key.sha256(), key_sha256(key.expose()));
        assert!(AgentKey::parse_test_key(key.expose()).is_err(), "a live key is never a file's test key");
        assert!(AgentKey::parse_test_key("cs_test_0123456789abcdef").is_ok());
        for bad in ["", "cs_live_", "cs_test_short", "sk_live_0123456789abcdef", "cs_test_0123456789abcde!"] {
            assert!(AgentKey::parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_hash_is_always_a_valid_stored_hash(key in ".{0,64}") {
            prop_assert!(KeySha256::parse(key_sha256(&key).as_str()).is_ok());
        }
    }
}
