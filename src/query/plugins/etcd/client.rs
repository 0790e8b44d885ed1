//! A small client of etcd's v3 gRPC API over the hyper HTTP/2 and
//! rustls already in the server: one connection to the first endpoint
//! that answers, unary calls (`Range`, `Authenticate`) and the one
//! streaming `Watch`. A gRPC message is a 5-byte prefix (0, length) and
//! the protobuf; the call's status comes in the trailers (or in the
//! headers of a reply without a body). With `credentials` the token
//! `Authenticate` returns goes in every later request's `token` header.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, Request};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;

use super::setup::EtcdConfig;
use super::wire::{AuthenticateRequest, AuthenticateResponse};

/// A request body: one message, or a stream kept open (`Watch`).
type Body = UnsyncBoxBody<Bytes, Infallible>;

/// How long connecting, and each unary call, may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("{0}: {1}")]
    Connect(String, String),
    #[error("{0}")]
    Http(String),
    #[error("grpc status {0}: {1}")]
    Status(String, String),
    #[error("bad reply: {0}")]
    Reply(String),
}

/// An open connection to one endpoint.
pub struct Conn {
    sender: SendRequest<Body>,
    /// `http://HOST:PORT` or `https://...` (the endpoint as written).
    pub endpoint: String,
    token: Option<String>,
}

/// `HOST:PORT` and whether TLS is spoken, of an endpoint URL.
fn split(endpoint: &str) -> (String, bool) {
    let (rest, tls) = match endpoint.split_once("://") {
        Some(("https", r)) => (r, true),
        Some((_, r)) => (r, false),
        None => (endpoint, false),
    };
    (rest.trim_end_matches('/').to_string(), tls)
}

/// Connects to the first of `cfg`'s endpoints that answers, starting at
/// `first`, and authenticates when `credentials` are given; the index of
/// the one taken.
pub async fn connect(
    cfg: &EtcdConfig,
    tls: Option<&Arc<rustls::ClientConfig>>,
    first: usize,
) -> Result<(Conn, usize), EtcdError> {
    let n = cfg.endpoints.len();
    let mut last = EtcdError::Http("no endpoint".into());
    for i in (0..n).map(|k| (first + k) % n) {
        let endpoint = &cfg.endpoints[i];
        match tokio::time::timeout(TIMEOUT, open(endpoint, tls)).await {
            Ok(Ok(sender)) => {
                let mut conn = Conn {
                    sender,
                    endpoint: endpoint.clone(),
                    token: None,
                };
                if let Some((user, password)) = &cfg.credentials {
                    conn.authenticate(user, password).await?;
                }
                return Ok((conn, i));
            }
            Ok(Err(e)) => last = e,
            Err(_) => last = EtcdError::Connect(endpoint.clone(), "timed out".into()),
        }
    }
    Err(last)
}

/// TCP (and TLS when `tls` is given: a `tls` option or an `https://`
/// endpoint), then HTTP/2.
async fn open(endpoint: &str, tls: Option<&Arc<rustls::ClientConfig>>) -> Result<SendRequest<Body>, EtcdError> {
    let fail = |e: &dyn std::fmt::Display| EtcdError::Connect(endpoint.to_string(), e.to_string());
    let (authority, _) = split(endpoint);
    let tcp = tokio::net::TcpStream::connect(&authority).await.map_err(|e| fail(&e))?;
    tcp.set_nodelay(true).map_err(|e| fail(&e))?;
    match tls {
        None => handshake(TokioIo::new(tcp)).await.map_err(|e| fail(&e)),
        Some(config) => {
            let host = authority.rsplit_once(':').map_or(authority.as_str(), |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let server = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| fail(&e))?;
            let stream = tokio_rustls::TlsConnector::from(config.clone())
                .connect(server, tcp)
                .await
                .map_err(|e| fail(&e))?;
            handshake(TokioIo::new(stream)).await.map_err(|e| fail(&e))
        }
    }
}

/// The HTTP/2 handshake; the connection runs in a task of its own.
async fn handshake<T>(io: TokioIo<T>) -> Result<SendRequest<Body>, hyper::Error>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// `msg` in gRPC's framing.
fn frame(msg: &impl Message) -> Bytes {
    let body = msg.encode_to_vec();
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(0);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out.into()
}

/// A non-zero `grpc-status` in `map` as an error.
fn status(map: &HeaderMap) -> Result<(), EtcdError> {
    match map.get("grpc-status").and_then(|v| v.to_str().ok()) {
        None | Some("0") => Ok(()),
        Some(code) => {
            let message = map.get("grpc-message").and_then(|v| v.to_str().ok()).unwrap_or("");
            Err(EtcdError::Status(code.to_string(), unescape(message)))
        }
    }
}

/// `grpc-message` with its percent-escapes decoded.
fn unescape(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        let hex = |b: Option<u8>| (b? as char).to_digit(16);
        if b == b'%' {
            let mut ahead = bytes.clone();
            if let (Some(hi), Some(lo)) = (hex(ahead.next()), hex(ahead.next())) {
                out.push((hi * 16 + lo) as u8);
                bytes = ahead;
                continue;
            }
        }
        out.push(b);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The messages of a reply body, read as they come.
pub struct Replies {
    body: Incoming,
    buf: BytesMut,
}

impl Replies {
    /// The next message, `None` when the call ended well.
    pub async fn next<M: Message + Default>(&mut self) -> Result<Option<M>, EtcdError> {
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
                if self.buf.len() >= 5 + len {
                    self.buf.advance(5);
                    let msg = self.buf.split_to(len);
                    return M::decode(msg.freeze())
                        .map(Some)
                        .map_err(|e| EtcdError::Reply(e.to_string()));
                }
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(EtcdError::Http(e.to_string())),
                Some(Ok(f)) => match f.into_data() {
                    Ok(data) => self.buf.extend_from_slice(&data),
                    Err(f) => {
                        if let Some(trailers) = f.trailers_ref() {
                            status(trailers)?;
                        }
                    }
                },
            }
        }
    }
}

impl Conn {
    /// Starts call `method` (`/etcdserverpb.KV/Range`) with `body`.
    async fn call(&mut self, method: &str, body: Body) -> Result<Replies, EtcdError> {
        let (authority, https) = split(&self.endpoint);
        let uri = format!("{}://{authority}{method}", if https { "https" } else { "http" });
        let mut req = Request::post(uri)
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(token) = &self.token {
            req = req.header("token", token.as_str());
        }
        let req = req.body(body).map_err(|e| EtcdError::Http(e.to_string()))?;
        self.sender.ready().await.map_err(|e| EtcdError::Http(e.to_string()))?;
        let reply = self
            .sender
            .send_request(req)
            .await
            .map_err(|e| EtcdError::Http(e.to_string()))?;
        if !reply.status().is_success() {
            return Err(EtcdError::Http(format!("HTTP status {}", reply.status())));
        }
        status(reply.headers())?;
        Ok(Replies {
            body: reply.into_body(),
            buf: BytesMut::new(),
        })
    }

    /// A call with one request and one reply.
    pub async fn unary<M: Message + Default>(&mut self, method: &str, req: &impl Message) -> Result<M, EtcdError> {
        let body = Full::new(frame(req)).boxed_unsync();
        let call = async {
            let mut replies = self.call(method, body).await?;
            let reply = replies.next::<M>().await?;
            while replies.next::<M>().await?.is_some() {}
            reply.ok_or_else(|| EtcdError::Reply(format!("{method}: no reply")))
        };
        tokio::time::timeout(TIMEOUT, call)
            .await
            .map_err(|_| EtcdError::Http(format!("{method}: timed out")))?
    }

    /// A streaming call: `first` sent, the request kept open, the replies
    /// read as they come.
    pub async fn stream(&mut self, method: &str, first: &impl Message) -> Result<Replies, EtcdError> {
        let one = futures::stream::once(std::future::ready(Ok(Frame::data(frame(first)))));
        let open = one.chain(futures::stream::pending());
        self.call(method, StreamBody::new(open).boxed_unsync()).await
    }

    /// `Authenticate`: the token for later requests.
    async fn authenticate(&mut self, name: &str, password: &str) -> Result<(), EtcdError> {
        let req = AuthenticateRequest {
            name: name.to_string(),
            password: password.to_string(),
        };
        let reply: AuthenticateResponse = self.unary("/etcdserverpb.Auth/Authenticate", &req).await?;
        self.token = Some(reply.token);
        Ok(())
    }
}
