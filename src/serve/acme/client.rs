//! The HTTPS client the ACME account speaks through: hyper's client over
//! rustls (ring), trusting the system's roots and `ca_root`'s
//! certificates, looking the ACME server's name up with the system's
//! resolver or, with `resolver ADDRESS`, by asking that DNS server (A and
//! AAAA over UDP).

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hickory_proto::op::{Message, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use hyper_util::client::legacy::connect::dns::Name as Host;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use instant_acme::{BodyWrapper, HttpClient};

/// The client for `ca_root` (extra trusted roots) and `resolver`.
pub fn http(ca_root: Option<&Path>, resolver: Option<SocketAddr>) -> Result<Box<dyn HttpClient>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = ca_root {
        let (added, _) = roots.add_parsable_certificates(crate::tls::certs(path)?);
        if added == 0 {
            return Err(format!("{}: no usable CA certificate", path.display()));
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = || {
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_or_http()
            .enable_http1()
    };
    let client = Client::builder(TokioExecutor::new());
    Ok(match resolver {
        Some(server) => {
            let mut http = HttpConnector::new_with_resolver(Resolver(server));
            http.enforce_http(false);
            Box::new(client.build::<_, BodyWrapper<Bytes>>(https().wrap_connector(http)))
        }
        None => {
            let mut http = HttpConnector::new();
            http.enforce_http(false);
            Box::new(client.build::<_, BodyWrapper<Bytes>>(https().wrap_connector(http)))
        }
    })
}

/// `resolver ADDRESS`: names looked up at that DNS server.
#[derive(Clone, Copy)]
struct Resolver(SocketAddr);

type Lookup = Pin<Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, std::io::Error>> + Send>>;

impl tower_service::Service<Host> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Lookup;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, host: Host) -> Self::Future {
        let server = self.0;
        Box::pin(async move {
            let name = Name::from_utf8(host.as_str()).map_err(std::io::Error::other)?;
            let mut found = Vec::new();
            for qtype in [RecordType::A, RecordType::AAAA] {
                found.extend(ask(server, &name, qtype).await.unwrap_or_default());
            }
            if found.is_empty() {
                let what = format!("{} has no address at resolver {server}", host.as_str());
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, what));
            }
            Ok(found.into_iter())
        })
    }
}

/// The addresses `server` gives for `name` `qtype` (port 0: hyper sets it).
async fn ask(server: SocketAddr, name: &Name, qtype: RecordType) -> std::io::Result<Vec<SocketAddr>> {
    let mut query = Message::query();
    query.metadata.id = fastrand::u16(..);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name.clone(), qtype));
    let bytes = query.to_vec().map_err(std::io::Error::other)?;
    let local: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(local).await?;
    socket.send_to(&bytes, server).await?;
    let mut buf = vec![0; 4096];
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), socket.recv_from(&mut buf))
        .await
        .map_err(std::io::Error::other)??;
    let reply = Message::from_vec(&buf[..n]).map_err(std::io::Error::other)?;
    Ok(reply
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(SocketAddr::new(a.0.into(), 0)),
            RData::AAAA(a) => Some(SocketAddr::new(a.0.into(), 0)),
            _ => None,
        })
        .collect())
}
