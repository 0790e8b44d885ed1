//! A listener's server certificate, read again when its files change: as
//! cert-manager rewrites a Secret volume (the `..data` symlink swapped to
//! a new directory) and as a plain rename over the old file. Every
//! [`POLL`] the files' identity (device, inode, size, modification time,
//! symlinks followed) is compared with the last read's; on a change the
//! certificate, key and CA are read again and new handshakes use them.
//! A read that fails (a broken or half-written file, a key that does not
//! match) keeps the certificate in use, is logged and counted
//! (`clusterdns_tls_certificate_reloads_total{result="failed"}`), and is
//! tried again at the next change.
//!
//! The metrics listener (`prometheus { tls FILE }`) reads its certificate
//! through the same watch ([`Certs::with_reader`]).
//!
//! With `tls { acme }` the file is the one `serve::acme` writes (chain and
//! key together, replaced whole): until it first exists, or while it does
//! not read, handshakes are refused and the listener waits for it here.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::config::transport::{ClientAuth, TlsFiles};
use crate::metrics::Metrics;

/// How often the files are looked at.
pub const POLL: Duration = Duration::from_secs(2);

/// What identifies one version of a file: device, inode, size, mtime.
type Stamp = Option<(u64, u64, u64, i64, i64)>;

/// How a configuration is read from its files.
type Read = Box<dyn Fn() -> Result<rustls::ServerConfig, String> + Send + Sync>;

/// The server configuration in use, the files it was read from and how.
pub struct Certs {
    current: ArcSwap<rustls::ServerConfig>,
    /// The certificate, key and CA files: a change to one means a new read.
    watched: Vec<PathBuf>,
    read: Read,
}

impl Certs {
    /// Reads `files` (an error names the file at fault); `alpn`: the
    /// protocols offered (`dot`; `h2` and `http/1.1`).
    pub fn load(files: &TlsFiles, alpn: &[&[u8]]) -> Result<Arc<Certs>, String> {
        let alpn: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
        let config = match read(files, &alpn) {
            Ok(config) => config,
            Err(e) if files.acme.is_some() => {
                if files.cert.exists() {
                    tracing::error!(target: "tls", "acme: {e}; waiting for a new certificate");
                } else {
                    tracing::info!(target: "tls", "acme: no certificate yet ({}); handshakes are refused until one is obtained", files.cert.display());
                }
                refusing(&alpn)?
            }
            Err(e) => return Err(e),
        };
        let watched = [Some(&files.cert), Some(&files.key), files.ca.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        let files = files.clone();
        Ok(Arc::new(Certs {
            current: ArcSwap::from_pointee(config),
            watched,
            read: Box::new(move || read(&files, &alpn)),
        }))
    }

    /// A configuration `read` makes from the files `watched` (the first
    /// named in logs), read now and again when one of them changes: the
    /// metrics listener's, from `prometheus { tls FILE }`.
    pub fn with_reader(
        watched: Vec<PathBuf>,
        read: impl Fn() -> Result<rustls::ServerConfig, String> + Send + Sync + 'static,
    ) -> Result<Arc<Certs>, String> {
        Ok(Arc::new(Certs {
            current: ArcSwap::from_pointee(read()?),
            watched,
            read: Box::new(read),
        }))
    }

    /// The configuration a new handshake uses.
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        self.current.load_full()
    }

    /// Looks at the files every [`POLL`] until `stop` is set, reading them
    /// again when one changed.
    pub async fn watch(self: Arc<Self>, stop: Arc<AtomicBool>, metrics: Arc<Metrics>) {
        let mut seen = self.stamps();
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(POLL).await;
            let now = self.stamps();
            if now == seen {
                continue;
            }
            seen = now;
            match (self.read)() {
                Ok(config) => {
                    self.current.store(Arc::new(config));
                    metrics.transports.reloaded(true);
                    let first = self
                        .watched
                        .first()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default();
                    tracing::info!(target: "tls", "{first}: certificate read again");
                }
                Err(e) => {
                    metrics.transports.reloaded(false);
                    tracing::error!(target: "tls", "certificate not replaced, the old one stays in use: {e}");
                }
            }
        }
    }

    fn stamps(&self) -> Vec<Stamp> {
        self.watched.iter().map(stamp).collect()
    }
}

fn stamp(path: &PathBuf) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

/// The rustls configuration of `files`, offering `alpn`.
fn read(files: &TlsFiles, alpn: &[Vec<u8>]) -> Result<rustls::ServerConfig, String> {
    let ca = files.ca.as_deref().filter(|_| files.client_auth != ClientAuth::NoCert);
    let optional = files.client_auth == ClientAuth::VerifyIfGiven;
    let mut config = crate::tls::server_config(&files.cert, &files.key, ca, optional)?;
    config.alpn_protocols = alpn.to_vec();
    if let Some(path) = &files.keylog {
        config.key_log = Arc::new(KeyLogFile::open(path)?);
    }
    Ok(config)
}

/// A configuration that refuses every handshake: no certificate to show yet.
fn refusing(alpn: &[Vec<u8>]) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(NoCertificateYet));
    config.alpn_protocols = alpn.to_vec();
    Ok(config)
}

/// Resolves no certificate: the handshake fails with an alert.
#[derive(Debug)]
struct NoCertificateYet;

impl rustls::server::ResolvesServerCert for NoCertificateYet {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }
}

/// `tls { keylog FILE }`: each TLS secret appended to FILE as a line of the
/// NSS key log format (`LABEL CLIENT_RANDOM SECRET`, hex), which Wireshark
/// reads to decrypt a capture. It gives away every session: debugging only.
#[derive(Debug)]
struct KeyLogFile(std::sync::Mutex<std::fs::File>);

impl KeyLogFile {
    fn open(path: &std::path::Path) -> Result<KeyLogFile, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("keylog {}: {e}", path.display()))?;
        tracing::warn!(target: "tls", "keylog: TLS secrets are written to {} (debugging only: anyone who reads it can decrypt the sessions)", path.display());
        Ok(KeyLogFile(std::sync::Mutex::new(file)))
    }
}

impl rustls::KeyLog for KeyLogFile {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        use std::fmt::Write as _;
        use std::io::Write as _;
        let mut line = format!("{label} ");
        client_random.iter().for_each(|b| {
            let _ = write!(line, "{b:02x}");
        });
        line.push(' ');
        secret.iter().for_each(|b| {
            let _ = write!(line, "{b:02x}");
        });
        line.push('\n');
        if let Ok(mut f) = self.0.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }

    fn will_log(&self, _: &str) -> bool {
        true
    }
}
