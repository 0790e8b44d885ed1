//! `loadtest handshakes`: new TLS connections per second to a DNS over TLS
//! server. Each of `connections` tasks loops until the time is up: connect,
//! a full TLS 1.3 handshake (no session resumption: every connection a new
//! key exchange and a new signature from the server), one query from the
//! query file, its answer read, then the socket closed (a plain FIN, no
//! close_notify). The server's work per connection is what is measured;
//! to keep this client's share small it checks neither the certificate
//! chain nor the server's handshake signature (a benchmark on loopback,
//! never a client to trust), which leaves it one X25519 key exchange per
//! handshake against the server's key exchange and ECDSA signature.
//!
//! One thread (a current-thread runtime): pin it with `taskset`. The
//! returned counts are over the whole run, with this process's own CPU
//! time, so a caller can tell whether the client or the server was the
//! bottleneck.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A connection not answered by then counts as failed (and the run ends
/// at most this long after its time).
const GIVE_UP: Duration = Duration::from_secs(2);

/// What to run.
pub struct Options {
    pub target: SocketAddr,
    pub seconds: f64,
    /// Connections in flight at once.
    pub connections: usize,
    /// The queries, one per connection in turn (DNS messages, no length prefix).
    pub queries: Vec<Vec<u8>>,
}

/// What it counted.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Handshakes completed.
    pub handshakes: u64,
    /// Of those, connections whose query was answered.
    pub answered: u64,
    /// Connections that failed (refused, handshake or read error, or
    /// unanswered after 2 s).
    pub failed: u64,
    pub elapsed: Duration,
    /// This process's CPU time (user + system) over the run.
    pub cpu: Duration,
}

#[derive(Default)]
struct Counts {
    handshakes: AtomicU64,
    answered: AtomicU64,
    failed: AtomicU64,
    next: AtomicU64,
}

/// Runs the loop for `seconds`; an error only when nothing could start.
pub fn run(o: &Options) -> Result<Outcome, String> {
    if o.queries.is_empty() {
        return Err("no queries".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let connector = TlsConnector::from(Arc::new(client_config()?));
    let counts = Arc::new(Counts::default());
    let queries = Arc::new(o.queries.clone());
    let cpu_before = own_cpu();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(o.seconds);
    rt.block_on(async {
        let tasks: Vec<_> = (0..o.connections.max(1))
            .map(|_| {
                let (connector, counts, queries) = (connector.clone(), counts.clone(), queries.clone());
                let target = o.target;
                tokio::spawn(async move {
                    while Instant::now() < deadline {
                        let i = counts.next.fetch_add(1, Ordering::Relaxed);
                        let query = &queries[i as usize % queries.len()];
                        let one = once(&connector, target, query, i as u16, &counts);
                        match tokio::time::timeout(GIVE_UP, one).await {
                            Ok(Ok(())) => counts.answered.fetch_add(1, Ordering::Relaxed),
                            _ => counts.failed.fetch_add(1, Ordering::Relaxed),
                        };
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    Ok(Outcome {
        handshakes: counts.handshakes.load(Ordering::Relaxed),
        answered: counts.answered.load(Ordering::Relaxed),
        failed: counts.failed.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        cpu: own_cpu().saturating_sub(cpu_before),
    })
}

/// One connection: connect, handshake, one query and its answer, close.
async fn once(
    connector: &TlsConnector,
    target: SocketAddr,
    query: &[u8],
    id: u16,
    counts: &Counts,
) -> std::io::Result<()> {
    let tcp = TcpStream::connect(target).await?;
    tcp.set_nodelay(true)?;
    let name = ServerName::IpAddress(target.ip().into());
    let mut tls = connector.connect(name, tcp).await?;
    counts.handshakes.fetch_add(1, Ordering::Relaxed);
    let mut msg = Vec::with_capacity(query.len() + 2);
    msg.extend_from_slice(&(query.len() as u16).to_be_bytes());
    msg.extend_from_slice(&id.to_be_bytes());
    msg.extend_from_slice(&query[2..]);
    tls.write_all(&msg).await?;
    tls.flush().await?;
    let mut len = [0u8; 2];
    tls.read_exact(&mut len).await?;
    let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
    tls.read_exact(&mut reply).await?;
    if reply.len() < 12 || reply[..2] != id.to_be_bytes() {
        return Err(std::io::Error::other("not the answer to the query"));
    }
    Ok(())
}

/// TLS 1.3 only, ring's key exchange (X25519 offered first), no resumption,
/// no verification (see the module's header).
fn client_config() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let schemes = provider.signature_verification_algorithms.supported_schemes();
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unverified(schemes)))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

/// Accepts any certificate and any handshake signature.
#[derive(Debug)]
struct Unverified(Vec<SignatureScheme>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

/// User + system CPU time of this process so far, from /proc/self/stat
/// (fields 14 and 15, in clock ticks of 1/100 s as on every Linux this runs on).
fn own_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("");
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}
