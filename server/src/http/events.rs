//! Server-Sent Events for agents, so they need not poll:
//!
//! - `GET /api/v1/proposals/{id}/events`: the proposal as it is now, then
//!   again each time it changes, until it reaches a final status. An event's
//!   id is the proposal's ETag: reconnecting with `Last-Event-ID` skips the
//!   first event when nothing changed meanwhile.
//! - `GET /api/v1/events`: each of the agent's own proposals when it
//!   changes. An event's id is a cursor (the change's time and the
//!   proposal's id); reconnecting with `Last-Event-ID` replays every change
//!   made after it, oldest first, so a dropped connection loses nothing.
//!   Without one, the stream starts with changes made from now on.
//!
//! Every event is `event: proposal`, its data the same JSON as `GET
//! /api/v1/proposals/{id}` (with `approval_token` once approved). Wake-ups
//! come from the same change notifications as long-polls; each wake asks the
//! database whether the key still stands, as a long-poll does. Streams end at
//! server shutdown; a comment line every 15 s keeps proxies from timing out.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use chrono::{DateTime, Utc};
use futures::stream::{self, Stream};

use super::agent::ProposalPath;
use super::error::ApiError;
use super::extract::{KeyDigest, ReadOnlyAgentAuth};
use super::openapi::error_responses;
use crate::domain::ProposalStatus;
use crate::intake::proposals::{self, AgentPrincipal};
use crate::state::Shared;
use crate::store;

/// The longest a stream sleeps without asking whether its key still stands.
const RECHECK_EVERY: Duration = Duration::from_secs(30);
/// Changes sent per database read of the agent-wide stream.
const BATCH: u32 = 100;

type BoxedEvents = std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>;
type EventStream = Sse<axum::response::sse::KeepAliveStream<BoxedEvents>>;

fn sse(stream: impl Stream<Item = Event> + Send + 'static) -> EventStream {
    let stream: BoxedEvents = Box::pin(futures::StreamExt::map(stream, Ok));
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

fn last_event_id(headers: &HeaderMap) -> Option<String> {
    headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn proposal_event(id: &str, body: &[u8]) -> Event {
    // The view is JSON without raw newlines, so it is one `data:` line.
    Event::default().event("proposal").id(id).data(String::from_utf8_lossy(body))
}

/// Waits for `changed`, at most [`RECHECK_EVERY`]; false when the server is
/// shutting down.
async fn wake(state: &Shared, changed: impl std::future::Future<Output = ()>) -> bool {
    tokio::select! {
        _ = changed => true,
        _ = tokio::time::sleep(RECHECK_EVERY) => true,
        _ = state.shutdown.wait() => false,
    }
}

error_responses!(ProposalEventsErrors: Unauthenticated, NotFound, RateLimited, InternalError);

/// One event of a proposal stream, as an SSE parser reads it (the schema of
/// each event, not of the stream's bytes); comment lines (`: keepalive`)
/// are not events.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Describes the wire; the stream writes it field by field.
pub struct ProposalEvent {
    /// Always `proposal`.
    #[schema(pattern = "^proposal$")]
    event: String,
    /// The proposal's `ETag` (one proposal's stream) or a cursor to resume
    /// from (the agent's stream): send it back as `Last-Event-ID`.
    id: String,
    /// The proposal, as JSON, exactly as `getProposal` answers it.
    #[schema(content_media_type = "application/json")]
    data: String,
}

/// `GET /api/v1/proposals/{id}/events`.
#[utoipa::path(
    get,
    path = "/api/v1/proposals/{id}/events",
    operation_id = "proposalEvents",
    tag = "agent",
    security(("agentKey" = [])),
    params(
        ProposalPath,
        ("Last-Event-ID" = Option<String>, Header,
            description = "The id (ETag) of the last event received: the stream skips the proposal as it was then."),
    ),
    responses(
        (status = 200, content_type = "text/event-stream", body = ProposalEvent,
            description = "Server-Sent Events: `event: proposal`, `id:` the proposal's ETag, `data:` the proposal \
                (as `getProposal` answers it), now and at each change; the stream ends at a final status."),
        ProposalEventsErrors,
    ),
)]
pub async fn proposal(
    State(state): State<Shared>,
    ReadOnlyAgentAuth(agent, key): ReadOnlyAgentAuth,
    Path(ProposalPath { id }): Path<ProposalPath>,
    headers: HeaderMap,
) -> Result<EventStream, ApiError> {
    // The first read answers a missing or foreign proposal with 404 before
    // the stream starts.
    let first = proposals::poll(&state, &agent, &id).await?;
    let start = Watch { state, agent, key, id, sent: last_event_id(&headers), first: Some(first), done: false };
    Ok(sse(stream::unfold(start, Watch::next)))
}

struct Watch {
    state: Shared,
    agent: std::sync::Arc<AgentPrincipal>,
    key: KeyDigest,
    id: String,
    /// The ETag last sent (or the client's `Last-Event-ID`).
    sent: Option<String>,
    first: Option<std::sync::Arc<proposals::PolledView>>,
    done: bool,
}

impl Watch {
    async fn next(mut self) -> Option<(Event, Watch)> {
        loop {
            if self.done {
                return None;
            }
            let notify = self.state.changes.subscribe(&self.id);
            let changed = notify.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let polled = match self.first.take() {
                Some(first) => first,
                // Boxed, as a long-poll's are: inline, the reads would size
                // the future every open stream holds while it waits.
                None => {
                    if !Box::pin(self.key.still_valid(&self.state, &self.agent)).await.unwrap_or(false) {
                        return None;
                    }
                    Box::pin(proposals::poll(&self.state, &self.agent, &self.id)).await.ok()?
                }
            };
            self.done = final_status(&polled.body);
            if self.sent.as_deref() != Some(polled.etag.as_str()) {
                self.sent = Some(polled.etag.clone());
                return Some((proposal_event(&polled.etag, &polled.body), self));
            }
            if self.done || !wake(&self.state, changed).await {
                return None;
            }
        }
    }
}

/// Whether a proposal view's status is final: terminal, or succeeded (then
/// only a reversal, itself a proposal with its own stream, can follow).
fn final_status(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Status {
        status: ProposalStatus,
    }
    serde_json::from_slice::<Status>(body)
        .is_ok_and(|s| s.status.is_terminal() || s.status == ProposalStatus::Succeeded)
}

/// An agent-wide stream's position: the last change sent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cursor {
    at: DateTime<Utc>,
    id: String,
}

impl Cursor {
    fn parse(text: &str) -> Option<Cursor> {
        let (at, id) = text.split_once(' ')?;
        Some(Cursor { at: store::parse_ts(at)?, id: id.to_owned() })
    }

    fn text(&self) -> String {
        format!("{} {}", store::ts(self.at), self.id)
    }
}

error_responses!(AgentEventsErrors: Unauthenticated, ValidationFailed, RateLimited, InternalError);

/// `GET /api/v1/events`.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "agentEvents",
    tag = "agent",
    security(("agentKey" = [])),
    params(
        ("Last-Event-ID" = Option<String>, Header,
            description = "The id of the last event received: every change after it is sent first, oldest first."),
    ),
    responses(
        (status = 200, content_type = "text/event-stream", body = ProposalEvent,
            description = "Server-Sent Events: `event: proposal` each time one of this agent's proposals changes, \
                `data:` the proposal (as `getProposal` answers it), `id:` a cursor to resume from."),
        AgentEventsErrors,
    ),
)]
pub async fn agent(
    State(state): State<Shared>,
    ReadOnlyAgentAuth(agent, key): ReadOnlyAgentAuth,
    headers: HeaderMap,
) -> Result<EventStream, ApiError> {
    let after = match last_event_id(&headers) {
        None => Cursor { at: state.now(), id: String::new() },
        Some(text) => Cursor::parse(&text).ok_or_else(|| {
            ApiError::Validation(vec![crate::domain::FieldError::new(
                "Last-Event-ID",
                "invalid_value",
                "must be the id of an event of this stream",
            )])
        })?,
    };
    let start = Feed { state, agent, key, after, pending: Vec::new().into_iter() };
    Ok(sse(stream::unfold(start, Feed::next)))
}

struct Feed {
    state: Shared,
    agent: std::sync::Arc<AgentPrincipal>,
    key: KeyDigest,
    after: Cursor,
    /// Changes read but not sent yet, oldest first.
    pending: std::vec::IntoIter<(String, DateTime<Utc>)>,
}

impl Feed {
    async fn next(mut self) -> Option<(Event, Feed)> {
        loop {
            if let Some((id, at)) = self.pending.next() {
                let cursor = Cursor { at, id };
                // A proposal changed again since the read is sent as it is now,
                // under the cursor read: the later change comes next.
                // Reads boxed, as in `Watch::next`.
                let view = Box::pin(proposals::poll(&self.state, &self.agent, &cursor.id)).await.ok()?;
                self.after = cursor;
                return Some((proposal_event(&self.after.text(), &view.body), self));
            }
            let seen = self.state.changes.published();
            let changed = Box::pin(store::proposals::changed_since(
                &self.state.db.read,
                &self.agent.tenant_id,
                &self.agent.agent_id,
                (self.after.at, &self.after.id),
                BATCH,
            ))
            .await
            .ok()?;
            if !changed.is_empty() {
                self.pending = changed.into_iter();
                continue;
            }
            let state = self.state.clone();
            if !wake(&state, async {
                state.changes.any_since(seen).await;
            })
            .await
            {
                return None;
            }
            if !Box::pin(self.key.still_valid(&self.state, &self.agent)).await.unwrap_or(false) {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = Cursor { at: store::parse_ts("2026-12-01T07:00:00.123Z").unwrap(), id: "prop_01ABC".into() };
        assert_eq!(Cursor::parse(&c.text()), Some(c));
        for bad in ["", "prop_01ABC", "yesterday prop_1", "2026-12-01T07:00:00.123Z"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn final_statuses_end_a_proposal_stream() {
        assert!(final_status(br#"{"status":"succeeded","id":"p"}"#));
        assert!(final_status(br#"{"status":"rejected"}"#));
        assert!(!final_status(br#"{"status":"pending_approval"}"#));
        assert!(!final_status(br#"{"status":"executing"}"#));
    }
}
