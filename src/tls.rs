//! The one TLS client configuration of the server, for every connection it
//! opens itself: DNS over TLS and HTTPS upstreams (`forward`'s `tls [CERT KEY
//! [CA]]`) and `tls://` dnstap collectors. Server certificates are checked
//! against the CA given or else the system's roots, unless the operator said
//! `skipverify` (dnstap only); the handshake's signatures are verified either
//! way. And the server configuration of `dnstap listen tls://`: its
//! certificate, and collectors' certificates checked against a CA when one
//! is given. rustls with the ring provider, the one the API client uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The TLS client configuration `tls [CERT KEY [CA]]` (or `tls CA`) asks for;
/// with `skip_verify` any server certificate is taken (no roots are read).
pub fn client_config(files: &[PathBuf], skip_verify: bool) -> Result<rustls::ClientConfig, String> {
    let (pair, ca) = match files {
        [] => (None, None),
        [ca] => (None, Some(ca)),
        [cert, key] => (Some((cert, key)), None),
        [cert, key, ca] => (Some((cert, key)), Some(ca)),
        _ => return Err("takes at most 3 arguments (CERT KEY CA)".into()),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
    } else {
        builder.with_root_certificates(roots(ca.map(PathBuf::as_path))?)
    };
    let mut config = match pair {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = certs(cert)?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("{}: {e}", cert.display()))?
        }
    };
    config.alpn_protocols = Vec::new();
    Ok(config)
}

/// The TLS server configuration of `tls CERT KEY [CA]`: without CA no
/// client certificate is asked for; with it one is required and checked
/// against CA, or with `optional` checked when the client shows one.
pub fn server_config(
    cert: &Path,
    key: &Path,
    ca: Option<&Path>,
    optional: bool,
) -> Result<rustls::ServerConfig, String> {
    let chain = certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots(Some(ca))?), provider);
            let verifier = if optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|e| format!("{}: {e}", ca.display()))?)
        }
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}: {e}", cert.display()))
}

/// The roots server certificates are checked against: `ca`, else the system's.
fn roots(ca: Option<&Path>) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let found = match ca {
        Some(path) => certs(path)?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    let (added, _) = roots.add_parsable_certificates(found);
    if added == 0 {
        let from = ca.map_or("the system".to_string(), |p| p.display().to_string());
        return Err(format!("no usable CA certificate found in {from}"));
    }
    Ok(roots)
}

/// The PEM certificates of `path` (at least one).
pub fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let all: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect();
    let all = all.map_err(|e| format!("{}: {e}", path.display()))?;
    if all.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(all)
}

/// `skipverify`: any certificate is taken.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
