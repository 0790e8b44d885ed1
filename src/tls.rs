//! The one TLS client configuration of the server, for every connection it
//! opens itself: DNS over TLS and HTTPS upstreams (`forward`'s `tls [CERT KEY
//! [CA]]`) and `tls://` dnstap collectors. Server certificates are checked
//! against the CA given or else the system's roots, unless the operator said
//! `skipverify` (dnstap only); the handshake's signatures are verified either
//! way. And the server configuration of `dnstap listen tls://`: its
//! certificate, and collectors' certificates checked against a CA when one
//! is given; and of `prometheus { tls FILE }`'s metrics listener, with Go's
//! five client certificate modes ([`ClientCerts`]) and TLS versions. rustls
//! with the ring provider, the one the API client uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
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
    let clients = match (ca, optional) {
        (None, _) => ClientCerts::NoClientCert,
        (Some(_), true) => ClientCerts::VerifyClientCertIfGiven,
        (Some(_), false) => ClientCerts::RequireAndVerifyClientCert,
    };
    web_server_config(cert, key, ca, clients, (TlsVersion::Tls12, TlsVersion::Tls13))
}

/// Who must show a client certificate and whether it is checked: Go's five
/// `tls.ClientAuthType`s, which the exporter toolkit's `client_auth_type`
/// names. A certificate that is not checked still has to sign the
/// handshake (the client holds its key), as in Go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCerts {
    /// None is asked for.
    NoClientCert,
    /// Asked for, not required, not checked.
    RequestClientCert,
    /// Required, not checked against any CA.
    RequireAnyClientCert,
    /// Checked against the CA when the client shows one.
    VerifyClientCertIfGiven,
    /// Required and checked against the CA (mutual TLS).
    RequireAndVerifyClientCert,
}

impl ClientCerts {
    const ALL: [ClientCerts; 5] = [
        ClientCerts::NoClientCert,
        ClientCerts::RequestClientCert,
        ClientCerts::RequireAnyClientCert,
        ClientCerts::VerifyClientCertIfGiven,
        ClientCerts::RequireAndVerifyClientCert,
    ];

    /// Go's name of the mode.
    pub fn go_name(self) -> &'static str {
        match self {
            ClientCerts::NoClientCert => "NoClientCert",
            ClientCerts::RequestClientCert => "RequestClientCert",
            ClientCerts::RequireAnyClientCert => "RequireAnyClientCert",
            ClientCerts::VerifyClientCertIfGiven => "VerifyClientCertIfGiven",
            ClientCerts::RequireAndVerifyClientCert => "RequireAndVerifyClientCert",
        }
    }

    /// The mode Go's name names (`RequireClientCert`: the toolkit's older
    /// spelling of `RequireAnyClientCert`).
    pub fn from_go_name(name: &str) -> Option<ClientCerts> {
        match name {
            "RequireClientCert" => Some(ClientCerts::RequireAnyClientCert),
            _ => Self::ALL.into_iter().find(|m| m.go_name() == name),
        }
    }
}

/// A TLS version a server speaks: rustls has 1.2 and 1.3 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl std::fmt::Display for TlsVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsVersion::Tls12 => "TLS12",
            TlsVersion::Tls13 => "TLS13",
        })
    }
}

/// A TLS server configuration: `cert` and `key`, client certificates asked
/// for as `clients` says (checked against `ca`, else the system's roots),
/// versions from `min` to `max`.
pub fn web_server_config(
    cert: &Path,
    key: &Path,
    ca: Option<&Path>,
    clients: ClientCerts,
    (min, max): (TlsVersion, TlsVersion),
) -> Result<rustls::ServerConfig, String> {
    let chain = certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (min..=max).contains(v))
    .map(|(_, p)| p)
    .collect();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| e.to_string())?;
    let builder = match client_verifier(clients, ca, provider)? {
        None => builder.with_no_client_auth(),
        Some(verifier) => builder.with_client_cert_verifier(verifier),
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}: {e}", cert.display()))
}

/// The verifier of client certificates `clients` asks for.
fn client_verifier(
    clients: ClientCerts,
    ca: Option<&Path>,
    provider: Arc<CryptoProvider>,
) -> Result<Option<Arc<dyn ClientCertVerifier>>, String> {
    let checked = |optional: bool| -> Result<Option<Arc<dyn ClientCertVerifier>>, String> {
        let roots = roots(ca).map_err(|e| match ca {
            Some(_) => e,
            None => format!("{e} to check client certificates against (give a client CA file)"),
        })?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
        let verifier = if optional {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        let from = ca.map_or("the system's roots".to_string(), |p| p.display().to_string());
        Ok(Some(verifier.build().map_err(|e| format!("{from}: {e}"))?))
    };
    match clients {
        ClientCerts::NoClientCert => Ok(None),
        ClientCerts::RequestClientCert => Ok(Some(Arc::new(AnyClientCertificate(provider.clone(), false)))),
        ClientCerts::RequireAnyClientCert => Ok(Some(Arc::new(AnyClientCertificate(provider.clone(), true)))),
        ClientCerts::VerifyClientCertIfGiven => checked(true),
        ClientCerts::RequireAndVerifyClientCert => checked(false),
    }
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

/// The handshake-signature checks of a verifier whose `.0` is the crypto
/// provider: by the provider's algorithms (what each verifier here keeps,
/// whatever it makes of the certificate itself).
macro_rules! signatures_by_provider {
    () => {
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
    };
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

    signatures_by_provider!();
}

/// `RequestClientCert` and `RequireAnyClientCert` (`.1`: required): any
/// client certificate is taken, its chain not checked; the handshake's
/// signature by its key is verified.
#[derive(Debug)]
struct AnyClientCertificate(Arc<CryptoProvider>, bool);

impl ClientCertVerifier for AnyClientCertificate {
    fn client_auth_mandatory(&self) -> bool {
        self.1
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    signatures_by_provider!();
}
