//! The `grpc` directive's transport to one upstream: CoreDNS's gRPC
//! service, `POST /coredns.dns.DnsService/Query` of `application/grpc`
//! whose body is the query as one `DnsPacket` (`grpcwire.rs`), over one
//! HTTP/2 connection kept open and shared by every query as concurrent
//! streams (`h2.rs`): over TLS (ALPN `h2`, the certificate always
//! verified) with `tls`, plain HTTP/2 (h2c) without, over TCP or a unix
//! socket (`unix://PATH`, h2c). The call's
//! `grpc-status` is read from the trailers (or the headers of a
//! Trailers-Only reply): `NOT_FOUND` is NXDOMAIN, as CoreDNS reads it,
//! any other failure no answer. The answer is given back under the
//! caller's ID and must repeat its question.
//!
//! Its own metrics, as CoreDNS's `proxy.go` counts them (an answer that
//! came back): `coredns_grpc_requests_total{to}`,
//! `coredns_grpc_responses_total{rcode,to}` and
//! `coredns_grpc_request_duration_seconds{to}`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use http_body_util::{BodyExt, Full, Limited};
use tokio_rustls::TlsConnector;

use super::exchange::{connect, matching, ExchangeError, Handshake};
use super::grpcwire::{frame, message, MAX_BODY, MAX_MESSAGE, NOT_FOUND, OK, PATH};
use super::h2::{other, Sender, Shared};
use crate::metrics::{rcode_slot, Durations, RCODE_LABELS};
use crate::query::forward::setup::ForwardConfig;

/// The gRPC side of one upstream.
pub struct Grpc {
    addr: SocketAddr,
    /// A `unix://` upstream's socket, dialled instead of `addr`.
    unix: Option<PathBuf>,
    /// `http[s]://ADDR/coredns.dns.DnsService/Query`
    url: String,
    /// With `tls`: how a connection is opened; without: h2c.
    pub tls: Option<Handshake>,
    h2: Shared,
    /// Answers by rcode slot ([`RCODE_LABELS`]), and how long they took.
    pub answers: [AtomicU64; 7],
    pub durations: Durations,
}

impl Grpc {
    /// Over TLS with `config` (and `name` checked), else h2c. `None` when
    /// `name` is not a DNS name or IP (never on a checked config).
    pub fn new(addr: SocketAddr, name: &str, config: Option<&rustls::ClientConfig>) -> Option<Grpc> {
        let tls = match config {
            Some(config) => {
                let mut config = config.clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                let label = format!("grpc {addr}");
                Some(Handshake::new(addr, name, TlsConnector::from(Arc::new(config)), label)?)
            }
            None => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        Some(Grpc {
            addr,
            unix: None,
            url: format!("{scheme}://{addr}{PATH}"),
            tls,
            h2: Shared::default(),
            answers: Default::default(),
            durations: Durations::default(),
        })
    }

    /// The upstream at unix socket `path` (h2c; the authority `localhost`,
    /// as gRPC names a unix target's).
    pub fn unix(path: &str) -> Grpc {
        Grpc {
            addr: crate::query::forward::setup::tls::UNIX,
            unix: Some(PathBuf::from(path)),
            url: format!("http://localhost{PATH}"),
            tls: None,
            h2: Shared::default(),
            answers: Default::default(),
            durations: Durations::default(),
        }
    }

    /// Asks `request` over the shared connection; once more on a new one
    /// when a reused connection fails.
    pub async fn exchange(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        cfg: &ForwardConfig,
    ) -> Result<Message, ExchangeError> {
        let started = Instant::now();
        let open = |renew| async move {
            match (&self.tls, &self.unix) {
                (_, Some(path)) => {
                    let local = || async { tokio::net::UnixStream::connect(path).await.map_err(ExchangeError::Io) };
                    self.h2.sender(cfg, renew, local).await
                }
                (Some(tls), None) => self.h2.sender(cfg, renew, || tls.open(cfg)).await,
                (None, None) => {
                    let plain = || async { connect(self.addr, cfg.source_address).await.map_err(ExchangeError::Io) };
                    self.h2.sender(cfg, renew, plain).await
                }
            }
        };
        let got = super::exchange::once_more(open, |s| self.ask(s, request, id, query)).await;
        if let Ok(m) = &got {
            self.answers[rcode_slot(m.metadata.response_code)].fetch_add(1, Relaxed);
            self.durations.observe(started.elapsed().as_nanos() as u64);
        }
        got
    }

    async fn ask(&self, mut sender: Sender, request: &[u8], id: u16, query: &Query) -> Result<Message, ExchangeError> {
        if request.len() < 12 || request.len() > MAX_MESSAGE {
            return Err(other("request too short or too long"));
        }
        let req = hyper::Request::builder()
            .method(hyper::Method::POST)
            .uri(&self.url)
            .header(hyper::header::CONTENT_TYPE, "application/grpc")
            .header(hyper::header::TE, "trailers")
            .body(Full::new(Bytes::from(frame(request))))
            .map_err(other)?;
        sender.ready().await.map_err(other)?;
        let response = sender.send_request(req).await.map_err(other)?;
        if response.status() != hyper::StatusCode::OK {
            return Err(other(format!("HTTP status {}", response.status())));
        }
        let early = status(response.headers());
        let body = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(other)?;
        let code = early.or_else(|| body.trailers().and_then(status));
        match code {
            Some(OK) => {}
            Some(NOT_FOUND) => return Ok(nxdomain(id, query)),
            Some(code) => return Err(other(format!("grpc-status {code}"))),
            None => return Err(other("no grpc-status")),
        }
        let bytes = body.to_bytes();
        let mut reply = message(&bytes).ok_or_else(|| other("not one DnsPacket"))?.to_vec();
        if reply.len() < 12 {
            return Err(other("answer too short"));
        }
        reply[..2].copy_from_slice(&id.to_be_bytes());
        matching(&reply, id, query).ok_or_else(|| other("answer to another question"))
    }

    /// The `to` label: the address as CoreDNS writes it (`IP:PORT`, or
    /// `unix://PATH`).
    pub fn to(&self) -> String {
        match &self.unix {
            Some(path) => format!("unix://{}", path.display()),
            None => self.addr.to_string(),
        }
    }

    /// Answers by rcode, for `coredns_grpc_responses_total`.
    pub fn by_rcode(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        RCODE_LABELS
            .into_iter()
            .zip(&self.answers)
            .map(|(l, n)| (l, n.load(Relaxed)))
    }
}

/// A call's `grpc-status`, if these headers carry one.
fn status(headers: &hyper::HeaderMap) -> Option<u32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// The NXDOMAIN CoreDNS makes of a `NOT_FOUND` call.
fn nxdomain(id: u16, query: &Query) -> Message {
    let mut m = Message::new(id, MessageType::Response, OpCode::Query);
    m.metadata.response_code = ResponseCode::NXDomain;
    m.metadata.recursion_desired = true;
    m.add_query(query.clone());
    m
}
