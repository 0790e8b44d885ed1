//! `prometheus { tls FILE }`: the web configuration file of Prometheus's
//! exporter toolkit, as CoreDNS takes it, read once at load (and again at a
//! reload). Of its `tls_server_config` this reads `cert_file`, `key_file`,
//! `client_auth_type`, `client_ca_file`, `min_version` and `max_version`;
//! relative paths resolve beside FILE, as the toolkit resolves them. A file
//! with no TLS settings (empty, or only comments) serves plain HTTP, as
//! with the toolkit. Every other key the toolkit knows (inline PEM, cipher
//! suites, curves, allowed SANs, `http_server_config`, `basic_auth_users`,
//! `rate_limit`) is refused naming it, and a key it does not know is an
//! error, as its strict reading makes it one.
//!
//! The certificate, key and client CA are read by [`MetricsTls::server_config`]
//! through [`crate::tls`]; the listener reads them again when they change.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::tls::{ClientCerts, TlsVersion};

/// What one web configuration file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// The file, as the Corefile names it (resolved beside the Corefile).
    pub file: PathBuf,
    /// `None`: the file sets no TLS and `/metrics` stays plain HTTP.
    pub tls: Option<MetricsTls>,
}

/// `tls_server_config`: what the metrics listener serves HTTPS with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `client_ca_file`; without it, certificates that are verified are
    /// checked against the system's roots (as Go does).
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientCerts,
    pub min_version: TlsVersion,
    pub max_version: TlsVersion,
}

impl MetricsTls {
    /// The rustls configuration (HTTP/1.1 offered by ALPN); an error names
    /// the file at fault.
    pub fn server_config(&self) -> Result<rustls::ServerConfig, String> {
        let versions = (self.min_version, self.max_version);
        let ca = self.client_ca.as_deref();
        let mut config = crate::tls::web_server_config(&self.cert, &self.key, ca, self.client_auth, versions)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// The files whose change means the configuration is read again.
    pub fn files(&self) -> Vec<PathBuf> {
        [Some(&self.cert), Some(&self.key), self.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

impl fmt::Display for MetricsTls {
    /// The effective settings, as `check` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cert_file {}, key_file {}, client_auth_type {}",
            self.cert.display(),
            self.key.display(),
            self.client_auth.go_name()
        )?;
        if let Some(ca) = &self.client_ca {
            write!(f, ", client_ca_file {}", ca.display())?;
        }
        write!(
            f,
            ", min_version {}, max_version {}",
            self.min_version, self.max_version
        )
    }
}

/// The file's top level, every key the toolkit knows.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Top {
    tls_server_config: Option<Section>,
    http_server_config: Option<serde_yaml_ng::Value>,
    basic_auth_users: Option<serde_yaml_ng::Value>,
    rate_limit: Option<serde_yaml_ng::Value>,
}

/// `tls_server_config`, every key the toolkit knows.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Section {
    cert_file: Option<String>,
    key_file: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    cert: Option<serde_yaml_ng::Value>,
    key: Option<serde_yaml_ng::Value>,
    client_ca: Option<serde_yaml_ng::Value>,
    client_allowed_sans: Option<serde_yaml_ng::Value>,
    cipher_suites: Option<serde_yaml_ng::Value>,
    prefer_server_cipher_suites: Option<serde_yaml_ng::Value>,
    curve_preferences: Option<serde_yaml_ng::Value>,
}

/// Reads the web configuration `file`; an error says what is wrong in it
/// (the caller names the file).
pub fn read(file: &Path) -> Result<WebConfig, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read it: {e}"))?;
    let bad = |e: serde_yaml_ng::Error| format!("not a web configuration: {e}");
    let shape = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text).map_err(bad)?;
    if !matches!(shape, serde_yaml_ng::Value::Null | serde_yaml_ng::Value::Mapping(_)) {
        return Err("not a web configuration: it holds no mapping of keys (tls_server_config: ...)".into());
    }
    let top: Option<Top> = serde_yaml_ng::from_str(&text).map_err(bad)?;
    let Some(top) = top else {
        return Ok(WebConfig {
            file: file.to_path_buf(),
            tls: None,
        });
    };
    refuse_top(&top)?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let tls = match top.tls_server_config {
        Some(section) => tls_section(&section, dir)?,
        None => None,
    };
    Ok(WebConfig {
        file: file.to_path_buf(),
        tls,
    })
}

/// The top-level keys clusterdns does not implement, each with why.
fn refuse_top(top: &Top) -> Result<(), String> {
    let refused = [
        (
            top.http_server_config.is_some(),
            "http_server_config is not supported: /metrics is served over HTTP/1.1 without extra headers",
        ),
        (
            top.basic_auth_users.is_some(),
            "basic_auth_users is not supported: clusterdns has no basic authentication; \
             ask for client certificates (client_auth_type: RequireAndVerifyClientCert)",
        ),
        (
            top.rate_limit.is_some(),
            "rate_limit is not supported: /metrics answers one request per connection, each bounded in time",
        ),
    ];
    match refused.iter().find(|(set, _)| *set) {
        Some((_, why)) => Err(why.to_string()),
        None => Ok(()),
    }
}

/// The keys of `tls_server_config` clusterdns does not implement.
fn refuse_section(s: &Section) -> Result<(), String> {
    let inline = "is not supported: give the PEM in a file";
    let defaults = "is not supported: rustls's safe defaults are used";
    let refused = [
        (s.cert.is_some(), format!("tls_server_config.cert {inline} (cert_file)")),
        (s.key.is_some(), format!("tls_server_config.key {inline} (key_file)")),
        (
            s.client_ca.is_some(),
            format!("tls_server_config.client_ca {inline} (client_ca_file)"),
        ),
        (
            s.client_allowed_sans.is_some(),
            "tls_server_config.client_allowed_sans is not supported: client certificates are checked against \
             client_ca_file only; use a CA that signs only the clients allowed"
                .to_string(),
        ),
        (
            s.cipher_suites.is_some(),
            format!("tls_server_config.cipher_suites {defaults}"),
        ),
        (
            s.prefer_server_cipher_suites.is_some(),
            format!("tls_server_config.prefer_server_cipher_suites {defaults}"),
        ),
        (
            s.curve_preferences.is_some(),
            format!("tls_server_config.curve_preferences {defaults}"),
        ),
    ];
    match refused.into_iter().find(|(set, _)| *set) {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

/// `tls_server_config` read into what the listener serves; `None` when it
/// sets nothing at all (plain HTTP, as the toolkit).
fn tls_section(s: &Section, dir: &Path) -> Result<Option<MetricsTls>, String> {
    refuse_section(s)?;
    let given = |v: &Option<String>| v.as_deref().filter(|t| !t.is_empty()).map(|t| dir.join(t));
    let (cert, key, client_ca) = (given(&s.cert_file), given(&s.key_file), given(&s.client_ca_file));
    let auth = s.client_auth_type.as_deref().filter(|t| !t.is_empty());
    let versions = s.min_version.is_some() || s.max_version.is_some();
    if cert.is_none() && key.is_none() && client_ca.is_none() && auth.is_none() {
        if versions {
            return Err("tls_server_config sets min_version or max_version but no cert_file and key_file".into());
        }
        return Ok(None);
    }
    let cert = cert.ok_or("tls_server_config: missing cert_file")?;
    let key = key.ok_or("tls_server_config: missing key_file")?;
    let client_auth = match auth {
        Some(name) => ClientCerts::from_go_name(name).ok_or_else(|| {
            format!(
                "tls_server_config.client_auth_type: '{name}' is none of NoClientCert, RequestClientCert, \
                 RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
            )
        })?,
        None => ClientCerts::NoClientCert,
    };
    if client_ca.is_some() && client_auth == ClientCerts::NoClientCert {
        return Err(
            "tls_server_config: client_ca_file is given without a client_auth_type that asks for a \
                    client certificate"
                .into(),
        );
    }
    let min_version = version(s.min_version.as_deref(), "min_version", TlsVersion::Tls12)?;
    let max_version = version(s.max_version.as_deref(), "max_version", TlsVersion::Tls13)?;
    if min_version > max_version {
        return Err(format!(
            "tls_server_config: min_version {min_version} is above max_version {max_version}"
        ));
    }
    Ok(Some(MetricsTls {
        cert,
        key,
        client_ca,
        client_auth,
        min_version,
        max_version,
    }))
}

/// `min_version` or `max_version`: TLS12 or TLS13; rustls has neither
/// TLS 1.0 nor 1.1.
fn version(text: Option<&str>, key: &str, default: TlsVersion) -> Result<TlsVersion, String> {
    match text.filter(|t| !t.is_empty()) {
        None => Ok(default),
        Some("TLS12") => Ok(TlsVersion::Tls12),
        Some("TLS13") => Ok(TlsVersion::Tls13),
        Some(old @ ("TLS10" | "TLS11")) => Err(format!(
            "tls_server_config.{key}: {old} is not supported: rustls speaks TLS 1.2 and 1.3 only (write TLS12 or TLS13)"
        )),
        Some(other) => Err(format!(
            "tls_server_config.{key}: '{other}' is none of TLS10, TLS11, TLS12, TLS13"
        )),
    }
}

#[cfg(test)]
mod tests;
