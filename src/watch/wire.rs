//! The API server's wire as the watch path speaks it: one request at a
//! time with the service account's token read from its file for each one,
//! every HTTP status surfaced to the follower (with `Retry-After`), and a
//! watch stream framed and decoded here, one event at a time.
//!
//! kube's client is the transport (TLS, kubeconfig, proxies), but not the
//! policy: its retry layer is off (it retried 429/503/504 up to 15 times
//! inside one call, unlogged, with waits up to 1000 s and any
//! `Retry-After`), and a token file is not left to its 60-second cache, so
//! a rotated token is used on the next request and a `401` is followed by
//! a request with the file read again.
//!
//! Decoding is lenient where a real server can surprise: an object the
//! lean types cannot read is reported ([`Event::Malformed`]) and skipped
//! with its resourceVersion, not a failure that would resume the watch
//! before it again and again; a bookmark needs only its resourceVersion;
//! events may arrive split across chunks or several in one.

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt;
use kube::client::Body;
use kube::Client;

pub use decode::{decode, lenient_items, Event, Item};
use failure::StatusBody;
pub use failure::{Failure, RETRY_AFTER_MAX};
pub use frames::Frames;

mod decode;
mod failure;
mod frames;

/// The longest one list page (request and body) may take; the API
/// server's own request timeout is 60 s.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The client and how it authenticates.
pub struct Api {
    pub client: Client,
    /// A bearer token file, read for every request.
    pub token_file: Option<PathBuf>,
    /// `apiserver_qps`, `apiserver_burst`, `apiserver_max_inflight`.
    pub throttle: super::throttle::Throttle,
}

impl Api {
    /// Sends one request; an error status becomes a [`Failure::Status`].
    pub async fn send(&self, mut req: http::Request<Vec<u8>>) -> Result<http::Response<Body>, Failure> {
        let _in_flight = self.throttle.admit().await; // until the response (headers) is in
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path).map_err(|e| Failure::Token(path.clone(), e))?;
            let value = http::HeaderValue::from_str(&format!("Bearer {}", text.trim()))
                .map_err(|_| Failure::Read(format!("the token in {} is not a valid header value", path.display())))?;
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
        }
        let res = self.client.send(req.map(Body::from)).await?;
        let status = res.status();
        if status.is_success() {
            return Ok(res);
        }
        let retry_after = res
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(RETRY_AFTER_MAX));
        let body = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let reason = status.canonical_reason().unwrap_or_default().to_string();
        Err(StatusBody::of_response(&body, reason).failure(status.as_u16(), retry_after))
    }

    /// Sends a list request and reads its whole body into `buf` (cleared
    /// first), bounded in time. One buffer serves every page of a list:
    /// a page's text is allocated once, not per page (per-page buffers of
    /// a few hundred kB left the allocator holding freed memory between
    /// long-lived records: RSS, not heap).
    pub async fn fetch_into(&self, req: http::Request<Vec<u8>>, buf: &mut Vec<u8>) -> Result<(), Failure> {
        buf.clear();
        let read = async {
            let mut body = self.send(req).await?.into_body();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Failure::Read(e.to_string()))?;
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
            }
            Ok(())
        };
        tokio::time::timeout(PAGE_TIMEOUT, read)
            .await
            .unwrap_or(Err(Failure::Timeout(PAGE_TIMEOUT)))
    }
}
