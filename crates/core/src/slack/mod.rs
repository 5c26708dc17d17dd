//! Slack-style interactive approvals (SPEC section 11).
//!
//! - [`message`] renders the Block Kit messages (the restated payment, the
//!   agent's reference labelled untrusted, the short request hash, buttons).
//! - [`outbox`] delivers them: rows written in the same transaction as the
//!   change they announce, posted by a background worker with backoff.
//! - [`signature`] checks an inbound request's `X-Slack-Signature` over the
//!   raw bytes, before anything is parsed; [`interaction`] parses the
//!   `block_actions` payload; [`press`] turns a verified press into the same
//!   `approvals::decide` the console calls, with `amr: slack`.
//! - [`Allowlist`] is the SSRF guard: every outbound URL (webhook,
//!   `response_url`) must name a host on `slack.allowed_hosts`, and redirects
//!   are never followed.

pub mod interaction;
pub mod message;
pub mod outbox;
pub mod press;
pub mod signature;

use std::time::Duration;
use url::Url;

use crate::config::SlackSettings;
use crate::outbound::{Post, Poster};

/// The hosts outbound requests may go to.
#[derive(Debug, Clone)]
pub struct Allowlist(Vec<String>);

impl Allowlist {
    pub fn new(hosts: &[String]) -> Allowlist {
        Allowlist(hosts.iter().map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase()).collect())
    }

    /// The URL, if it may be called: https (plain http only to a loopback
    /// address), no credentials in it, and its host on the list. The reason
    /// for a refusal never repeats the URL (a webhook URL is a secret).
    pub fn check(&self, url: &str) -> Result<Url, &'static str> {
        let url = Url::parse(url).map_err(|_| "is not a valid URL")?;
        let host = url.host_str().ok_or("has no host")?.trim_end_matches('.').to_ascii_lowercase();
        let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => return Err("must be https (plain http only to a loopback address)"),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry a user name or password");
        }
        if !self.0.contains(&host) {
            return Err("names a host that is not in slack.allowed_hosts");
        }
        Ok(url)
    }
}

/// Why an outbound request did not deliver. Carries a status code or an
/// error kind, never a response body or the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    #[error("refused before sending: the URL {0}")]
    NotAllowed(&'static str),
    #[error("redirect not followed (HTTP {0})")]
    Redirect(u16),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("{0}")]
    Transport(&'static str),
}

/// The outbound side: the allowlist every URL is checked against, the
/// timeout, and the signal that wakes the delivery worker. The posting
/// itself is the server's (`deps::Outbound::poster`: no redirects).
pub struct Slack {
    allow: Allowlist,
    timeout: Duration,
    /// Notified when a message is queued, so it goes out at once.
    pub wake: tokio::sync::Notify,
}

impl Slack {
    pub fn new(settings: &SlackSettings) -> Slack {
        Slack {
            allow: Allowlist::new(&settings.allowed_hosts),
            timeout: Duration::from_millis(settings.timeout_ms),
            wake: tokio::sync::Notify::new(),
        }
    }

    pub fn allowlist(&self) -> &Allowlist {
        &self.allow
    }

    /// POSTs a JSON body to an allowed URL through `poster`; 2xx is delivered.
    pub async fn post(&self, poster: &dyn Poster, url: &str, body: &str) -> Result<(), DeliveryError> {
        let url = self.allow.check(url).map_err(DeliveryError::NotAllowed)?;
        let post = Post { url: &url, headers: &[], body: body.as_bytes().to_vec(), timeout: self.timeout };
        let status = poster.post(post).await.map_err(|e| DeliveryError::Transport(e.describe()))?;
        match status {
            200..=299 => Ok(()),
            300..=399 => Err(DeliveryError::Redirect(status)),
            code => Err(DeliveryError::Status(code)),
        }
    }
}

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
