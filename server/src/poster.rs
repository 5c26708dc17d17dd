//! The outbound port's implementation (`countersign_core::notify::outbound`): one
//! HTTP client for Slack messages and agent webhooks, never following a
//! redirect, each post with its own timeout.

use countersign_core::notify::outbound::{Post, PostError, Poster};

/// Posts with a client of its own (one per server: a client's pooled
/// connections belong to the runtime that opened them).
#[derive(Debug, Clone)]
pub struct HttpPoster {
    client: reqwest::Client,
}

impl HttpPoster {
    pub fn new() -> anyhow::Result<HttpPoster> {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(HttpPoster { client })
    }
}

#[async_trait::async_trait]
impl Poster for HttpPoster {
    async fn post(&self, post: Post<'_>) -> Result<u16, PostError> {
        let mut request = self
            .client
            .post(post.url.clone())
            .timeout(post.timeout)
            .header(reqwest::header::CONTENT_TYPE, post.content_type);
        for (name, value) in post.headers {
            request = request.header(*name, value);
        }
        match request.body(post.body).send().await {
            Ok(response) => Ok(response.status().as_u16()),
            Err(e) if e.is_timeout() => Err(PostError::Timeout),
            Err(e) if e.is_connect() => Err(PostError::Connect),
            Err(_) => Err(PostError::Transport),
        }
    }
}
