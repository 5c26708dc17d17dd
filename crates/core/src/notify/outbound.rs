//! The outbound port: one POST to a URL already checked against its rules
//! (Slack's allowlist, the webhook rules), never following a redirect. The
//! server implements it with its HTTP client; the use cases that post
//! (`slack::outbox`, `webhooks`) take it as a capability (`deps::Outbound`).

use std::time::Duration;
use url::Url;

/// The content type of a JSON post.
pub const JSON: &str = "application/json; charset=utf-8";

/// What to post.
pub struct Post<'a> {
    pub url: &'a url::Url,
    /// `application/json; charset=utf-8` for JSON ([`JSON`]).
    pub content_type: &'static str,
    /// Besides `Content-Type`.
    pub headers: &'a [(&'static str, String)],
    pub body: Vec<u8>,
    /// The whole exchange, connecting included.
    pub timeout: Duration,
}

/// Why a post got no HTTP answer. Carries no URL and no body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostError {
    Timeout,
    Connect,
    Transport,
}

impl PostError {
    pub fn describe(self) -> &'static str {
        match self {
            PostError::Timeout => "timed out",
            PostError::Connect => "could not connect",
            PostError::Transport => "connection failed",
        }
    }
}

#[async_trait::async_trait]
pub trait Poster: Send + Sync {
    /// Posts; the answer's HTTP status (its body is never read).
    async fn post(&self, post: Post<'_>) -> Result<u16, PostError>;
}

/// The hosts outbound requests may go to: exact names, or, for an entry
/// with a leading `.`, any subdomain of it.
#[derive(Debug, Clone)]
pub struct Allowlist {
    hosts: Vec<String>,
    /// The setting that lists them, named in refusals.
    refusal: &'static str,
}

impl Allowlist {
    /// Slack's (`slack.allowed_hosts`).
    pub fn new(hosts: &[String]) -> Allowlist {
        Self::named(hosts, "names a host that is not in slack.allowed_hosts")
    }

    /// A list whose refusal says `refusal`.
    pub fn named(hosts: &[String], refusal: &'static str) -> Allowlist {
        let hosts = hosts.iter().map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase()).collect();
        Allowlist { hosts, refusal }
    }

    fn allows(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| match h.strip_prefix('.') {
            Some(domain) => host.strip_suffix(domain).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => h == host,
        })
    }

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
        if !self.allows(&host) {
            return Err(self.refusal);
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
    /// Posts only to `allowed_hosts`, each within `timeout_ms`.
    pub fn new(allowed_hosts: &[String], timeout_ms: u64) -> Slack {
        Slack {
            allow: Allowlist::new(allowed_hosts),
            timeout: Duration::from_millis(timeout_ms),
            wake: tokio::sync::Notify::new(),
        }
    }

    pub fn allowlist(&self) -> &Allowlist {
        &self.allow
    }

    /// POSTs a JSON body to an allowed URL through `poster`; 2xx is delivered.
    pub async fn post(&self, poster: &dyn Poster, url: &str, body: &str) -> Result<(), DeliveryError> {
        let url = self.allow.check(url).map_err(DeliveryError::NotAllowed)?;
        let post =
            Post { url: &url, content_type: JSON, headers: &[], body: body.as_bytes().to_vec(), timeout: self.timeout };
        let status = poster.post(post).await.map_err(|e| DeliveryError::Transport(e.describe()))?;
        match status {
            200..=299 => Ok(()),
            300..=399 => Err(DeliveryError::Redirect(status)),
            code => Err(DeliveryError::Status(code)),
        }
    }
}

/// Outbound posts (Slack messages, agent webhooks) and Slack's outbox.
pub trait Outbound {
    fn poster(&self) -> &dyn crate::notify::outbound::Poster;
    fn slack(&self) -> &crate::notify::outbound::Slack;
}
