//! Connections the simulator can abort: the `drop_after_accept` fault must
//! close the TCP connection without writing a single response byte.
//!
//! [`SimListener`] wraps every accepted stream in a [`KillableStream`]; the
//! handler reaches the stream's kill switch through the [`ConnInfo`]
//! connect-info. Once killed, every write fails, so hyper gives up on the
//! connection before anything reaches the socket, and axum drops (closes)
//! the stream.

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

pub(crate) struct SimListener(pub TcpListener);

impl Listener for SimListener {
    type Io = KillableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    return (KillableStream { inner: stream, killed: Arc::new(AtomicBool::new(false)) }, addr);
                }
                Err(e) => {
                    // As axum does: back off on resource exhaustion, never spin.
                    tracing::warn!(error = %e, "rail-sim: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

pub(crate) struct KillableStream {
    inner: TcpStream,
    killed: Arc<AtomicBool>,
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "rail-sim: connection dropped by fault injection")
}

impl AsyncRead for KillableStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.killed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.killed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.killed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.killed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Per-connection information for handlers: the peer and the kill switch.
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    #[allow(dead_code)]
    pub remote: SocketAddr,
    killed: Arc<AtomicBool>,
}

impl ConnInfo {
    /// From now on nothing more is written to this connection; it closes
    /// as soon as hyper tries to answer.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
    }
}

impl Connected<IncomingStream<'_, SimListener>> for ConnInfo {
    fn connect_info(stream: IncomingStream<'_, SimListener>) -> Self {
        ConnInfo { remote: *stream.remote_addr(), killed: stream.io().killed.clone() }
    }
}
