//! The listener's loop: accepts connections and serves each over HTTP/1.1
//! or HTTP/2 with prior knowledge (h2c), told apart by the connection's
//! first bytes (docs/DECISIONS.md, "HTTP/2 for held requests").
//!
//! Each connection's task holds only its own protocol's state: a held
//! HTTP/1.1 long-poll pays for hyper's HTTP/1 connection, not for the
//! larger of the two (what a generic "either protocol" connection costs
//! every connection, about 1 KB more each, docs/BENCHMARKS.md "Concurrent long-polls").
//! The bytes are peeked, not read, so nothing needs putting back. An
//! HTTP/1.1 connection starts in `held.rs`, which serves long-polls without
//! hyper's per-connection buffers and gives hyper the rest.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// What an HTTP/2 client sends first (RFC 9113 section 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How long a connection may take to send the first 24 bytes when they
/// begin like the preface (they come in one segment in practice).
const PREFACE_PATIENCE: Duration = Duration::from_secs(5);

/// Serves `app` on `listener` until `stop` resolves, then stops accepting
/// and waits for every connection to finish: an HTTP/1.1 connection after
/// its request in flight, an HTTP/2 one after its open streams (GOAWAY).
/// `draining` runs once every connection has been told of the drain, so
/// what it wakes (held long-polls) is answered as part of it, with
/// `connection: close`.
pub async fn serve<S>(
    listener: TcpListener,
    app: S,
    stop: impl std::future::Future<Output = ()>,
    draining: impl FnOnce(),
) where
    S: tower::Service<axum::extract::Request, Response = axum::response::Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let graceful = GracefulShutdown::new();
    // Told to connections that have not said which protocol they speak yet
    // (and so are not watched by `graceful`): a silent one must not hold
    // the drain open.
    let (closing, _) = tokio::sync::watch::channel(());
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(connection) => connection,
                Err(e) => {
                    wait_after_accept_error(e).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        // The peer's address for `ConnectInfo`, per connection (wrapping the
        // router, not rebuilding it: what `into_make_service_with_connect_info` does).
        let service = tower::Layer::layer(&axum::Extension(ConnectInfo(peer)), app.clone());
        let graceful = graceful.watcher();
        let mut closed = closing.subscribe();
        tokio::spawn(async move {
            let protocol = tokio::select! {
                protocol = Protocol::of(&stream) => protocol,
                _ = closed.changed() => Protocol::Gone,
            };
            match protocol {
                Protocol::Http2 => {
                    drop(closed);
                    let service = TowerToHyperService::new(
                        service.map_request(|req: hyper::Request<Incoming>| req.map(axum::body::Body::new)),
                    );
                    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service);
                    // Boxed: the task's own size is what a held HTTP/1.1 poll pays.
                    let _ = Box::pin(graceful.watch(conn)).await;
                }
                // Long-polls without hyper's connection, the rest by hyper.
                Protocol::Http1 => super::held::serve(stream, service, graceful, closed).await,
                Protocol::Gone => {}
            }
        });
    }
    drop(listener);
    let _ = closing.send(());
    draining();
    graceful.shutdown().await;
}

#[derive(Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
    /// Closed (or failed) before sending anything.
    Gone,
}

impl Protocol {
    /// The connection's protocol from its first bytes, left unread.
    async fn of(stream: &TcpStream) -> Protocol {
        let mut first = [0u8; PREFACE.len()];
        let deadline = tokio::time::Instant::now() + PREFACE_PATIENCE;
        loop {
            let n = match stream.peek(&mut first).await {
                Ok(0) | Err(_) => return Protocol::Gone,
                Ok(n) => n,
            };
            match Protocol::from_prefix(&first[..n]) {
                Some(protocol) => return protocol,
                // The preface so far: wait for the rest of it (peek returns
                // at once while bytes are unread, so poll gently).
                None if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(5)).await,
                None => return Protocol::Http1,
            }
        }
    }

    /// The protocol `bytes` (a connection's first, at least one) begin,
    /// None while they are a proper beginning of the preface.
    fn from_prefix(bytes: &[u8]) -> Option<Protocol> {
        let n = bytes.len().min(PREFACE.len());
        if bytes[..n] != PREFACE[..n] {
            Some(Protocol::Http1)
        } else if n == PREFACE.len() {
            Some(Protocol::Http2)
        } else {
            None
        }
    }
}

/// A failed `accept`: the peer's own failure is skipped; anything else (out
/// of descriptors, say) is logged and the loop pauses a second, so it
/// neither spins nor stops serving.
async fn wait_after_accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_http2_anything_else_http1_and_a_part_of_it_waits() {
        assert_eq!(Protocol::from_prefix(PREFACE), Some(Protocol::Http2));
        assert_eq!(Protocol::from_prefix(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nand frames"), Some(Protocol::Http2));
        assert_eq!(Protocol::from_prefix(b"GET / HTTP/1.1\r\n"), Some(Protocol::Http1));
        assert_eq!(Protocol::from_prefix(b"P"), None);
        assert_eq!(Protocol::from_prefix(b"PRI * HTTP/2.0\r\n"), None);
        assert_eq!(Protocol::from_prefix(b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n"), Some(Protocol::Http1));
        assert_eq!(Protocol::from_prefix(b"POST /api/v1/proposals HTTP/1.1\r\n"), Some(Protocol::Http1));
    }

    /// The drain waits for a request in flight, not for a connection that
    /// never said anything.
    #[tokio::test]
    async fn stopping_waits_for_a_request_in_flight_but_not_for_a_silent_connection() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let app = axum::Router::new().route(
            "/slow",
            axum::routing::get(|| async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                "done"
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            app,
            async {
                let _ = stopped.await;
            },
            || {},
        ));
        let _silent = TcpStream::connect(addr).await.unwrap();
        let mut busy = TcpStream::connect(addr).await.unwrap();
        busy.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = tokio::time::Instant::now();
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the drain ends though a connection never spoke")
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(300), "it waited for the request in flight");
        let mut answer = String::new();
        busy.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("done"), "{answer}");
    }

    #[tokio::test]
    async fn a_preface_sent_in_pieces_is_waited_for_and_a_silent_close_is_gone() {
        use tokio::io::AsyncWriteExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(&PREFACE[..7]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            c.write_all(&PREFACE[7..]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(c);
            drop(TcpStream::connect(addr).await.unwrap());
        });
        let (first, _) = listener.accept().await.unwrap();
        assert_eq!(Protocol::of(&first).await, Protocol::Http2);
        let (second, _) = listener.accept().await.unwrap();
        assert_eq!(Protocol::of(&second).await, Protocol::Gone);
        client.await.unwrap();
    }
}
