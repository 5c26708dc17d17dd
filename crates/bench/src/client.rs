//! The load generator's HTTP client: one plain HTTP/1.1 connection per
//! worker (hyper's connection API, no pool, no TLS), requests sent one after
//! another on it, each answer read in full. The same client measures the
//! server, the baselines and the rail simulator.

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

pub type Body = Full<Bytes>;

/// The socket address of `http://HOST:PORT` (loopback URLs only).
pub fn addr_of(base: &str) -> anyhow::Result<SocketAddr> {
    let rest = base.strip_prefix("http://").with_context(|| format!("{base} is not an http:// URL"))?;
    rest.trim_end_matches('/').parse().with_context(|| format!("{base} does not name IP:PORT"))
}

/// A request to `path` with a `Host` header for `addr` and the given headers.
pub fn request(method: Method, addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: Bytes) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path).header(HOST, addr.to_string());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(body)).expect("a valid request")
}

/// `GET path` with headers.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Request<Body> {
    request(Method::GET, addr, path, headers, Bytes::new())
}

/// `POST path` with a JSON body and headers.
pub fn post_json(addr: SocketAddr, path: &str, headers: &[(&str, &str)], json: Vec<u8>) -> Request<Body> {
    let mut req = request(Method::POST, addr, path, headers, Bytes::from(json));
    req.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    req
}

/// A fully read answer.
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 connection.
pub struct Conn {
    sender: SendRequest<Body>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(addr).await.with_context(|| format!("connecting to {addr}"))?;
        Conn::over(stream).await
    }

    /// [`Conn::open`] from the loopback address `from` (one source address
    /// has about 28,000 ephemeral ports: more connections than that to one
    /// server need several).
    pub async fn open_from(addr: SocketAddr, from: std::net::IpAddr) -> anyhow::Result<Conn> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        // The port is chosen at connect, for the whole address pair: bound
        // first, the kernel would search for a port free on its own, slower
        // with every connection held.
        let on: libc::c_int = 1;
        // SAFETY: a socket option set on a socket this function owns, from a
        // value that outlives the call.
        let set = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&socket),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        anyhow::ensure!(set == 0, "IP_BIND_ADDRESS_NO_PORT: {}", std::io::Error::last_os_error());
        socket.bind(SocketAddr::new(from, 0)).with_context(|| format!("binding {from}"))?;
        let stream = socket.connect(addr).await.with_context(|| format!("connecting to {addr} from {from}"))?;
        Conn::over(stream).await
    }

    async fn over(stream: TcpStream) -> anyhow::Result<Conn> {
        stream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn { sender })
    }

    /// Sends `req` and reads the whole answer.
    pub async fn send(&mut self, req: Request<Body>) -> anyhow::Result<Reply> {
        self.sender.ready().await?;
        let response = self.sender.send_request(req).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply { status, body })
    }

    /// [`Conn::send`], timed.
    pub async fn timed(&mut self, req: Request<Body>) -> anyhow::Result<(Reply, Duration)> {
        let start = Instant::now();
        let reply = self.send(req).await?;
        Ok((reply, start.elapsed()))
    }
}
