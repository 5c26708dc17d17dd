//! The outbound port: one POST to a URL already checked against its rules
//! (Slack's allowlist, the webhook rules), never following a redirect. The
//! server implements it with its HTTP client; the use cases that post
//! (`slack::outbox`, `webhooks`) take it as a capability (`deps::Outbound`).

use std::time::Duration;

/// What to post.
pub struct Post<'a> {
    pub url: &'a url::Url,
    /// Besides `Content-Type: application/json`.
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
