//! HTTP/1.1 connections whose requests are long-polls, served without
//! hyper's per-connection state (docs/DECISIONS.md, "Held HTTP/1.1
//! long-polls skip hyper's connection").
//!
//! hyper's HTTP/1 connection keeps two 8 KB buffers for its whole life (the
//! read buffer, reserved on the first read, and the write buffer's header
//! `Vec`, reserved when the connection is made) and has no server setting to
//! shrink them: most of what a held long-poll cost (docs/BENCHMARKS.md,
//! "Concurrent long-polls"). So a connection starts here: request heads are
//! read into a buffer sized by what arrived, and while each one is a
//! long-poll (`GET /api/v1/proposals/{id}?wait=…`, HTTP/1.1, no body, no
//! `Expect`, no `Upgrade`) it is parsed, handed to the same router hyper
//! would call, and its answer written here; while it waits, the connection
//! holds no buffer at all. At the first request that is anything else (or a
//! head this parser rejects or finds too long), the connection and every
//! byte read so far go to hyper, which serves the rest of it.
//!
//! What hyper does for these requests, done the same way: keep-alive, and
//! `Connection: close` from either side (answered with `connection: close`,
//! then the write side shut); pipelined requests (read while one is held,
//! answered in order); a client that closes its side while its request is
//! held ends the connection and drops the request (hyper's default, no
//! half-close); the drain (a held request is answered with `connection:
//! close`, an idle connection is closed); the `date` header; the length of a
//! body as `content-length`, none on 204 and 304.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::Watcher;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::ServiceExt;

/// A head not complete within this many bytes goes to hyper (which has its
/// own limits and answers for them).
const MAX_HEAD: usize = 8 * 1024;
/// Headers parsed here; a request with more goes to hyper.
const MAX_HEADERS: usize = 64;
/// What one read asks for.
const READ_CHUNK: usize = 1024;
/// The path every held poll starts with.
const PROPOSALS: &str = "/api/v1/proposals/";

/// Serves one HTTP/1.1 connection: long-polls here, the rest by hyper.
/// `graceful` is held until the connection ends (the drain waits for it);
/// `closing` says the drain has begun.
pub(super) async fn serve<S>(mut stream: TcpStream, service: S, graceful: Watcher, mut closing: watch::Receiver<()>)
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let mut buf: Vec<u8> = Vec::new();
    let mut draining = false;
    loop {
        // A whole head, or the connection's end, or hyper's turn.
        let (request, keep_alive) = loop {
            match parse(&buf) {
                Parsed::Held { request, len, keep_alive } => {
                    buf.drain(..len);
                    if buf.is_empty() {
                        // Nothing pipelined: hold no buffer while waiting.
                        buf = Vec::new();
                    }
                    break (*request, keep_alive);
                }
                Parsed::Partial if buf.len() < MAX_HEAD => {}
                Parsed::Partial | Parsed::Other => {
                    drop(closing);
                    let service = TowerToHyperService::new(
                        service.map_request(|req: hyper::Request<hyper::body::Incoming>| req.map(Body::new)),
                    );
                    // No upgrades: nothing here speaks WebSocket.
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(Prefixed::new(buf, stream)), service);
                    // Boxed, so a held poll's task is not sized by hyper's connection.
                    let _ = Box::pin(graceful.watch(conn)).await;
                    return;
                }
            }
            if draining && buf.is_empty() {
                return;
            }
            buf.reserve(READ_CHUNK);
            tokio::select! {
                read = stream.read_buf(&mut buf) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                changed = closing.changed(), if !draining => {
                    // The sender lives as long as the listener's loop waits.
                    let _ = changed;
                    draining = true;
                    if buf.is_empty() {
                        return;
                    }
                }
            }
            if buf.is_empty() {
                buf = Vec::new();
            }
        };

        let Some(response) =
            hold(&stream, &mut buf, service.clone().oneshot(request), &mut closing, &mut draining).await
        else {
            // The client closed its side, or the socket failed: the request is dropped.
            return;
        };
        let (parts, body) = response.into_parts();
        let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
            return;
        };
        // A drain that began while the answer was made ends the connection
        // after it (as hyper's graceful shutdown does).
        draining |= closing.has_changed().unwrap_or(true);
        let mut keep_alive = keep_alive && !draining;
        let out = encode(&parts.headers, parts.status, &body, &mut keep_alive);
        drop((parts, body));
        if stream.write_all(&out).await.is_err() {
            return;
        }
        drop(out);
        if !keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Waits for `call`'s answer while watching the connection: bytes that
/// arrive are kept for after it (pipelining); the client's end (EOF)
/// abandons the request, as hyper does without half-close. None when abandoned.
async fn hold<F>(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    call: F,
    closing: &mut watch::Receiver<()>,
    draining: &mut bool,
) -> Option<Response<Body>>
where
    F: std::future::Future<Output = Result<Response<Body>, Infallible>>,
{
    tokio::pin!(call);
    // Once a pipelined request is read, the socket is left alone until the
    // answer is written (hyper does the same).
    let mut watching = buf.is_empty();
    loop {
        tokio::select! {
            response = &mut call => return Some(response.unwrap_or_else(|never| match never {})),
            ready = stream.readable(), if watching => {
                ready.ok()?;
                let mut chunk = [0u8; 256];
                match stream.try_read(&mut chunk) {
                    Ok(0) => return None,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        watching = false;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => return None,
                }
            }
            changed = closing.changed(), if !*draining => {
                let _ = changed;
                *draining = true;
            }
        }
    }
}

enum Parsed {
    /// A complete long-poll head of `len` bytes.
    Held { request: Box<Request<Body>>, len: usize, keep_alive: bool },
    /// Not a whole head yet.
    Partial,
    /// Anything else: hyper's.
    Other,
}

/// The head at the start of `buf`, if it is a long-poll this module serves.
fn parse(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Partial;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let len = match head.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Other,
    };
    if head.method != Some("GET") || head.version != Some(1) {
        return Parsed::Other;
    }
    let Some(path) = head.path.filter(|path| is_long_poll(path)) else {
        return Parsed::Other;
    };
    let Ok(uri) = Uri::try_from(path) else {
        return Parsed::Other;
    };
    let mut map = HeaderMap::with_capacity(head.headers.len());
    let mut keep_alive = true;
    for h in head.headers.iter() {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(h.name.as_bytes()), HeaderValue::from_bytes(h.value))
        else {
            return Parsed::Other;
        };
        match name {
            header::CONTENT_LENGTH if value.as_bytes() != b"0" => return Parsed::Other,
            header::TRANSFER_ENCODING | header::EXPECT | header::UPGRADE => return Parsed::Other,
            header::CONNECTION if has_token(&value, "close") => keep_alive = false,
            _ => {}
        }
        map.append(name, value);
    }
    let mut request = Request::new(Body::empty());
    *request.method_mut() = Method::GET;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = map;
    Parsed::Held { request: Box::new(request), len, keep_alive }
}

/// `/api/v1/proposals/{id}?…wait=…`: the one route that holds requests.
fn is_long_poll(path: &str) -> bool {
    let Some(rest) = path.strip_prefix(PROPOSALS) else {
        return false;
    };
    let Some((id, query)) = rest.split_once('?') else {
        return false;
    };
    !id.is_empty() && !id.contains('/') && query.split('&').any(|pair| pair.starts_with("wait="))
}

/// Whether a comma-separated header value lists `token` (any case).
fn has_token(value: &HeaderValue, token: &str) -> bool {
    value.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

/// The answer's bytes, as hyper writes them: status line, the response's
/// headers (names lower case), `connection: close` when the connection
/// ends after it, `content-length` where a body may be, `date`.
/// `keep_alive` turns false when the response itself says close.
fn encode(headers: &HeaderMap, status: StatusCode, body: &[u8], keep_alive: &mut bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + headers.len() * 32 + body.len());
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes());
    out.extend_from_slice(b"\r\n");
    let mut wrote_date = false;
    let mut says_close = false;
    for (name, value) in headers {
        match *name {
            // The framing is this module's.
            header::CONTENT_LENGTH | header::TRANSFER_ENCODING => continue,
            header::CONNECTION if has_token(value, "close") => says_close = true,
            header::DATE => wrote_date = true,
            _ => {}
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if says_close {
        *keep_alive = false;
    } else if !*keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    let may_have_body = !matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED);
    if may_have_body {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !wrote_date {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(
            crate::platform::clock::system_now().format("%a, %d %b %Y %H:%M:%S GMT").to_string().as_bytes(),
        );
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if may_have_body {
        out.extend_from_slice(body);
    }
    out
}

/// The connection handed to hyper: the bytes already read, then the socket.
struct Prefixed {
    prefix: Vec<u8>,
    read: usize,
    stream: TcpStream,
}

impl Prefixed {
    fn new(prefix: Vec<u8>, stream: TcpStream) -> Prefixed {
        Prefixed { prefix, read: 0, stream }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read < this.prefix.len() {
            let n = out.remaining().min(this.prefix.len() - this.read);
            out.put_slice(&this.prefix[this.read..this.read + n]);
            this.read += n;
            if this.read == this.prefix.len() {
                this.prefix = Vec::new();
                this.read = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, out)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use axum::extract::{Path, Query};
    use axum::response::IntoResponse;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Sets its flag when the handler's future is dropped before finishing.
    struct Dropped(Arc<AtomicBool>, bool);
    impl Drop for Dropped {
        fn drop(&mut self) {
            if !self.1 {
                self.0.store(true, Ordering::SeqCst);
            }
        }
    }

    /// A proposal route like the agent API's: 200 with a body and an ETag,
    /// 304 when `If-None-Match` matches; `?sleep=ms` holds the answer.
    fn app(dropped: Arc<AtomicBool>) -> axum::Router {
        let proposal = move |Path(id): Path<String>,
                             Query(query): Query<std::collections::HashMap<String, String>>,
                             headers: HeaderMap| {
            let dropped = dropped.clone();
            async move {
                let mut guard = Dropped(dropped, false);
                if let Some(ms) = query.get("sleep") {
                    tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
                }
                guard.1 = true;
                let etag = format!("\"{id}-1\"");
                if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
                    return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
                }
                let body = format!("{{\"id\":\"{id}\",\"status\":\"pending_approval\"}}");
                (StatusCode::OK, [(header::ETAG, etag), (header::CONTENT_TYPE, "application/json".into())], body)
                    .into_response()
            }
        };
        axum::Router::new()
            .route("/api/v1/proposals/{id}", axum::routing::get(proposal))
            .route("/echo", axum::routing::post(|body: String| async move { body }))
    }

    async fn start(
        dropped: Arc<AtomicBool>,
    ) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(super::super::connections::serve(
            listener,
            app(dropped),
            async {
                let _ = stopped.await;
            },
            || {},
        ));
        (addr, stop, server)
    }

    /// Sends `requests` on one connection, reads until the server closes it.
    async fn exchange(addr: SocketAddr, requests: &str) -> String {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(requests.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), c.read_to_string(&mut answer)).await.unwrap().unwrap();
        answer
    }

    /// An answer's status line, header lines without `date` (sorted) and body.
    fn shape(answer: &str) -> (String, BTreeSet<String>, String) {
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().to_owned();
        let headers = lines.filter(|l| !l.starts_with("date: ")).map(str::to_owned).collect();
        (status, headers, body.to_owned())
    }

    fn has_date(answer: &str) -> bool {
        answer.split("\r\n").any(|l| l.starts_with("date: ") && l.ends_with(" GMT"))
    }

    #[tokio::test]
    async fn a_long_poll_is_answered_byte_for_byte_as_hyper_answers_it() {
        let (addr, _stop, _server) = start(Arc::default()).await;
        for if_none_match in ["", "if-none-match: \"p1-1\"\r\n"] {
            // Without `wait` the request is hyper's; with it, this module's.
            let by_hyper = exchange(
                addr,
                &format!("GET /api/v1/proposals/p1 HTTP/1.1\r\nhost: x\r\n{if_none_match}connection: close\r\n\r\n"),
            )
            .await;
            let held = exchange(
                addr,
                &format!(
                    "GET /api/v1/proposals/p1?wait=1 HTTP/1.1\r\nhost: x\r\n{if_none_match}connection: close\r\n\r\n"
                ),
            )
            .await;
            assert!(has_date(&by_hyper) && has_date(&held), "{by_hyper}\n{held}");
            assert_eq!(shape(&held), shape(&by_hyper), "{held}");
        }
        let (status, headers, _) = shape(
            &exchange(addr, "GET /api/v1/proposals/p1?wait=1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await,
        );
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(headers.contains("content-length: 39") && headers.contains("connection: close"), "{headers:?}");
    }

    #[tokio::test]
    async fn pipelined_long_polls_are_answered_in_order_on_a_kept_alive_connection() {
        let (addr, _stop, _server) = start(Arc::default()).await;
        // The first is held while the next two arrive in the same segment.
        let answer = exchange(
            addr,
            "GET /api/v1/proposals/a?wait=5&sleep=200 HTTP/1.1\r\nhost: x\r\n\r\n\
             GET /api/v1/proposals/b?wait=5 HTTP/1.1\r\nhost: x\r\nif-none-match: \"b-1\"\r\n\r\n\
             GET /api/v1/proposals/c?wait=5 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        )
        .await;
        let answers: Vec<_> = answer.split("HTTP/1.1 ").skip(1).collect();
        assert_eq!(answers.len(), 3, "{answer}");
        assert!(
            answers[0].starts_with("200 OK")
                && answers[0].contains("\"id\":\"a\"")
                && !answers[0].contains("connection")
        );
        assert!(answers[1].starts_with("304 Not Modified") && !answers[1].contains("content-length"), "{}", answers[1]);
        assert!(answers[2].contains("\"id\":\"c\"") && answers[2].contains("connection: close"), "{}", answers[2]);

        // Kept alive between requests sent one at a time.
        let mut c = TcpStream::connect(addr).await.unwrap();
        for id in ["x", "y"] {
            c.write_all(format!("GET /api/v1/proposals/{id}?wait=1 HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut buf = vec![0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await.unwrap().unwrap();
            let text = String::from_utf8_lossy(&buf[..n]);
            assert!(
                text.starts_with("HTTP/1.1 200 OK")
                    && text.ends_with(&format!("\"id\":\"{id}\",\"status\":\"pending_approval\"}}")),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn other_requests_go_to_hyper_with_every_byte_already_read() {
        let (addr, _stop, _server) = start(Arc::default()).await;
        // A long-poll, then a request with a body pipelined behind it, then
        // a long-poll hyper now serves.
        let answer = exchange(
            addr,
            "GET /api/v1/proposals/a?wait=5&sleep=100 HTTP/1.1\r\nhost: x\r\n\r\n\
             POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello\
             GET /api/v1/proposals/b?wait=5 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        )
        .await;
        let answers: Vec<_> = answer.split("HTTP/1.1 ").skip(1).collect();
        assert_eq!(answers.len(), 3, "{answer}");
        assert!(answers[0].contains("\"id\":\"a\""), "{}", answers[0]);
        assert!(answers[1].starts_with("200 OK") && answers[1].ends_with("\r\n\r\nhello"), "{}", answers[1]);
        assert!(answers[2].contains("\"id\":\"b\"") && answers[2].contains("connection: close"), "{}", answers[2]);
        // A malformed head is hyper's too, which answers 400.
        let bad = exchange(addr, "GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nbad header\r\n\r\n").await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        // A long-poll with a body (or Expect) is hyper's: it is answered all the same.
        let with_body = exchange(
            addr,
            "GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
        )
        .await;
        assert!(with_body.starts_with("HTTP/1.1 200 OK") && with_body.contains("\"id\":\"a\""), "{with_body}");
    }

    #[tokio::test]
    async fn a_client_that_closes_while_held_ends_the_connection_and_drops_the_request() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (addr, _stop, _server) = start(dropped.clone()).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /api/v1/proposals/a?wait=60&sleep=60000 HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!dropped.load(Ordering::SeqCst), "held while the client stays");
        drop(c);
        tokio::time::timeout(Duration::from_secs(5), async {
            while !dropped.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the held request is dropped when its client goes away");
    }

    #[tokio::test]
    async fn the_drain_answers_a_held_poll_with_connection_close_and_closes_idle_ones() {
        let (addr, stop, server) = start(Arc::default()).await;
        let mut held = TcpStream::connect(addr).await.unwrap();
        held.write_all(b"GET /api/v1/proposals/a?wait=5&sleep=400 HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        // An idle kept-alive connection, after one answer.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET /api/v1/proposals/b?wait=1 HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let mut buf = vec![0u8; 4096];
        assert!(idle.read(&mut buf).await.unwrap() > 0);
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server).await.expect("the drain ends").unwrap();
        let mut answer = String::new();
        held.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.contains("connection: close\r\n"), "{answer}");
        assert_eq!(idle.read(&mut buf).await.unwrap(), 0, "the idle connection is closed");
    }

    /// What the server's shutdown does: the drain's own wake-up answers the
    /// held poll (a 304 at once), and that answer must still say the
    /// connection ends.
    #[tokio::test]
    async fn a_poll_woken_by_the_drain_itself_is_answered_with_connection_close() {
        let wake = Arc::new(tokio::sync::Notify::new());
        let waiting = wake.clone();
        let app = axum::Router::new().route(
            "/api/v1/proposals/{id}",
            axum::routing::get(move || {
                let waiting = waiting.clone();
                async move {
                    waiting.notified().await;
                    StatusCode::NOT_MODIFIED
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(super::super::connections::serve(
            listener,
            app,
            async {
                let _ = stopped.await;
            },
            move || wake.notify_waiters(),
        ));
        let mut held = TcpStream::connect(addr).await.unwrap();
        held.write_all(b"GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server).await.expect("the drain ends").unwrap();
        let mut answer = String::new();
        held.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 304") && answer.contains("connection: close\r\n"), "{answer}");
    }

    #[test]
    fn only_the_proposal_long_poll_is_parsed_here() {
        assert!(is_long_poll("/api/v1/proposals/p_1?wait=60"));
        assert!(is_long_poll("/api/v1/proposals/p_1?x=1&wait=0"));
        assert!(!is_long_poll("/api/v1/proposals/p_1"));
        assert!(!is_long_poll("/api/v1/proposals/p_1?waiting=1"));
        assert!(!is_long_poll("/api/v1/proposals/p_1/events?wait=1"));
        assert!(!is_long_poll("/api/v1/proposals/?wait=1"));
        assert!(!is_long_poll("/api/v1/proposals?wait=1"));
        let head = |text: &str| match parse(text.as_bytes()) {
            Parsed::Held { keep_alive, len, .. } => Some((keep_alive, len)),
            Parsed::Partial => None,
            Parsed::Other => Some((false, 0)),
        };
        let get = "GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(head(get), Some((true, get.len())));
        assert_eq!(head(&get[..20]), None, "partial");
        assert_eq!(
            head("GET /api/v1/proposals/a?wait=5 HTTP/1.0\r\nhost: x\r\n\r\n"),
            Some((false, 0)),
            "HTTP/1.0 is hyper's"
        );
        assert_eq!(head("HEAD /api/v1/proposals/a?wait=5 HTTP/1.1\r\n\r\n"), Some((false, 0)));
        assert_eq!(head("GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nexpect: 100-continue\r\n\r\n"), Some((false, 0)));
        assert_eq!(
            head("GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"),
            Some((false, 0))
        );
        assert_eq!(head("GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nupgrade: h2c\r\n\r\n"), Some((false, 0)));
        let close = "GET /api/v1/proposals/a?wait=5 HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n";
        assert_eq!(head(close), Some((false, close.len())));
    }
}
