//! Slack-style interactive approvals (SPEC section 11).
//!
//! - [`message`] renders the Block Kit messages (the restated payment, the
//!   agent's reference labelled untrusted, the short request hash, buttons).
//! - [`outbox`] delivers them: rows written in the same transaction as the
//!   change they announce, posted by a background worker with backoff.
//! - [`signature`] checks an inbound request's `X-Slack-Signature` over the
//!   raw bytes, before anything is parsed; [`interaction`] parses the
//!   `block_actions` payload; `crate::notify::slack::press` (a sibling, so this module
//!   stays below the use cases) turns a verified press into the same
//!   `approvals::decide` the console calls, with `amr: slack`.
//! - `outbound::Allowlist` is the SSRF guard: every outbound URL (webhook,
//!   `response_url`) must name a host on `slack.allowed_hosts`, and redirects
//!   are never followed.

pub mod interaction;
pub mod message;
pub mod outbox;
pub mod press;

pub mod signature;

pub use crate::notify::outbound::{Allowlist, DeliveryError, Slack};

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> Allowlist {
        Allowlist::new(&["hooks.slack.com".into(), "127.0.0.1".into()])
    }

    #[test]
    fn allows_listed_hosts_only() {
        assert!(allow().check("https://hooks.slack.com/services/T0/B0/XYZ").is_ok());
        assert!(allow().check("https://HOOKS.slack.com./actions/1").is_ok());
        assert!(allow().check("http://127.0.0.1:4000/hook").is_ok());
        for bad in [
            "https://hooks.slack.com.evil.example/x",
            "https://evil.example/hooks.slack.com",
            "https://169.254.169.254/latest/meta-data",
            "http://hooks.slack.com/services/x",
            "https://user:pw@hooks.slack.com/x",
            "ftp://hooks.slack.com/x",
            "not a url",
            "https://[::1]/x",
        ] {
            assert!(allow().check(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_never_repeat_the_url() {
        let why = allow().check("https://evil.example/T0SECRET").unwrap_err();
        assert!(!why.contains("T0SECRET") && !why.contains("evil"));
    }
}
