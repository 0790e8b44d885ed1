//! `tls { acme DOMAIN... email EMAIL ca URL storage DIRECTORY ca_root FILE
//! resolver ADDRESS }`: a listener's certificate obtained and renewed from
//! an ACME server with the DNS-01 challenge (CoreDNS's `tls` plugin, its
//! `acme` form). Read here into [`Acme`] and printed for `clusterdns
//! check`; `serve::acme` runs it, `query::plugins::acme` answers the
//! challenge's TXT queries.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use hickory_proto::rr::Name;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// Let's Encrypt's production directory, CoreDNS's default `ca`.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// The `acme` form of `tls`, with its defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Acme {
    /// The names on the certificate, lowercase ASCII without the final dot
    /// (`*.` allowed as the first label), duplicates dropped.
    pub domains: Vec<String>,
    /// `email`: the account's contact.
    pub email: Option<String>,
    /// `ca`: the ACME directory URL.
    pub ca: String,
    /// `storage`: where the account, keys and certificates are kept.
    pub storage: PathBuf,
    /// `ca_root`: PEM certificates trusted (beside the system's) for the
    /// ACME server's HTTPS.
    pub ca_root: Option<PathBuf>,
    /// `resolver`: the DNS server (`HOST:PORT`) the ACME server's name is
    /// looked up at.
    pub resolver: Option<SocketAddr>,
}

impl Acme {
    /// The directory of `storage` this CA's account and certificates are
    /// kept in (`ca`'s host and path, `/` and `:` as `-`).
    pub fn ca_dir(&self) -> PathBuf {
        let url = self.ca.split_once("://").map_or(self.ca.as_str(), |(_, rest)| rest);
        let safe: String = url
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' })
            .collect();
        self.storage.join(safe.trim_matches('-'))
    }

    /// The file holding the certificate chain and its private key (the
    /// listener reads it as its `tls CERT KEY`, again when it changes).
    pub fn cert_file(&self) -> PathBuf {
        let first = self.domains.first().map_or("none", String::as_str);
        self.ca_dir().join(format!("{}.pem", first.replace('*', "_")))
    }
}

/// Reads `tls { acme ... }` (a `tls` with no arguments): `root` is the
/// block's `root` or else the Corefile's directory, which relative paths
/// and the default storage (`.coredns/acme`) resolve against.
pub fn parse(d: &Directive, root: &Path, errors: &mut Vec<ConfigError>) -> Option<Acme> {
    let mut read = Reading {
        acme: Acme {
            domains: Vec::new(),
            email: None,
            ca: LETS_ENCRYPT.into(),
            storage: root.join(".coredns").join("acme"),
            ca_root: None,
            resolver: None,
        },
        seen: Vec::new(),
        root: root.to_path_buf(),
    };
    read.acme.storage = absolute(read.acme.storage);
    let before = errors.len();
    options::read("tls", &d.options, OPTIONS, &mut read, errors);
    let acme = read.acme;
    if acme.domains.is_empty() && errors.len() == before {
        errors.push(ConfigError::new(
            &d.name.pos,
            "tls: ACME requires at least one domain (tls { acme DOMAIN... }), or write tls CERT KEY [CA]",
        ));
    }
    if let Some(root) = &acme.ca_root {
        if let Err(e) = crate::tls::certs(root) {
            errors.push(ConfigError::new(&d.name.pos, format!("tls: reading ACME CA root: {e}")));
        }
    }
    (errors.len() == before).then_some(acme)
}

/// The options being read, which were seen, and where paths resolve.
struct Reading {
    acme: Acme,
    seen: Vec<&'static str>,
    root: PathBuf,
}

impl Reading {
    /// False (and reported) when `name` was written before in this block.
    fn first(&mut self, a: &Args<'_>, name: &'static str, errors: &mut Vec<ConfigError>) -> bool {
        if self.seen.contains(&name) {
            errors.push(ConfigError::new(
                a.pos(),
                format!("tls: ACME option '{name}' can only be specified once"),
            ));
            return false;
        }
        self.seen.push(name);
        true
    }
}

const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("acme", (1, MANY), |a, r, errors| {
        if r.first(a, "acme", errors) {
            for word in a.args {
                match domain(&word.text) {
                    Ok(d) if !r.acme.domains.contains(&d) => r.acme.domains.push(d),
                    Ok(_) => {}
                    Err(e) => errors.push(ConfigError::new(&word.pos, format!("tls: {e}"))),
                }
            }
        }
    }),
    Opt::new("email", (1, 1), |a, r, errors| {
        if r.first(a, "email", errors) {
            r.acme.email = Some(a.args[0].text.clone());
        }
    }),
    Opt::new("ca", (1, 1), |a, r, errors| {
        if r.first(a, "ca", errors) {
            let url = &a.args[0].text;
            let host = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"))
                .map(|rest| rest.split('/').next().unwrap_or_default());
            match host {
                Some(h) if !h.is_empty() => r.acme.ca = url.clone(),
                _ => errors.push(ConfigError::new(
                    &a.args[0].pos,
                    format!("tls: invalid ACME CA URL '{url}' (an https:// or http:// URL with a host)"),
                )),
            }
        }
    }),
    Opt::new("storage", (1, 1), |a, r, errors| {
        if r.first(a, "storage", errors) {
            r.acme.storage = absolute(r.root.join(&a.args[0].text));
        }
    }),
    Opt::new("ca_root", (1, 1), |a, r, errors| {
        if r.first(a, "ca_root", errors) {
            r.acme.ca_root = Some(absolute(r.root.join(&a.args[0].text)));
        }
    }),
    Opt::new("resolver", (1, 1), |a, r, errors| {
        if r.first(a, "resolver", errors) {
            match a.args[0].text.parse::<SocketAddr>() {
                Ok(addr) if addr.port() != 0 => r.acme.resolver = Some(addr),
                _ => errors.push(ConfigError::new(
                    &a.args[0].pos,
                    format!(
                        "tls: invalid ACME resolver '{}' (an IP address and port, HOST:PORT)",
                        a.args[0].text
                    ),
                )),
            }
        }
    }),
];

/// `path` from the working directory when relative, as CoreDNS resolves
/// ACME paths (as written when that cannot be done).
fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

/// A name for the certificate: lowercase ASCII (IDNA for others), no
/// final dot, `*.` only as the whole first label, never an IP address.
pub fn domain(written: &str) -> Result<String, String> {
    let lower = written.trim_end_matches('.').to_lowercase();
    let invalid = || format!("invalid ACME domain '{written}'");
    let (wildcard, rest) = match lower.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, lower.as_str()),
    };
    if rest.is_empty() || rest.contains('*') || rest.parse::<std::net::IpAddr>().is_ok() {
        return Err(invalid());
    }
    let name = Name::from_utf8(rest).map_err(|_| invalid())?;
    let ascii = name.to_ascii();
    let ascii = ascii.trim_end_matches('.');
    let hostname = ascii.split('.').all(|l| {
        !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if !hostname {
        return Err(invalid());
    }
    Ok(if wildcard {
        format!("*.{ascii}")
    } else {
        ascii.to_string()
    })
}

/// `check`'s options of the `acme` form, every default written out.
pub fn print(acme: &Acme) -> Vec<String> {
    let mut lines = vec![format!("acme {}", acme.domains.join(" "))];
    lines.extend(acme.email.as_ref().map(|e| format!("email {e}")));
    lines.push(format!("ca {}", acme.ca));
    lines.push(format!("storage {}", acme.storage.display()));
    lines.extend(acme.ca_root.as_ref().map(|f| format!("ca_root {}", f.display())));
    lines.extend(acme.resolver.map(|r| format!("resolver {r}")));
    lines
}

#[cfg(test)]
mod tests;
