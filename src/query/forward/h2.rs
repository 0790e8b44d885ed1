//! One HTTP/2 connection to an upstream, kept open and shared by every
//! query as concurrent streams (hyper's client), as DNS over HTTPS and the
//! `grpc` directive both ask: opened on first use, closed once it idles
//! for `expire`, opened again when it closed or aged past `max_age`. How
//! the bytes beneath are carried (TLS, or plain TCP for gRPC's h2c) is
//! the caller's `open`.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};

use super::exchange::ExchangeError;
use crate::query::forward::setup::ForwardConfig;

/// A stream HTTP/2 can run over.
pub trait Carrier: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Carrier for T {}

/// The request sender of an open connection.
pub type Sender = SendRequest<Full<Bytes>>;

/// When a connection was last used, shared with its task.
type Used = Arc<Mutex<Instant>>;

/// The open connection's sender, when it was opened and last used.
type Open = (Sender, Instant, Used);

/// The shared connection of one upstream.
#[derive(Default)]
pub struct Shared {
    slot: tokio::sync::Mutex<Option<Open>>,
}

/// An error of hyper or of the exchange, as an I/O error (a reused
/// connection is then tried once more on a fresh one).
pub fn other(e: impl std::fmt::Display) -> ExchangeError {
    ExchangeError::Io(io::Error::other(e.to_string()))
}

impl Shared {
    /// The open connection's sender (and whether it was just opened);
    /// `open` gives the stream a new one runs over.
    pub async fn sender<O, F, C>(
        &self,
        cfg: &ForwardConfig,
        renew: bool,
        open: O,
    ) -> Result<(Sender, bool), ExchangeError>
    where
        O: FnOnce() -> F,
        F: Future<Output = Result<C, ExchangeError>>,
        C: Carrier,
    {
        let mut slot = self.slot.lock().await;
        if let Some((s, opened, used)) = slot.as_ref() {
            let fresh = cfg.max_age.is_zero() || opened.elapsed() < cfg.max_age;
            if !renew && fresh && !s.is_closed() {
                if let Ok(mut used) = used.lock() {
                    *used = Instant::now();
                }
                return Ok((s.clone(), false));
            }
        }
        *slot = None;
        let used = Arc::new(Mutex::new(Instant::now()));
        let sender = connect(open().await?, cfg.expire, used.clone()).await?;
        *slot = Some((sender.clone(), Instant::now(), used));
        Ok((sender, true))
    }
}

/// The HTTP/2 handshake over `stream`; the connection runs in its own task
/// until the server closes it or it idles for `expire` (`used` says when a
/// query last took it; the sender then reports closed).
async fn connect(stream: impl Carrier, expire: Duration, used: Used) -> Result<Sender, ExchangeError> {
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .map_err(other)?;
    tokio::spawn(async move {
        tokio::pin!(conn);
        loop {
            let idle = used.lock().map(|u| u.elapsed()).unwrap_or(Duration::MAX);
            if idle >= expire {
                return; // dropping the connection closes it
            }
            tokio::select! {
                _ = &mut conn => return,
                _ = tokio::time::sleep(expire - idle) => {}
            }
        }
    });
    Ok(sender)
}
