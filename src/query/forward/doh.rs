//! DNS over HTTPS to one upstream (RFC 8484): one HTTP/2 connection over
//! TLS (ALPN `h2`) kept open and shared by every query as concurrent
//! streams (`h2.rs`). Each query is `POST /dns-query`
//! with the message as body, or with `doh_method GET` `GET
//! /dns-query?dns=BASE64URL`; the message goes with ID 0 (cache friendly,
//! as the RFC advises) and the answer is given back under the caller's ID.
//!
//! As for DNS over TLS, the certificate is always verified, a failed
//! handshake is counted and logged once until one succeeds again, and
//! nothing falls back to plain DNS.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use hickory_proto::op::{Message, Query};
use http_body_util::{BodyExt, Full, Limited};
use tokio_rustls::TlsConnector;

use super::exchange::{matching, ExchangeError, Handshake};
use super::h2::{other, Sender, Shared};
use crate::query::forward::setup::tls::DohMethod;
use crate::query::forward::setup::ForwardConfig;

const MEDIA: &str = "application/dns-message";

/// The HTTPS side of one upstream.
pub struct Doh {
    /// `https://HOST:PORT/dns-query`
    url: String,
    pub tls: Handshake,
    method: DohMethod,
    h2: Shared,
}

impl Doh {
    /// `None` when `name` is not a DNS name or IP (never on a checked config).
    pub fn new(
        addr: SocketAddr,
        host: &str,
        name: &str,
        method: DohMethod,
        config: &rustls::ClientConfig,
    ) -> Option<Doh> {
        let mut config = config.clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let authority = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let url = format!("https://{authority}:{}/dns-query", addr.port());
        let label = format!("{url} ({addr})");
        Some(Doh {
            tls: Handshake::new(addr, name, TlsConnector::from(Arc::new(config)), label)?,
            url,
            method,
            h2: Shared::default(),
        })
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
        let open = |renew| self.h2.sender(cfg, renew, || self.tls.open(cfg));
        super::exchange::once_more(open, |s| self.ask(s, request, id, query)).await
    }

    async fn ask(&self, mut sender: Sender, request: &[u8], id: u16, query: &Query) -> Result<Message, ExchangeError> {
        if request.len() < 12 {
            return Err(other("request too short"));
        }
        let mut body = request.to_vec();
        body[..2].copy_from_slice(&[0, 0]);
        let builder = hyper::Request::builder().header(hyper::header::ACCEPT, MEDIA);
        let req = match self.method {
            DohMethod::Post => builder
                .method(hyper::Method::POST)
                .uri(&self.url)
                .header(hyper::header::CONTENT_TYPE, MEDIA)
                .body(Full::new(Bytes::from(body))),
            DohMethod::Get => {
                let dns = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&body);
                builder
                    .method(hyper::Method::GET)
                    .uri(format!("{}?dns={dns}", self.url))
                    .body(Full::new(Bytes::new()))
            }
        }
        .map_err(other)?;
        sender.ready().await.map_err(other)?;
        let response = sender.send_request(req).await.map_err(other)?;
        if response.status() != hyper::StatusCode::OK {
            return Err(other(format!("HTTP status {}", response.status())));
        }
        let body = Limited::new(response.into_body(), 65535)
            .collect()
            .await
            .map_err(other)?;
        let mut reply = body.to_bytes().to_vec();
        if reply.len() < 12 {
            return Err(other("answer too short"));
        }
        reply[..2].copy_from_slice(&id.to_be_bytes());
        matching(&reply, id, query).ok_or_else(|| other("answer to another question"))
    }
}
