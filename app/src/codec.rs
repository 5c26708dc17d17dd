//! How page data crosses from the server to the browser: as `miniserde`
//! JSON, both in the hydration data of a server-rendered page and in the
//! answers of the server functions a client-side navigation calls.
//!
//! Why not serde_json, leptos's default: its deserializer is generic, so the
//! wasm carried one copy of it per page type (about a tenth of the bundle);
//! miniserde's goes through one small visitor interface. The server keeps
//! serde for everything else (docs/BENCHMARKS.md, "Hydrate wasm size").

use codee::{Decoder, Encoder};
use leptos::prelude::*;
use leptos::server_fn::codec::Post;
use miniserde::{json, Deserialize, Serialize};
use std::future::Future;

/// A resource's value as miniserde JSON.
pub struct Mini;

impl<T: Serialize> Encoder<T> for Mini {
    type Error = ();
    type Encoded = String;

    fn encode(val: &T) -> Result<String, ()> {
        Ok(json::to_string(val))
    }
}

impl<T: Deserialize> Decoder<T> for Mini {
    type Error = miniserde::Error;
    type Encoded = str;

    fn decode(val: &str) -> Result<T, miniserde::Error> {
        json::from_str(val)
    }
}

/// A server function's outcome: `O` and the value's JSON, or `E` and the
/// error's fixed code (`api::console_error` reads it back). The console's
/// errors are only ever `ServerError(code)`; anything else travels as
/// `unavailable`, which is what the page would make of it anyway.
pub struct MiniPage;

const FAILED: &str = "unavailable";

impl<T: Serialize> Encoder<Result<T, ServerFnError>> for MiniPage {
    type Error = ();
    type Encoded = String;

    fn encode(val: &Result<T, ServerFnError>) -> Result<String, ()> {
        Ok(match val {
            Ok(v) => format!("O{}", json::to_string(v)),
            Err(ServerFnError::ServerError(code)) => format!("E{code}"),
            Err(_) => format!("E{FAILED}"),
        })
    }
}

impl<T: Deserialize> Decoder<Result<T, ServerFnError>> for MiniPage {
    type Error = miniserde::Error;
    type Encoded = str;

    fn decode(val: &str) -> Result<Result<T, ServerFnError>, miniserde::Error> {
        match val.split_at_checked(1) {
            Some(("O", v)) => json::from_str(v).map(Ok),
            Some(("E", code)) => Ok(Err(ServerFnError::ServerError(code.to_owned()))),
            _ => Err(miniserde::Error),
        }
    }
}

/// A page's data: a resource whose value is a server function's outcome.
pub type Page<T> = Resource<Result<T, ServerFnError>, MiniPage>;

/// [`Resource::new`], with the page data encoded by [`MiniPage`].
#[track_caller]
pub fn page<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Page<T>
where
    T: Serialize + Deserialize + Send + Sync + 'static,
    S: Clone + PartialEq + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ServerFnError>> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

/// [`Resource::new`] for any other value, encoded by [`Mini`].
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, Mini>
where
    T: Serialize + Deserialize + Send + Sync + 'static,
    S: Clone + PartialEq + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

/// The server functions' answer encoding: `output = MiniJson`.
pub struct MiniJsonEncoding;

/// A server function answering in miniserde JSON.
pub type MiniJson = Post<MiniJsonEncoding>;

impl leptos::server_fn::ContentType for MiniJsonEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl leptos::server_fn::FormatType for MiniJsonEncoding {
    const FORMAT_TYPE: leptos::server_fn::Format = leptos::server_fn::Format::Text;
}

/// Why an answer could not be read (miniserde's error says nothing more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer is not the JSON this page expects")
    }
}

impl<T: Serialize> leptos::server_fn::Encodes<T> for MiniJsonEncoding {
    type Error = Unreadable;

    fn encode(output: &T) -> Result<bytes::Bytes, Unreadable> {
        Ok(bytes::Bytes::from(json::to_string(output)))
    }
}

impl<T: Deserialize> leptos::server_fn::Decodes<T> for MiniJsonEncoding {
    type Error = Unreadable;

    fn decode(bytes: bytes::Bytes) -> Result<T, Unreadable> {
        let text = std::str::from_utf8(&bytes).map_err(|_| Unreadable)?;
        json::from_str(text).map_err(|_| Unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{QueueItem, QueuePage, QueueSearch};

    fn sample() -> QueuePage {
        QueuePage {
            change_seq: 7,
            now: "2026-12-01T10:00:00Z".into(),
            items: vec![QueueItem {
                id: "prop_1".into(),
                status: "pending_approval".into(),
                sentence: "Pay \"Acme\" <b>Ltd</b>, 250.00 USD \u{2014} é".into(),
                amount: "250.00 USD".into(),
                payee: "Acme".into(),
                payee_masked: "acct_…0001 #abcd".into(),
                invoice_id: Some("INV-1".into()),
                expires_at: "2026-12-02T10:00:00Z".into(),
                approvals: 1,
                required_approvals: 2,
                signals: vec!["First payment".into()],
                no_one_can_approve: false,
                approver_gap: None,
                reach: None,
            }],
            status: "pending".into(),
            order: "oldest".into(),
            search: QueueSearch { payee: "acme".into(), ..Default::default() },
            errors: vec![],
            next_query: Some("cursor=abc".into()),
        }
    }

    #[test]
    fn a_page_round_trips_and_reads_as_serde_json_does() {
        let page = sample();
        let ok: Result<QueuePage, ServerFnError> = Ok(page.clone());
        let text = <MiniPage as Encoder<_>>::encode(&ok).unwrap();
        let back: Result<QueuePage, ServerFnError> = <MiniPage as Decoder<_>>::decode(&text).unwrap();
        assert_eq!(back.unwrap(), page);
        // The same JSON serde reads: one shape for the page types, whichever side writes.
        let serde_back: QueuePage = serde_json::from_str(&text[1..]).unwrap();
        assert_eq!(serde_back, page);
    }

    #[test]
    fn an_error_keeps_its_code_and_anything_else_is_unreadable() {
        let err: Result<QueuePage, ServerFnError> = Err(ServerFnError::ServerError("forbidden".into()));
        let text = <MiniPage as Encoder<_>>::encode(&err).unwrap();
        assert_eq!(text, "Eforbidden");
        let back: Result<QueuePage, ServerFnError> = <MiniPage as Decoder<_>>::decode(&text).unwrap();
        assert!(matches!(back, Err(ServerFnError::ServerError(code)) if code == "forbidden"));
        for bad in ["", "X{}", "O{not json", "O{\"change_seq\":1}"] {
            assert!(<MiniPage as Decoder<Result<QueuePage, ServerFnError>>>::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_function_answers_round_trip() {
        use leptos::server_fn::{Decodes, Encodes};
        let page = sample();
        let bytes = <MiniJsonEncoding as Encodes<QueuePage>>::encode(&page).unwrap();
        assert_eq!(<MiniJsonEncoding as Decodes<QueuePage>>::decode(bytes).unwrap(), page);
        assert_eq!(
            <MiniJsonEncoding as Decodes<QueuePage>>::decode(bytes::Bytes::from_static(b"\xff")),
            Err(Unreadable)
        );
    }
}
